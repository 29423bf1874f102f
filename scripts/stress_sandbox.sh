#!/usr/bin/env bash
# The sandbox's hostile-program suite three times in a row under a parallel CPU load (one busy loop per
# core): a verdict that depends on how busy the machine is fails here. Covers the evaluator as root and,
# re-run under setpriv, as an unprivileged user (tests/sandbox/test_sandbox_unprivileged.py). CI runs
# it after the test suite (.ci/run). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${LMMS_TASKS_VENV:-.venv}/bin/python"
cores="$(nproc 2>/dev/null || echo 2)"
load=()
cleanup() { for pid in "${load[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq "$cores"); do
  sh -c 'while :; do :; done' &
  load+=("$!")
done
for round in 1 2 3; do
  echo "stress_sandbox: round $round of 3 under $cores busy loop(s)"
  "$PY" -m pytest -q -p no:randomly tests/sandbox/test_sandbox_hostile.py tests/sandbox/test_sandbox_unprivileged.py "$@"
done
