#!/usr/bin/env bash
# Install everything and run every task end to end through the real lmms-eval CLI, on generated fixtures,
# against a local stand-in model/judge server; prints the results table.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup_env.sh
exec "${LMMS_TASKS_VENV:-.venv}/bin/python" -m lmms_tasks demo "$@"
