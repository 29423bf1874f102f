#!/usr/bin/env bash
# Install what the report's browser test (tests/report/test_report_browser.py) needs: Debian's `chromium`
# (a real headless browser that opens report.html) and `fonts-nanum` (a font with Hangul, for the
# Korean category names in the HTML tables). Uses apt-get, so it only installs where apt-get exists and
# this runs as root (CI does); elsewhere it says so and installs nothing, and that test is skipped with
# the reason. Re-running is cheap: nothing is done when both packages are installed.
# On the development machine: apt-get update about 4 s, the install about 40 s (26 packages, 123 MB).
set -euo pipefail

PACKAGES=(chromium fonts-nanum)

installed() {
  command -v dpkg-query >/dev/null 2>&1 || return 1
  for package in "${PACKAGES[@]}"; do
    [ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" = "install ok installed" ] || return 1
  done
}

if installed; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup_browser: no apt-get here: install ${PACKAGES[*]} (or set LMMS_TASKS_CHROMIUM) to run the browser test of the report; it is skipped until then" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup_browser: not root: run 'sudo $0' (or install ${PACKAGES[*]}) to run the browser test of the report; it is skipped until then" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "setup_browser: installing ${PACKAGES[*]} with apt-get"
apt-get update -q -o DPkg::Lock::Timeout=600 >/dev/null
apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "${PACKAGES[@]}" >/dev/null
installed
