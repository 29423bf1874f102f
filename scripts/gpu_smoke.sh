#!/usr/bin/env bash
# GPU smoke run of the vLLM paths: every task with --limit through `lmms-eval --model vllm` on a tiny
# Qwen2.5-VL built locally (python -m lmms_tasks make-tiny-vlm), the judged tasks judged by `vllm serve` on
# the same model, then a table of what ran (also written to <work dir>/gpu_smoke.md).
# Needs a CUDA GPU and vLLM: pip install -e '.[vllm,test]'. Arguments: --work-dir DIR, --limit N (default 2).
# Details: lmms_tasks/utils/testing/gpu_smoke.py (the repository's utils/testing/gpu_smoke.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-${LMMS_TASKS_VENV:-.venv}/bin/python}"
[ -x "$PY" ] || PY=python3
exec "$PY" -m lmms_tasks.utils.testing.gpu_smoke "$@"
