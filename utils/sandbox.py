"""Run untrusted Python programs: a sandboxed separate interpreter per program, a bounded pool, a cache.

Benchmark-agnostic: a caller gives program texts and `Limits`, and gets one `ExecResult` per program.
What one execution gets (see `sandbox_child.py` for the child side):

- a fresh `python -I -B -S` interpreter (site-packages put on sys.path) in its own session and process
  group, killed as a whole (and any member that left the group is found and killed) when the program ends
  or times out; a guard process outside the program's confinement does the killing and reports;
- a fresh temporary directory as cwd, HOME and TMPDIR, removed afterwards;
- an environment reduced to an allow-list (no API keys, tokens or other secrets of the parent);
- stdin closed (/dev/null), stdout/stderr captured and capped;
- rlimits: CPU seconds, address space, file size, open files, no core files, and processes (counted per
  uid, so only enforced when not root);
- a per-program cgroup-v1 `pids` cgroup where one can be created (root with the controller mounted), which
  stops a fork bomb at `max_processes`; elsewhere a watchdog kills the program once its session holds more
  than `max_processes` processes, and processes that left the session are found by an environment marker;
- Linux Landlock where the kernel has it (checked: 6.x here): no writes outside the temporary directory,
  no TCP bind/connect, no signals to processes outside the sandbox (so the program cannot kill its
  parent); without Landlock TCP rules, a Python-level socket guard (best effort).

Not enforced: reading files the user can read (secrets on disk stay readable), UDP/raw sockets below the
Python level without Landlock, and, where Landlock is missing, writes anywhere the user may write and
signals to the user's other processes. Run untrusted code on a machine or container you can lose.

Speed: pools keep one pre-started sandbox per worker (interpreter up, program process forked and in its
cgroup, waiting for the program), so that start-up overlaps the previous program instead of adding to it.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import marshal
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks.utils.cache import DiskCache, content_key

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
SANDBOX_VERSION = "1"
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
MARKER_ENV = "LMMS_TASKS_SANDBOX"


@dataclass(frozen=True)
class Limits:
    """What one program may use. `timeout` is the program's wall clock, measured inside the child."""

    timeout: float = 2.0
    grace: float = 1.0  # the guard kills the program at timeout + grace if the timer was swallowed
    cpu_seconds: int = 10
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 64 << 20
    open_files: int = 512
    max_processes: int = 32
    output_cap: int = 4096
    landlock: bool = True
    cgroup: bool = True  # a per-program pids cgroup where one can be created (root, cgroup v1 pids)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ExecResult:
    """One program's outcome. `passed` iff the program finished without raising (official semantics)."""

    status: str  # passed | failed | timeout | error
    message: str
    passed: bool = False
    elapsed_s: float | None = None
    stdout: str = ""
    stderr: str = ""
    fd_output: str = ""
    confinement: list[str] = field(default_factory=list)
    killed_processes: int = 0
    pids_cgroup: bool = False
    cached: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExecResult:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known.setdefault("status", "error")
        known.setdefault("message", "")
        known["passed"] = known["status"] == "passed"
        return cls(**known)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def default_workers() -> int:
    """Pool size: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def default_cache_dir() -> Path:
    return Path(os.environ.get("LMMS_TASKS_EXEC_CACHE_DIR") or "~/.cache/lmms_tasks/exec").expanduser()


def sandbox_env(work_dir: Path, marker: str) -> dict[str, str]:
    """The program's whole environment: an allow-list, never the parent's secrets."""
    env = {k: os.environ[k] for k in ENV_ALLOW_LIST if k in os.environ}
    env.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work_dir), "TMPDIR": str(work_dir), MARKER_ENV: marker})
    env.setdefault("LANG", "C.UTF-8")
    return env


def _kill_session_from_outside(sid: int) -> None:
    """Kill every process of session `sid` and of the guard's pids cgroup (used when the guard died)."""
    cgroup = Path("/sys/fs/cgroup/pids") / f"lmms_tasks_sbx_{sid}"
    for _ in range(200 if cgroup.is_dir() else 0):
        try:
            for pid in (cgroup / "cgroup.procs").read_text().split():
                os.kill(int(pid), signal.SIGKILL)
            cgroup.rmdir()
            break
        except OSError:
            time.sleep(0.005)
    try:
        os.killpg(sid, signal.SIGKILL)
    except OSError:
        pass
    for _ in range(100):
        members = [pid for pid, fields in _proc_stats() if fields.get("session") == sid]
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.002)


def _proc_stats() -> Iterable[tuple[int, dict[str, int]]]:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(entry), {"ppid": int(fields[1]), "pgrp": int(fields[2]), "session": int(fields[3])}


def sandboxed_pids(marker: str | None = None) -> list[int]:
    """Live processes started by the sandbox whose marker starts with `marker` (any marker if None)."""
    found = []
    needle = f"{MARKER_ENV}={marker}".encode() if marker else f"{MARKER_ENV}=".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if any(item.startswith(needle) for item in environ.split(b"\0")):
            found.append(int(entry))
    return found


def sweep(marker: str | None = None) -> int:
    """Kill processes that escaped their session (setsid + double fork); returns how many were killed."""
    killed = 0
    for _ in range(20):
        pids = [p for p in sandboxed_pids(marker) if p != os.getpid()]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.005)
    return killed


def _rmtree(path: Path) -> None:
    def make_writable(func: Callable[..., Any], p: str, _: Any) -> None:
        try:
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=make_writable)


class _Prepared:
    """A sandbox started ahead of its program: temp dir made, guard interpreter up, program process forked
    (and in its pids cgroup), all waiting for the program text. Pools keep one spare per worker, so this
    start-up overlaps the previous program's run instead of adding to it."""

    def __init__(self, limits: Limits, python: str, marker: str, tmp_root: str | os.PathLike[str] | None) -> None:
        self.limits, self.marker = limits, marker
        self.root = Path(tempfile.mkdtemp(prefix="lmms_tasks_sbx_", dir=tmp_root))
        self.work = self.root / "work"
        self.work.mkdir()
        self.program = self.root / "program.py"
        settings = {**limits.as_json(), "sys_path": _site_dirs(python)}
        command = [python, "-I", "-B", "-S", str(CHILD_SCRIPT), str(self.program), str(self.work), marshal.dumps(settings).hex()]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(self.work),
            env=sandbox_env(self.work, marker),
            start_new_session=True,
            close_fds=True,
        )

    def run(self, source: str) -> ExecResult:
        """Hand the program over and wait for its outcome; never raises for anything the program does."""
        try:
            self.program.write_text(source, encoding="utf-8")
            try:
                out, err = self.proc.communicate(b"go\n", timeout=self.limits.timeout + self.limits.grace + 10.0)
            except subprocess.TimeoutExpired:
                _kill_session_from_outside(self.proc.pid)
                out, err = self.proc.communicate()
            outcome: Any = None
            if self.proc.returncode == 0 and out:
                try:
                    outcome = marshal.loads(out)  # written by the guard itself (never by the program)
                except (EOFError, ValueError, TypeError):
                    outcome = None
            if not isinstance(outcome, dict):
                _kill_session_from_outside(self.proc.pid)
                reason = (
                    f"sandbox guard died (exit {self.proc.returncode})" if self.proc.returncode else "sandbox guard gave no readable result"
                )
                result = ExecResult(status="failed", message=f"{reason}: {err.decode('utf-8', 'replace')[-500:]}".strip())
            else:
                result = ExecResult.from_json(outcome)
            if not result.pids_cgroup:
                sweep(self.marker)  # a process that left the session (setsid) still carries the marker
            return result
        finally:
            _rmtree(self.root)

    def discard(self) -> None:
        """Give an unused spare up (its guard exits on an empty stdin)."""
        try:
            self.proc.communicate(b"", timeout=10)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            _kill_session_from_outside(self.proc.pid)
            self.proc.wait()
        _rmtree(self.root)


def run_program(
    source: str,
    limits: Limits = Limits(),
    python: str = sys.executable,
    marker: str | None = None,
    tmp_root: str | os.PathLike[str] | None = None,
) -> ExecResult:
    """Execute one program in a fresh sandbox; never raises for anything the program does."""
    return _Prepared(limits, python, marker or uuid.uuid4().hex, tmp_root).run(source)


@functools.lru_cache(maxsize=8)
def _site_dirs(python: str) -> list[str]:
    """The interpreter's site-packages directories. The child starts with -S (skipping `site`, which costs
    ~20 ms per start mostly in .pth hooks such as editable-install finders) and puts these on sys.path, so
    programs import the same installed packages; only .pth-added paths are not applied."""
    if python == sys.executable:
        import site

        return [p for p in site.getsitepackages() if os.path.isdir(p)]
    out = subprocess.run(
        [python, "-I", "-c", "import site, json; print(json.dumps(site.getsitepackages()))"], capture_output=True, text=True, check=True
    )
    return [p for p in json.loads(out.stdout) if os.path.isdir(p)]


def cache_key(source: str, limits: Limits, python: str = sys.executable) -> str:
    return content_key({"v": SANDBOX_VERSION, "source": source, "limits": limits.as_json(), "python": python, "py": sys.version})


class SandboxPool:
    """A bounded pool of sandbox runs with a content-addressed cache; `submit` returns a Future.

    Each pool thread only waits on its sandbox subprocess, so `workers` is the number of programs running
    at once (default: the usable CPUs, as the official harness). Identical programs run once. `close()`
    sweeps stragglers that escaped their session.
    """

    def __init__(
        self,
        limits: Limits = Limits(),
        *,
        workers: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        use_cache: bool = True,
        progress: bool = True,
        desc: str = "executing programs",
        tmp_root: str | os.PathLike[str] | None = None,
    ) -> None:
        self.limits = limits
        self.tmp_root = tmp_root
        self.cache = DiskCache(cache_dir or default_cache_dir()) if use_cache else None
        self.marker = uuid.uuid4().hex
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers or default_workers(), thread_name_prefix="sandbox")
        self.bar = _progress(0, desc) if progress else None
        self.inflight: dict[str, concurrent.futures.Future[ExecResult]] = {}
        self.lock = threading.Lock()
        self.cache_hits = 0
        self.python = sys.executable
        self.local = threading.local()
        self.spares: list[_Prepared] = []

    def submit(self, source: str) -> concurrent.futures.Future[ExecResult]:
        key = cache_key(source, self.limits)
        with self.lock:
            if key in self.inflight:
                return self.inflight[key]
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            result = ExecResult.from_json(hit)
            result.cached = True
            future: concurrent.futures.Future[ExecResult] = concurrent.futures.Future()
            future.set_result(result)
            with self.lock:
                self.cache_hits += 1
        else:
            if self.bar is not None:
                with self.lock:
                    self.bar.total += 1
                    self.bar.refresh()
            future = self.pool.submit(self._run, key, source)
        with self.lock:
            self.inflight[key] = future
        return future

    def _prepare(self) -> _Prepared:
        return _Prepared(self.limits, self.python, f"{self.marker}-{uuid.uuid4().hex[:12]}", self.tmp_root)

    def _run(self, key: str, source: str) -> ExecResult:
        sandbox = getattr(self.local, "spare", None) or self._prepare()
        spare = self._prepare()  # starts while this program runs
        self.local.spare = spare
        with self.lock:
            self.spares = [s for s in self.spares if s is not sandbox] + [spare]
        result = sandbox.run(source)
        if self.cache is not None and result.status != "error":
            self.cache.put(key, result.to_json())
        if self.bar is not None:
            with self.lock:
                self.bar.update(1)
        return result

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for spare in self.spares:
            spare.discard()
        self.spares = []
        if self.bar is not None:
            self.bar.close()
        sweep(self.marker)

    def __enter__(self) -> SandboxPool:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_many(
    sources: Sequence[str],
    limits: Limits = Limits(),
    *,
    workers: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
    progress: bool = True,
    desc: str = "executing programs",
) -> list[ExecResult]:
    """Execute many programs in a bounded pool (see `SandboxPool`); results in input order."""
    with SandboxPool(limits, workers=workers, cache_dir=cache_dir, use_cache=use_cache, progress=progress, desc=desc) as pool:
        futures = [pool.submit(source) for source in sources]
        return [future.result() for future in futures]


def _progress(total: int, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="prog", dynamic_ncols=True, disable=None)
