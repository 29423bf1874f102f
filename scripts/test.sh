#!/usr/bin/env bash
# Install everything (scripts/setup_env.sh; scripts/setup_browser.sh: chromium and a Hangul font for the
# report's browser test, where apt-get and root are available) and run the whole test suite, offline and CPU-only.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k haerae -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup_env.sh
./scripts/setup_browser.sh
# Where setup_browser.sh can install chromium (apt-get, root: CI), the report's browser test must run: a
# missing browser fails it instead of skipping it.
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export LMMS_TASKS_REQUIRE_BROWSER=1
fi
# One worker per core and one more (three on the 2-core CI machine): a worker waiting on its test's subprocesses
# (lmms-eval runs, servers) leaves its core to the others. Each takes whole test modules (see tests/conftest.py).
# LMMS_TASKS_TEST_WORKERS=0 runs everything in one process.
workers="${LMMS_TASKS_TEST_WORKERS:-$(($(nproc 2>/dev/null || echo 2) + 1))}"
if [ "$workers" = "0" ]; then
  exec "${LMMS_TASKS_VENV:-.venv}/bin/python" -m pytest "$@"
fi
exec "${LMMS_TASKS_VENV:-.venv}/bin/python" -m pytest -n "$workers" --dist loadgroup "$@"
