"""The outer bound of the hostile cases (conftest.py) holds when the sandbox's own task limit is broken: the regression
is planted (as root with the program at host uid 0, the sandbox's pids cgroup made but never entered), the hostile
suite's fork-bomb test runs in a pytest of its own inside this test's bound, and it must fail, on its outer bound,
with the tasks it reached bounded well below what would trouble the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SANDBOX_TASKS, bounded

pytestmark = pytest.mark.not_exported(reason="plants a regression in the sandbox and re-runs a hostile test in a pytest of its own")

HOSTILE = Path(__file__).with_name("test_sandbox_hostile.py")
REPO = Path(__file__).resolve().parents[2]

# The regression, loaded as a pytest plugin before the test runs: as root with no launcher (no setpriv: the program's host uid is 0, which RLIMIT_NPROC does not bind), bwrap started without entering the
# pids cgroup the sandbox made for it (and still names in `confinement`).
PLANT = """
import subprocess, types
from lmms_tasks.utils.services import sandbox

class NotEntered(subprocess.Popen):
    def __init__(self, *args, preexec_fn=None, **kwargs):
        super().__init__(*args, **kwargs)

sandbox._launcher = lambda *args: None
sandbox.subprocess = types.SimpleNamespace(**{**vars(subprocess), "Popen": NotEntered})
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the program's host uid is 0, bound by the pids cgroup alone, only where the evaluator is root")
def test_a_fork_bomb_past_a_broken_task_limit_fails_its_test_and_stays_bounded(tmp_path: Path) -> None:
    (tmp_path / "plant_pids_cgroup_not_entered.py").write_text(PLANT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "pytest", f"{HOSTILE}::test_fork_bomb_is_contained", "-p", "plant_pids_cgroup_not_entered"]
    command += [f"--confcutdir={HOSTILE.parent}", "-p", "no:randomly", "-p", "no:xdist", "-q", f"--basetemp={tmp_path / 'run'}"]
    # above the limit of the bound of the pytest inside (two sandboxes: twice their allowance), which must stop the bomb first
    with bounded(sandboxes=5) as bound:
        if bound.kind != "cgroup":
            pytest.skip("the tasks are counted in a cgroup of the test's own; none can be made here")
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    output = done.stdout + done.stderr
    print(f"tasks in this test's bound: at most {bound.peak} (the sandbox's allowance {SANDBOX_TASKS})")
    assert done.returncode == 1, output[-3000:]  # the test failed, on its own
    assert "tasks in the outer bound (at most" in output, output[-3000:]  # and on its outer bound: the sandbox's limit did not hold
    assert SANDBOX_TASKS < bound.peak <= bound.allowed, bound  # the bomb went past the sandbox's allowance, and no further than the bound


@pytest.mark.skipif(os.geteuid() != 0, reason="the program's host uid is 0, bound by the pids cgroup alone, only where the evaluator is root")
def test_as_root_without_a_launcher_the_pids_cgroup_bounds_the_program_inside_the_evaluators_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Where no launcher can give the program host uid 65534 (no setpriv), it runs as host uid 0 and the sandbox's
    pids cgroup caps its tasks; that cgroup lies below the evaluator's own, so the bomb is counted in the outer bound
    (and stays below its allowance)."""
    from lmms_tasks.utils.services import sandbox

    if sandbox.unavailable() is not None:
        pytest.skip(sandbox.unavailable())
    monkeypatch.setattr(sandbox, "_launcher", lambda *args: None)
    limits = sandbox.Limits(timeout=2.0)
    with bounded() as bound:
        if bound.kind != "cgroup":
            pytest.skip("the tasks are counted in a cgroup of the test's own; none can be made here")
        result = sandbox.run_program("import os\nwhile True:\n    os.fork()\n", limits, tmp_root=tmp_path / "sbx")
    assert "host-uid:0" in result.confinement and "pids-cgroup" in result.confinement, result
    assert result.status == "timeout" or result.exception == "BlockingIOError", result
    assert bound.peak >= limits.max_processes, bound  # counted in the evaluator's bound: the sandbox's cgroup lies below it
