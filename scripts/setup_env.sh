#!/usr/bin/env bash
# Create the virtual environment (.venv, or $LMMS_TASKS_VENV) and install lmms-tasks with its test
# extras. Safe on CPU-only machines: torch is installed first and pinned, so no dependency can swap it for
# a CUDA build, and a torchvision wheel that does not match the installed torch (it breaks
# `import transformers`, hence lmms-eval) is removed. Re-running is cheap: it reinstalls only when the
# packaging files changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${LMMS_TASKS_VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${LMMS_TASKS_TORCH:-torch==2.13.0}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"

stamp="$VENV/.lmms_tasks_install"
want="$(cat setup.cfg setup.py pyproject.toml scripts/setup_env.sh | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PY" -c "import lmms_tasks, lmms_eval" 2>/dev/null; then
  exit 0
fi

"$PY" -m pip install -q --disable-pip-version-check --upgrade pip
if ! "$PY" -c "import torch" 2>/dev/null; then
  "$PY" -m pip install -q --disable-pip-version-check "$TORCH_SPEC"
fi
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
"$PY" -c "import torch; print('torch==' + torch.__version__)" > "$constraints"
"$PY" -m pip install -q --disable-pip-version-check -c "$constraints" -e ".[test]"

# The CPU trap: a PyPI torchvision built against another torch fails at import ("operator
# torchvision::nms does not exist") and takes transformers and lmms-eval down with it.
if "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torchvision') else 1)"; then
  if ! "$PY" -c "import torchvision" >/dev/null 2>&1; then
    echo "setup_env: removing torchvision (incompatible with $(cat "$constraints"))"
    "$PY" -m pip uninstall -q -y torchvision
  fi
fi
"$PY" -c "import transformers, lmms_eval, lmms_tasks" 
echo "$want" > "$stamp"
