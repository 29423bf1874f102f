"""The hostile-program suite with the evaluator itself unprivileged (uid/gid 65534, no groups).

CI runs pytest as root, so this test re-runs `test_sandbox_hostile.py` in a subprocess demoted with
`setpriv --reuid=65534 --regid=65534 --clear-groups` and checks that every test there passed (none
skipped). Directories the demoted uid cannot traverse (here: the interpreter under /root, mode 0700) are
made reachable for that subprocess only, in a private mount namespace: a tmpfs over the closed directory
with the needed child bound back in. Nothing on the host changes. Run as a normal user, the hostile
module already is the unprivileged run, and this test says so and skips."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.not_exported(reason="re-runs the whole hostile suite as uid 65534 (minutes; needs root, mount and setpriv)")

NOBODY = 65534
HOSTILE = Path(__file__).with_name("test_sandbox_hostile.py")
REPO = Path(__file__).resolve().parents[2]

HELPER = r"""
import json, os, subprocess, sys
spec = json.loads(sys.argv[1])
for closed, children in spec["expose"]:
    stash = spec["stash"] + closed
    os.makedirs(stash, exist_ok=True)
    subprocess.run(["mount", "--bind", closed, stash], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", closed], check=True)
    for child in children:
        source, target = os.path.join(stash, child), os.path.join(closed, child)
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            open(target, "a").close()
        subprocess.run(["mount", "--bind", source, target], check=True)
os.execvp(spec["command"][0], spec["command"])
"""


def closed_directories(paths: list[str]) -> list[tuple[str, list[str]]]:
    """For each directory on the way to `paths` that others may not traverse: the children to expose."""
    expose: dict[str, set[str]] = {}
    for path in paths:
        current = "/"
        for part in Path(path).parts[1:]:
            if not os.stat(current).st_mode & stat.S_IXOTH:
                expose.setdefault(current, set()).add(part)
            current = os.path.join(current, part)
    return [(closed, sorted(children)) for closed, children in sorted(expose.items(), key=lambda item: item[0].count("/"))]


def hostile_test_names() -> set[str]:
    tree = ast.parse(HOSTILE.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="pytest runs unprivileged: test_sandbox_hostile.py itself is the unprivileged run")
def test_hostile_suite_passes_with_an_unprivileged_evaluator(tmp_path: Path) -> None:
    for tool in ("unshare", "setpriv", "mount"):
        assert shutil.which(tool), f"{tool} (util-linux) is needed to demote the evaluator"
    import site

    # PYTHONPATH too, where the tests run from a checkout that shadows the installed packages (lmms-eval's tree
    # after export-upstream): the demoted evaluator must import the same code.
    python_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    needed = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)), str(REPO), *site.getsitepackages(), *python_path]
    needed += [os.path.realpath(p) for p in needed]
    scratch = Path(tempfile.mkdtemp(prefix="hostile_unprivileged_"))  # reachable and owned by the demoted uid
    try:
        home, tmp = scratch / "home", scratch / "tmp"
        for directory in (scratch, home, tmp):
            directory.mkdir(exist_ok=True)
            os.chown(directory, NOBODY, NOBODY)
        report = scratch / "report.xml"
        command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", sys.executable, "-m", "pytest"]
        command += [str(HOSTILE.relative_to(REPO)), "-q", f"--junitxml={report}", f"--basetemp={tmp / 'pytest'}"]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "LMMS_TASKS_EXPECT_UID": str(NOBODY),
            "LMMS_TASKS_JUDGE_CACHE_DIR": str(home / "judge"),
            "LMMS_TASKS_EXEC_CACHE_DIR": str(home / "exec"),
            "HF_HUB_OFFLINE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            **({"PYTHONPATH": os.pathsep.join(python_path)} if python_path else {}),
        }
        spec = {"expose": closed_directories(needed), "stash": str(tmp_path / "stash"), "command": command}
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "--", sys.executable, "-c", HELPER, json.dumps(spec)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
            check=False,
        )
        tail = (done.stdout + done.stderr)[-6000:]
        assert done.returncode == 0, tail
        suite = ET.parse(report).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        assert suite is not None, tail
        counts = {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
        # the only skips: attacks documented as outside the process level (its programs run as the evaluator's uid here)
        outside = sum(1 for case in suite.iter("testcase") if "outside the process level" in ((case.find("skipped") if case.find("skipped") is not None else case).get("message") or ""))
        assert counts["failures"] == counts["errors"] == 0 and counts["skipped"] == outside, (counts, outside, tail)
        ran = {case.get("name", "").split("[")[0] for case in suite.iter("testcase")}
        assert hostile_test_names() <= ran, sorted(hostile_test_names() - ran)
        assert counts["tests"] >= len(hostile_test_names())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
