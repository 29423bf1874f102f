"""Run untrusted Python programs: a sandboxed separate interpreter per program, a bounded pool, a cache.

Benchmark-agnostic: a caller gives program texts and `Limits`, and gets one `ExecResult` per program.
The child side (`sandbox_child.py`) documents the mechanics; in short, each program gets:

Kernel isolation, where the machine allows it (checked per run; recorded in `ExecResult.confinement`):
- fresh user, pid, network, mount, ipc and uts namespaces, made by a small guard process that stays on
  the host. The program runs as an unprivileged host uid: `Limits.uid` (65534) when the evaluator is
  root, else the evaluator's own uid; never the host's uid 0. It has no capability (none left in its user
  namespace either), no_new_privs, and cannot create nested user namespaces.
- no network at all: the network namespace has no interface up, so TCP, UDP datagrams, and the host's
  abstract unix sockets are unreachable.
- its own filesystem view: an empty read-only root with read-only binds of /usr, /etc, the lib/bin links,
  the interpreter's prefix, the virtual environment and site-packages (so programs import what the
  official harness would), the work directory (read-write, at its host path), a fresh /proc showing only
  the sandbox's processes, and a private /tmp and /dev/shm (tmpfs). Absent: the host's /proc (so no
  /proc/<evaluator>/environ and no API keys), /root, /home, $HOME, /run, the judge and execution caches,
  the output directory, every pathname unix socket outside those binds, other sandboxes.
- a pid namespace whose end kills everything in it: daemons that `setsid` and clear their environment
  die with the program, with or without a pids cgroup.

Everywhere (also in the fallback): a fresh `python -I -B -S` interpreter (site-packages put on sys.path);
a fresh temporary work directory as cwd, HOME and TMPDIR, removed afterwards; an environment reduced to
an allow-list (no API keys, tokens or other secrets of the parent); stdin from /dev/null; stdout/stderr
captured and capped; rlimits (CPU seconds, address space, file size, open files, no core files, tasks);
Landlock where the kernel has it (no writes outside the sandbox's own directories, no TCP, no signals to
outside processes, no mounts); a per-program pids cgroup where one can be created (root + cgroup v1 pids).

Threads and processes: `Limits.max_processes` (default 128) caps the program's *tasks*, processes and
threads together, as the kernel counts them (RLIMIT_NPROC, counted per user namespace so per program;
the pids cgroup counts threads too). Ordinary threaded code (64 threads) runs; a fork bomb stops there.

Fallback (namespaces unavailable or `Limits(namespaces=False)`): the layers listed under "everywhere",
the program's own session and process group killed as a whole, a watchdog on the number of processes,
a Python-level socket guard (bypassable through `_socket`), escapees found by an environment marker and
killed, and, when root and the interpreter is reachable by `Limits.uid`, that uid. One warning per
process names what is missing; each result says it in `isolation_missing`. Not enforced there: reading
what the program's uid may read, including /proc/<pid>/environ of the evaluator and its parents (their API
keys) when the program runs under the evaluator's uid; UDP and pathname unix sockets below the Python
level; chmod/chown/utime outside when that uid is root; writes outside the work directory where Landlock is
missing; and, as root without a pids cgroup, fork bombs are only stopped by the watchdog.

Not enforced even with namespaces: reading world-readable files under the read-only binds (/usr, /etc,
the interpreter, the virtual environment); a unix socket placed inside those binds would be reachable.
Run untrusted code on a machine or container you can afford to lose.

Verdicts. A program passes iff `exec(program, {})` returns within `timeout` (official semantics). The
result channel accepts exactly one frame carrying a per-run token, from a program process that then
exited 0 through the harness; writing frames cannot turn a failure into a pass. What remains possible
inside the interpreter (as in the official harness): a program that reads the token from its input pipe,
writes its own frame and `os._exit(0)`s, or that monkeypatches the harness, changes its own verdict.

Failures to start (EAGAIN, ENOMEM, a missing interpreter) fail that one program with the reason after one
retry (`status == "error"`, not cached); a batch always returns one result per program, and no process or
temporary directory outlives it.

Speed: pools keep one pre-started sandbox per worker (interpreter up, namespaces and filesystem built,
program process waiting), so that start-up overlaps the previous program instead of adding to it.
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import functools
import json
import marshal
import os
import shutil
import signal
import stat
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

from lmms_tasks.utils.services.cache import DiskCache, content_key
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.sandbox_child import unpack_record

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
# The guard's code arrives on its stdin, compiled once per evaluator process: compiling sandbox_child.py
# in every guard would cost ~20 ms of CPU per program, and a cached .pyc is not written where
# PYTHONDONTWRITEBYTECODE is set (common in containers). Another interpreter gets the source.
CHILD_BOOTSTRAP = (
    "import marshal, sys\n"
    "head = sys.stdin.buffer.read(5)\n"
    "body = sys.stdin.buffer.read(int.from_bytes(head[1:], 'big'))\n"
    "code = marshal.loads(body) if head[:1] == b'c' else compile(body, sys.argv[1], 'exec')\n"
    "module = {'__name__': 'lmms_tasks_sandbox_child', '__file__': sys.argv[1], '__builtins__': __builtins__}\n"
    "exec(code, module)\n"
    "module['main'](sys.argv[2:])\n"
)
SANDBOX_VERSION = "3"  # 3: results carry the exception type (cached results of 2 lack it)
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
MARKER_ENV = "LMMS_TASKS_SANDBOX"
UNPRIVILEGED_UID = 65534  # "nobody": the host uid programs run as when the evaluator is root
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


@dataclass(frozen=True)
class Limits:
    """What one program may use. `timeout` is the program's wall clock, measured inside the child."""

    timeout: float = 2.0
    grace: float = 1.0  # the guard kills the program at timeout + grace if the timer was swallowed
    cpu_seconds: int = 10
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 64 << 20  # per file, and the size of the private /tmp and /dev/shm
    open_files: int = 512
    max_processes: int = 128  # tasks: processes and threads together (the kernel counts threads)
    output_cap: int = 4096
    landlock: bool = True
    cgroup: bool = True  # a per-program pids cgroup where one can be created (root, cgroup v1 pids)
    namespaces: bool = True  # kernel isolation (user/pid/net/mount/ipc/uts) where the machine allows it
    uid: int = UNPRIVILEGED_UID  # host uid of the program when the evaluator is root

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ExecResult:
    """One program's outcome. `passed` iff the program finished without raising (official semantics)."""

    status: str  # passed | failed | timeout | error
    message: str
    exception: str = ""  # the type name when the program raised (status failed); "" when it died or was killed
    passed: bool = False
    elapsed_s: float | None = None
    stdout: str = ""
    stderr: str = ""
    fd_output: str = ""
    confinement: list[str] = field(default_factory=list)
    isolation_missing: str = ""  # what the fallback lacked ("" with full kernel isolation)
    killed_processes: int = 0
    pids_cgroup: bool = False
    attempts: int = 1  # sandbox starts tried (a failed start is retried once)
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


class SandboxStartError(OSError):
    """No sandbox could be started for a program (EAGAIN, ENOMEM, a missing interpreter...)."""


def default_workers() -> int:
    """Pool size: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def default_cache_dir() -> Path:
    return Path(os.environ.get("LMMS_TASKS_EXEC_CACHE_DIR") or "~/.cache/lmms_tasks/exec").expanduser()


def default_hidden_paths() -> list[str]:
    """Directories never shown to a program, even where they lie below a read-only bind: the user's home,
    the judge cache and the execution cache."""
    judge = os.environ.get("LMMS_TASKS_JUDGE_CACHE_DIR") or "~/.cache/lmms_tasks/judge"
    return [os.path.expanduser("~"), os.path.expanduser(judge), str(default_cache_dir())]


def sandbox_env(work_dir: Path, marker: str) -> dict[str, str]:
    """The program's whole environment: an allow-list, never the parent's secrets."""
    env = {k: os.environ[k] for k in ENV_ALLOW_LIST if k in os.environ}
    env.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work_dir), "TMPDIR": str(work_dir), MARKER_ENV: marker})
    env.setdefault("LANG", "C.UTF-8")
    return env


_warned: set[str] = set()
_warn_lock = threading.Lock()


def _warn_isolation_missing(missing: str) -> None:
    """One warning per process (per missing feature) when the kernel isolation could not be used."""
    what = missing.split(":", 1)[0]
    with _warn_lock:
        if what in _warned:
            return
        _warned.add(what)
    logger.warning(
        f"lmms_tasks sandbox: kernel isolation unavailable ({missing}). Programs run with the fallback layers "
        "(session kill, rlimits, Landlock where available, Python-level socket guard); missing: a private "
        "filesystem view (the host's /proc, home and caches stay readable as far as file permissions allow), "
        "network isolation below Python (UDP, pathname unix sockets), and the pid namespace kill."
    )


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


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@functools.lru_cache(maxsize=8)
def _child_code(python: str) -> bytes:
    """What CHILD_BOOTSTRAP reads: kind (c: marshalled code of this interpreter, s: source), length, body."""
    source = CHILD_SCRIPT.read_bytes()
    if python == sys.executable:
        kind, body = b"c", marshal.dumps(compile(source, str(CHILD_SCRIPT), "exec", optimize=2))
    else:
        kind, body = b"s", source
    return kind + len(body).to_bytes(4, "big") + body


@functools.lru_cache(maxsize=8)
def _interpreter_paths(python: str) -> tuple[list[str], list[str]]:
    """(directories the interpreter needs: prefixes and the binary's directory; its site-packages)."""
    if python == sys.executable:
        import site

        info = {
            "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix],
            "site": site.getsitepackages(),
            "executable": sys.executable,
        }
    else:
        probe = "import site, sys, json; print(json.dumps({'prefixes': [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix], 'site': site.getsitepackages(), 'executable': sys.executable}))"
        info = json.loads(subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, check=True).stdout)
    executable = os.path.abspath(info["executable"] or python)
    needed = [*info["prefixes"], os.path.dirname(executable), os.path.dirname(os.path.realpath(executable)), *info["site"]]
    return [p for p in needed if os.path.isdir(p)], [p for p in info["site"] if os.path.isdir(p)]


def _site_dirs(python: str) -> list[str]:
    """The interpreter's site-packages directories. The child starts with -S (skipping `site`, which costs
    ~20 ms per start mostly in .pth hooks such as editable-install finders) and puts these on sys.path, so
    programs import the same installed packages; only .pth-added paths are not applied."""
    return _interpreter_paths(python)[1]


@functools.lru_cache(maxsize=8)
def filesystem_view(python: str, hide: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the namespace's root holds: read-only binds (system directories, the interpreter's prefixes,
    the virtual environment, site-packages; each also under its real path), the top-level symlinks of a
    merged /usr, and the hidden directories that lie below a bind (covered with an empty tmpfs)."""
    links: list[list[str]] = []
    candidates: list[str] = []
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            links.append([top, os.readlink(top)])
        elif os.path.isdir(top):
            candidates.append(top)
    for path in _interpreter_paths(python)[0]:
        candidates += [os.path.abspath(path), os.path.realpath(path)]
    binds: list[str] = []
    for path in sorted(set(candidates), key=len):
        if path == "/" or any(_inside(path, special) for special in ("/proc", "/dev", "/sys")):
            continue
        if any(_inside(path, bound) for bound in binds) or any(_inside(path, link) for link, _ in links):
            continue
        binds.append(path)
    hidden = sorted({os.path.realpath(h) for h in hide if h} | {os.path.abspath(h) for h in hide if h})
    covered = [h for h in hidden if any(_inside(h, b) and h != b for b in binds)]
    return {"binds": binds, "links": links, "hide": covered}


@functools.lru_cache(maxsize=8)
def _reachable_by_others(paths: tuple[str, ...]) -> bool:
    """Whether a uid with no relation to the owners can traverse to (and read) every path: the fallback
    only drops root's programs to `Limits.uid` when the interpreter stays importable for it."""
    for path in paths:
        current = "/"
        for part in Path(path).parts[1:]:
            current = os.path.join(current, part)
            try:
                mode = os.stat(current).st_mode
            except OSError:
                return False
            if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
                return False
    return True


class _Prepared:
    """A sandbox started ahead of its program: temp dir made, guard interpreter up, namespaces and
    filesystem view built, program process waiting for the program text. Pools keep one spare per
    worker, so this start-up overlaps the previous program's run instead of adding to it.

    Raises SandboxStartError when the guard cannot be started (and leaves nothing behind)."""

    def __init__(self, limits: Limits, python: str, marker: str, tmp_root: str | os.PathLike[str] | None, hide: tuple[str, ...] = ()) -> None:
        self.limits, self.marker = limits, marker
        self.root = Path(tempfile.mkdtemp(prefix="lmms_tasks_sbx_", dir=tmp_root))
        try:
            os.chmod(self.root, 0o711)  # the fallback's unprivileged program must reach its work dir
            self.work = self.root / "work"
            self.work.mkdir()
            if os.geteuid() == 0:
                try:
                    os.chown(self.work, limits.uid, limits.uid)
                except OSError:  # "root" of a user namespace where that uid is not mapped: the guard falls back
                    pass
            view = filesystem_view(python, tuple(default_hidden_paths()) + hide)
            settings = {
                **limits.as_json(),
                "sys_path": _site_dirs(python),
                **view,
                "drop_uid": limits.uid if _reachable_by_others(tuple(view["binds"])) else None,
            }
            command = [python, "-I", "-B", "-S", "-c", CHILD_BOOTSTRAP, str(CHILD_SCRIPT), str(self.work), marshal.dumps(settings).hex()]
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
            try:
                assert self.proc.stdin is not None
                code = _child_code(python)
                try:  # room for the whole code, so that this write never waits for the guard to start
                    fcntl.fcntl(self.proc.stdin.fileno(), 1031, max(len(code) + 4096, 65536))  # F_SETPIPE_SZ
                except OSError:
                    pass
                self.proc.stdin.write(code)
                self.proc.stdin.flush()
            except OSError:
                _kill_session_from_outside(self.proc.pid)
                self.proc.communicate()
                raise
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            _rmtree(self.root)
            raise SandboxStartError(f"sandbox could not start: {type(exc).__name__}: {exc}") from exc
        except BaseException:
            _rmtree(self.root)
            raise

    def run(self, source: str) -> ExecResult:
        """Hand the program over and wait for its outcome; never raises for anything the program does.
        Raises SandboxStartError (after cleaning up) when the guard could not create the program process."""
        try:
            data = source.encode("utf-8", "surrogatepass")
            try:
                out, err = self.proc.communicate(len(data).to_bytes(4, "big") + data, timeout=self.limits.timeout + self.limits.grace + 30.0)
            except subprocess.TimeoutExpired:
                _kill_session_from_outside(self.proc.pid)
                out, err = self.proc.communicate()
            outcome = _guard_outcome(out) if self.proc.returncode == 0 else None
            if outcome is None:
                _kill_session_from_outside(self.proc.pid)
                reason = (
                    f"sandbox guard died (exit {self.proc.returncode})" if self.proc.returncode else "sandbox guard gave no readable result"
                )
                result = ExecResult(status="failed", message=f"{reason}: {err.decode('utf-8', 'replace')[-500:]}".strip())
            elif outcome.get("start_error"):
                raise SandboxStartError(str(outcome.get("message")))
            else:
                result = ExecResult.from_json(outcome)
            if "private-filesystem" not in result.confinement:
                sweep(self.marker)  # plain mode: a process that left the session still carries the marker
            return result
        finally:
            _rmtree(self.root)

    def discard(self) -> None:
        """Give an unused spare up (its guard tears the sandbox down on an empty stdin)."""
        try:
            self.proc.communicate(b"", timeout=10)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            _kill_session_from_outside(self.proc.pid)
            self.proc.wait()
        sweep(self.marker)
        _rmtree(self.root)


def _guard_outcome(out: bytes) -> dict[str, Any] | None:
    """The guard's report (a record of strings, see sandbox_child.pack_record) as ExecResult fields; None
    when unreadable. Parsed without marshal or pickle: in the fallback a program might reach the pipe."""
    record = unpack_record(out) if out else None
    if record is None or "status" not in record:
        return None
    outcome: dict[str, Any] = {k: record[k] for k in ("status", "message", "exception", "stdout", "stderr", "fd_output", "isolation_missing") if k in record}
    outcome["confinement"] = [item for item in record.get("confinement", "").split("\n") if item]
    for key, kind in (("elapsed_s", float), ("killed_processes", int)):
        try:
            outcome[key] = kind(record[key])
        except (KeyError, ValueError):
            pass
    outcome["pids_cgroup"] = record.get("pids_cgroup") == "1"
    outcome["start_error"] = record.get("start_error") == "1"
    return outcome


def _execute(sandbox_for: Callable[[int], _Prepared], source: str) -> ExecResult:
    """Run one program; a sandbox that fails to start is retried once, then the program fails with the
    reasons (status 'error'). Never raises for a start failure."""
    reasons = []
    for attempt in (1, 2):
        try:
            result = sandbox_for(attempt).run(source)
        except SandboxStartError as exc:
            reasons.append(str(exc))
            continue
        result.attempts = attempt
        if result.isolation_missing:
            _warn_isolation_missing(result.isolation_missing)
        return result
    return ExecResult(status="error", message=f"{reasons[-1]} (failed twice: {'; '.join(reasons)})", attempts=2)


def run_program(
    source: str,
    limits: Limits = Limits(),
    python: str = sys.executable,
    marker: str | None = None,
    tmp_root: str | os.PathLike[str] | None = None,
    hide: Sequence[str] = (),
) -> ExecResult:
    """Execute one program in a fresh sandbox; never raises for anything the program does."""
    marker = marker or uuid.uuid4().hex
    return _execute(lambda attempt: _Prepared(limits, python, marker, tmp_root, tuple(hide)), source)


def cache_key(source: str, limits: Limits, python: str = sys.executable) -> str:
    return content_key({"v": SANDBOX_VERSION, "source": source, "limits": limits.as_json(), "python": python, "py": sys.version})


class SandboxPool:
    """A bounded pool of sandbox runs with a content-addressed cache; `submit` returns a Future that
    always resolves to an ExecResult (never an exception).

    Each pool thread only waits on its sandbox subprocess, so `workers` is the number of programs running
    at once (default: the usable CPUs, as the official harness). Identical programs run once. `close()`
    gives up the spares and sweeps stragglers; no process or temporary directory outlives it. `hide`
    adds directories (e.g. the run's output directory) to those never shown to programs.
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
        hide: Sequence[str] = (),
    ) -> None:
        self.limits = limits
        self.tmp_root = tmp_root
        self.cache = DiskCache(cache_dir or default_cache_dir()) if use_cache else None
        self.hide = tuple(hide) + ((str(cache_dir),) if cache_dir else ())
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
        return _Prepared(self.limits, self.python, f"{self.marker}-{uuid.uuid4().hex[:12]}", self.tmp_root, self.hide)

    def _sandbox_for(self, attempt: int) -> _Prepared:
        """This worker's spare if it has one, else a fresh sandbox; then the next spare is started
        (while this program runs). A spare that cannot start is simply not kept."""
        sandbox = getattr(self.local, "spare", None)
        self.local.spare = None
        if sandbox is not None:
            with self.lock:
                self.spares = [s for s in self.spares if s is not sandbox]
        else:
            sandbox = self._prepare()
        try:
            spare = self._prepare()
        except SandboxStartError:
            spare = None
        self.local.spare = spare
        if spare is not None:
            with self.lock:
                self.spares.append(spare)
        return sandbox

    def _run(self, key: str, source: str) -> ExecResult:
        try:
            result = _execute(self._sandbox_for, source)
        except Exception as exc:  # noqa: BLE001 - a batch always gets one result per program
            result = ExecResult(status="error", message=f"sandbox failure: {type(exc).__name__}: {exc}")
        if self.cache is not None and result.status != "error":
            self.cache.put(key, result.to_json())
        if self.bar is not None:
            with self.lock:
                self.bar.update(1)
        return result

    def close(self) -> None:
        try:
            self.pool.shutdown(wait=True)
        finally:
            with self.lock:
                spares, self.spares = self.spares, []
            for spare in spares:
                try:
                    spare.discard()
                except Exception:  # noqa: BLE001 - keep discarding the others
                    _rmtree(spare.root)
            if self.bar is not None:
                self.bar.close()
            sweep(self.marker)

    def __enter__(self) -> SandboxPool:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _progress(total: int, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="prog", dynamic_ncols=True, disable=None)
