"""A copy of the installed lmms-eval with our patch series applied, for running the same tests through an
lmms-eval that has the fixes (our compat layer then switches itself off) as through the stock 0.7.3.

`patched_copy(dest)` copies the installed `lmms_eval` package to `dest/lmms_eval` and applies the 0.7.3
version of the series with `git apply` (the series' own lmms-eval-style tests land in `dest/test/`);
`env(dest, base)` puts the copy first on PYTHONPATH, so `lmms-eval`, `python -m lmms_eval` and
`accelerate launch -m lmms_eval` started with it import the patched package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import lmms_eval

from lmms_tasks.utils.commands.upstream.series import patch_files
from lmms_tasks.utils.testing.oplog import op


def patched_copy(dest: Path, version: str = "0.7.3") -> Path:
    with op("patched-lmms-eval", version):
        return _patched_copy(dest, version)


def _patched_copy(dest: Path, version: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(Path(lmms_eval.__file__).parent, dest / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__"))
    for patch in patch_files(version):
        out = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=dest, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{patch.name} does not apply to the installed lmms-eval: {out.stderr.strip()}")
    return dest


def env(dest: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this environment) with the patched copy first on PYTHONPATH."""
    out = dict(os.environ if base is None else base)
    out["PYTHONPATH"] = os.pathsep.join([str(dest), *filter(None, [out.get("PYTHONPATH", "")])])
    return out
