"""Run untrusted Python programs: a sandboxed separate interpreter per program, a bounded pool, a cache.

Benchmark-agnostic: a caller gives program texts and `Limits`, and gets one `ExecResult` per program.
What one execution gets (see `sandbox_child.py` for the child side):

- a fresh `python -I -B` interpreter in its own session and process group, killed as a whole (and any
  member that left the group is found through /proc and killed) when the program ends or times out;
- a fresh temporary directory as cwd, HOME and TMPDIR, removed afterwards;
- an environment reduced to an allow-list (no API keys, tokens or other secrets of the parent);
- stdin closed (/dev/null), stdout/stderr captured and capped;
- rlimits: CPU seconds, address space, file size, open files, no core files, and processes (counted per
  uid, so only enforced when not root) plus a watchdog that kills the program once its session holds
  more than `max_processes` processes (this is what contains a fork bomb when running as root);
- Linux Landlock where the kernel has it (checked: 6.x here): no writes outside the temporary directory,
  no TCP bind/connect, no signals to processes outside the sandbox (so the program cannot kill its
  parent); plus a Python-level socket guard everywhere (best effort where Landlock is missing).

Not enforced: reading files the user can read (secrets on disk stay readable), UDP/raw sockets below the
Python level without Landlock, and, where Landlock is missing, writes anywhere the user may write and
signals to the user's other processes. Run untrusted code on a machine or container you can lose.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

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
    cached: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ExecResult":
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
    """Kill every process of session `sid` (used when the guard itself died)."""
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
    """Processes started by the sandbox (by the marker in their environment) that are still alive."""
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


def run_program(source: str, limits: Limits = Limits(), python: str = sys.executable, marker: str | None = None) -> ExecResult:
    """Execute one program in a fresh sandbox; never raises for anything the program does."""
    root = Path(tempfile.mkdtemp(prefix="lmms_tasks_sbx_"))
    work = root / "work"
    work.mkdir()
    program = root / "program.py"
    program.write_text(source, encoding="utf-8")
    marker = marker or uuid.uuid4().hex
    command = [python, "-I", "-B", str(CHILD_SCRIPT), str(program), str(work), json.dumps(limits.as_json())]
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(work),
            env=sandbox_env(work, marker),
            start_new_session=True,
            close_fds=True,
        )
        try:
            out, err = proc.communicate(timeout=limits.timeout + limits.grace + 10.0)
        except subprocess.TimeoutExpired:
            _kill_session_from_outside(proc.pid)
            out, err = proc.communicate()
        lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
        if proc.returncode != 0 or not lines:
            _kill_session_from_outside(proc.pid)
            reason = f"sandbox guard died (exit {proc.returncode})" if proc.returncode else "sandbox guard gave no result"
            return ExecResult(status="failed", message=f"{reason}: {err.decode('utf-8', 'replace')[-500:]}".strip())
        try:
            return ExecResult.from_json(json.loads(lines[-1]))
        except ValueError:
            return ExecResult(status="failed", message="sandbox guard printed an unreadable result")
    finally:
        _rmtree(root)


def cache_key(source: str, limits: Limits, python: str = sys.executable) -> str:
    return content_key({"v": SANDBOX_VERSION, "source": source, "limits": limits.as_json(), "python": python, "py": sys.version})


def run_many(
    sources: Sequence[str],
    limits: Limits = Limits(),
    *,
    workers: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
    progress: bool = True,
    desc: str = "executing programs",
    on_result: Callable[[int, ExecResult], None] | None = None,
) -> list[ExecResult]:
    """Execute many programs in a bounded pool; identical programs run once; cached results are reused.

    Each pool thread only waits on its sandbox subprocess, so `workers` is the number of programs running
    at once (default: the usable CPUs, as the official harness). Stragglers that escaped their session
    are swept at the end.
    """
    cache = DiskCache(cache_dir or default_cache_dir()) if use_cache else None
    results: list[ExecResult | None] = [None] * len(sources)
    by_key: dict[str, list[int]] = {}
    for index, source in enumerate(sources):
        by_key.setdefault(cache_key(source, limits), []).append(index)
    pending: list[str] = []
    for key, indices in by_key.items():
        hit = cache.get(key) if cache else None
        if hit is not None:
            result = ExecResult.from_json(hit)
            result.cached = True
            for index in indices:
                results[index] = result
                if on_result:
                    on_result(index, result)
        else:
            pending.append(key)
    marker = uuid.uuid4().hex
    bar = _progress(len(pending), desc) if progress and pending else None
    lock = threading.Lock()

    def work(key: str) -> None:
        indices = by_key[key]
        result = run_program(sources[indices[0]], limits, marker=marker)
        if cache is not None and result.status != "error":
            cache.put(key, result.to_json())
        with lock:
            for index in indices:
                results[index] = result
            if bar is not None:
                bar.update(1)
        if on_result:
            for index in indices:
                on_result(index, result)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers or default_workers(), thread_name_prefix="sandbox") as pool:
            for future in concurrent.futures.as_completed([pool.submit(work, key) for key in pending]):
                future.result()
    finally:
        if bar is not None:
            bar.close()
        sweep(marker)
    return [r for r in results if r is not None]


def _progress(total: int, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="prog", dynamic_ncols=True, disable=None)
