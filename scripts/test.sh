#!/usr/bin/env bash
# Install everything (scripts/setup_env.sh; scripts/setup_browser.sh: chromium and a Hangul font for the
# report's browser test, where apt-get and root are available) and run the whole test suite, offline and CPU-only.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k haerae -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup_env.sh
./scripts/setup_browser.sh
exec "${LMMS_TASKS_VENV:-.venv}/bin/python" -m pytest "$@"
