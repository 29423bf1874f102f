"""The outer bound of the hostile cases that could take the machine down (fork bombs, threads, memory, disk): the test
process enters a bound of the test's own before it starts a sandbox, so every sandbox it starts stays inside it, and the
bound holds even where the sandbox's own limits are broken. A broken limit then fails the test within seconds (the
bomb meets the outer bound, which the sandbox's own limit keeps it well below) and leaves the machine usable.

Where the test can make a cgroup (root, cgroup v1, or v2 with the controllers delegated): a pids and memory cgroup
below the test process's own, the tasks in it sampled (`OuterBound.peak`). Elsewhere, unprivileged: RLIMIT_NPROC,
which counts every task of the uid, those of its user namespaces included. A test marked `@pytest.mark.outer_bound`
(`sandboxes=2` where it runs two at once) runs inside it; so does the body of `with bounded(...)`. No `from __future__`
import: the upstream export puts its own set-up at the top of this file."""

import contextlib
import os
import resource
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SANDBOX_TASKS = 128 + 8  # one sandbox's allowance at the default Limits.max_processes: its tasks, bwrap's processes
SLACK = 32  # the test process's own threads started meanwhile (a pool, a watcher)
MEMORY = 2 << 30  # three 64 MiB tmpfs and an interpreter per sandbox fit many times over
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass
class OuterBound:
    kind: str  # "cgroup" (counted) or "rlimit" (RLIMIT_NPROC, not counted)
    allowed: int  # tasks the test process and its sandboxes may have at most, were each sandbox's limit holding
    limit: int  # tasks the bound lets exist (2x the sandboxes' allowance above `allowed`'s base)
    peak: int = 0  # the most tasks seen in the bound (sampled every few ms; cgroup only)
    path: str = ""


def _own(controller: str) -> tuple[Path, Path] | None:
    """(where a cgroup of the test's own goes, this process's cgroup) for `controller`, cgroup v1 or v2."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") and (CGROUP_ROOT / controller).is_dir():
            own = CGROUP_ROOT / controller / path.lstrip("/")
            return own, own
        if controllers == "" and (CGROUP_ROOT / "cgroup.controllers").is_file():
            own = CGROUP_ROOT / path.lstrip("/")
            for parent in (own, CGROUP_ROOT):  # v2: where the controller is enabled for the children
                with contextlib.suppress(OSError):
                    if controller in (parent / "cgroup.subtree_control").read_text().split():
                        return parent, own
    return None


def _tasks(cgroup: Path) -> int:
    return int((cgroup / "pids.current").read_text())


def _uid_tasks(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError):
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
    return count


@contextlib.contextmanager
def bounded(sandboxes: int = 1) -> Iterator[OuterBound]:
    """Run the body inside the outer bound; fails the test afterwards if the tasks went past the sandboxes' allowance."""
    allowance, name = sandboxes * SANDBOX_TASKS + SLACK, f"lmms_tasks_outer_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    made: list[tuple[Path, Path]] = []  # (the cgroup made, the one this process came from)
    try:
        for controller in ("pids", "memory"):
            if (where := _own(controller)) is None:
                raise OSError(f"no {controller} cgroup")
            made.append((where[0] / name, where[1]))
            made[-1][0].mkdir(exist_ok=True)
        base = len(os.listdir("/proc/self/task"))
        bound = OuterBound("cgroup", base + allowance, base + 2 * allowance, path=str(made[0][0]))
        (made[0][0] / "pids.max").write_text(str(bound.limit))
        memory = made[-1][0]
        (memory / ("memory.limit_in_bytes" if (memory / "memory.limit_in_bytes").exists() else "memory.max")).write_text(str(sandboxes * MEMORY))
        for cgroup, _ in made:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as exc:
        _leave(made)
        if os.geteuid() == 0:
            pytest.skip(f"no outer bound can be made here (root, no writable pids and memory cgroup: {exc}): a hostile case would have nothing to stop it")
        bound = None
    if bound is None:
        yield from _rlimit_bound(allowance)
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.003):
            with contextlib.suppress(OSError, ValueError):
                bound.peak = max(bound.peak, _tasks(made[0][0]))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield bound
    finally:
        done.set()
        watcher.join()
        with contextlib.suppress(OSError, ValueError):  # the kernel's own count where it keeps one (pids.peak)
            bound.peak = max(bound.peak, int((made[0][0] / "pids.peak").read_text()))
        _leave(made)
    assert bound.peak <= bound.allowed, f"{bound.peak} tasks in the outer bound (at most {bound.allowed} with the sandbox's own limit holding; bound {bound.limit})"


def _leave(made: list[tuple[Path, Path]]) -> None:
    """Back to the cgroups this process came from; whatever is left in the bound (started inside it during the test: a
    sandbox a regression left behind) killed, and the bound's cgroups, those made inside it too, removed once empty."""
    for cgroup, previous in made:
        with contextlib.suppress(OSError):
            (previous / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(2500):
            for left in [*sorted(cgroup.rglob("*/"), key=lambda p: -len(p.parts)), cgroup] if cgroup.exists() else []:  # innermost first
                with contextlib.suppress(OSError, ValueError):
                    for pid in (left / "cgroup.procs").read_text().split():
                        os.kill(int(pid), signal.SIGKILL)
                with contextlib.suppress(OSError):
                    left.rmdir()
            if not cgroup.exists():
                break
            threading.Event().wait(0.002)


def _rlimit_bound(allowance: int) -> Iterator[OuterBound]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    base = _uid_tasks(os.getuid())
    bound = OuterBound("rlimit", base + allowance, base + 2 * allowance)
    resource.setrlimit(resource.RLIMIT_NPROC, (min(bound.limit, hard) if hard != resource.RLIM_INFINITY else bound.limit, hard))
    try:
        yield bound
    finally:
        resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))


@pytest.fixture(autouse=True)
def outer_bound(request: pytest.FixtureRequest) -> Iterator[OuterBound | None]:
    marker = request.node.get_closest_marker("outer_bound")
    if marker is None:
        yield None
        return
    with bounded(**marker.kwargs) as bound:
        yield bound
