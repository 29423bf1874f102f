"""The patch series, applied to a copy of the installed lmms-eval (`git apply`, as `export-upstream`'s
users apply it with `git am`): its own lmms-eval-style tests pass there, and every compat shim finds its
feature and stays off. The end-to-end suites run through the same copy too (tests/conformance,
tests/bad_input/test_exit_matrix.py, tests/upstream/test_export_real.py) and must give the verdicts,
metrics and exit statuses they give on the stock 0.7.3 with compat on."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from lmms_tasks.utils.commands.upstream import series
from lmms_tasks.utils.compat import SHIMS
from lmms_tasks.utils.testing import patched


def test_every_shim_retires_on_the_patched_lmms_eval(patched_lmms_eval: Path) -> None:
    probe = (
        "import json, sys\n"
        "sys.argv = ['lmms-eval']  # even as the lmms-eval command, nothing is left to backport\n"
        "import lmms_eval\n"
        "from lmms_tasks.utils import compat\n"
        "print(json.dumps({'file': lmms_eval.__file__, 'present': {s.NAME: s.present() for s in compat.SHIMS}, 'installed': compat.activate()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=dict(patched.env(patched_lmms_eval)), capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["file"].startswith(str(patched_lmms_eval))
    assert report["present"] == {s.NAME: True for s in SHIMS} and report["installed"] == []


def test_the_series_own_tests_pass_on_the_patched_copy(patched_lmms_eval: Path) -> None:
    """The tests each patch brings (lmms-eval's style, under test/), run against the patched package; the
    CLI subprocess ones (marked slow) are covered by our exit-status matrix through the same copy."""
    tests = sorted(p.name for p in (patched_lmms_eval / "test").rglob("test_*.py"))
    brought = {p.stem: re.findall(r"^\+\+\+ b/test/\S*/(test_\w+\.py)$", p.read_text(encoding="utf-8"), flags=re.M) for p in series.patch_files("0.7.3")}
    assert all(brought.values()), brought  # each patch brings its tests
    assert tests == sorted(name for names in brought.values() for name in names)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", "test"],
        cwd=patched_lmms_eval,
        env=dict(patched.env(patched_lmms_eval)),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and " failed" not in out.stdout
