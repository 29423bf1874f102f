"""The sandbox's child side: started as `python -I -B sandbox_child.py PROGRAM WORKDIR LIMITS_JSON`.

Standard library only, never imported by the package (it runs in a fresh isolated interpreter). The
process is a small *guard*: it forks the *program process*, which confines itself (rlimits, Landlock,
stdio, socket guard) and runs `exec(program, {})` under a wall-clock timer exactly like the official
HumanEval-V harness; the guard drains and caps the program's output, watches the number of processes
in the session (fork bombs), kills the whole process group at the hard deadline, and prints one JSON
line with the outcome on its own stdout. Keeping the guard outside the program's Landlock domain means
the program can neither signal it nor its parent, and a program that kills the guard anyway (where
Landlock is missing) only fails itself: the caller sees no result line.
"""

from __future__ import annotations

import ctypes
import marshal
import os
import resource
import select
import signal
import sys
import time

# --- Landlock (Linux >= 5.13; scoped signals >= 6.12) ------------------------------------------
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_FS_WRITE_FILE, _FS_REMOVE_DIR, _FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_FS_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_confine(work_dir: str) -> list[str]:
    """Deny writes outside `work_dir`, TCP bind/connect and signals to outside processes.

    Returns the list of protections actually applied (empty when the kernel has no Landlock)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return []
    fs = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE
    fs |= _FS_REFER if abi >= 2 else 0
    fs |= _FS_TRUNCATE if abi >= 3 else 0
    attr = _RulesetAttr(
        fs, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0, (_SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX) if abi >= 6 else 0
    )
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return []
    file_rights = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
    for path, rights in ((work_dir, fs), ("/dev/null", file_rights)):
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = _PathBeneathAttr(rights, fd)
        libc.syscall(_SYS_ADD_RULE, ruleset, ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
        os.close(fd)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, required by landlock_restrict_self
    if libc.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
        os.close(ruleset)
        return []
    os.close(ruleset)
    applied = ["fs-write"]
    if abi >= 4:
        applied.append("tcp")
    if abi >= 6:
        applied.append("signal")
    return applied


# --- program process -------------------------------------------------------------------------
class TimeoutException(Exception):
    """Raised by the wall-clock timer inside the program, as in the official harness."""


class _CappedWriteOnly:
    """sys.stdout/sys.stderr stand-in: keeps the first `cap` characters, cannot be read (official)."""

    def __init__(self, cap: int) -> None:
        self.cap, self.parts, self.size, self.closed = cap, [], 0, False

    def write(self, text: str) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if self.size < self.cap:
            self.parts.append(text[: self.cap - self.size])
        self.size += len(text)
        return len(text)

    def writelines(self, lines: object) -> None:
        for line in lines:  # type: ignore[attr-defined]
            self.write(line)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    def read(self, *args: object) -> str:
        raise OSError("stream is write-only")

    readline = readlines = read

    def readable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("no file descriptor")

    @property
    def encoding(self) -> str:
        return "utf-8"

    def text(self) -> str:
        return "".join(self.parts)


def _guard_sockets() -> None:
    """Best-effort network block at the Python level, used where Landlock cannot block TCP."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("network access is disabled in the sandbox")

    for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        setattr(socket.socket, name, refuse)
    socket.create_connection = refuse  # type: ignore[assignment]


def _set_rlimits(limits: dict) -> None:
    def lim(kind: int, value: int) -> None:
        try:
            _soft, hard = resource.getrlimit(kind)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass

    lim(resource.RLIMIT_CPU, int(limits["cpu_seconds"]))
    if limits.get("memory_bytes"):
        lim(resource.RLIMIT_AS, int(limits["memory_bytes"]))
    lim(resource.RLIMIT_FSIZE, int(limits["file_size_bytes"]))
    lim(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    lim(resource.RLIMIT_CORE, 0)
    if os.getuid() != 0:  # counted per real uid; root bypasses it (the guard's watchdog covers that)
        lim(resource.RLIMIT_NPROC, _count_own_processes() + int(limits["max_processes"]))


def _count_own_processes() -> int:
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


def run_program(program_path: str, work_dir: str, limits: dict, result_fd: int, out_fd: int, cgroup: str | None, go_fd: int) -> None:
    """Body of the forked program process; never returns. Everything slow that does not depend on the
    program (joining the pids cgroup costs ~10-20 ms of kernel latency) happens before the go signal."""
    try:
        if cgroup:
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
        os.setpgid(0, 0)
        if os.read(go_fd, 1) != b"g":  # the caller gave the spare up
            os._exit(0)
        os.close(go_fd)
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        for fd in (devnull, out_fd):
            os.close(fd)
        with open(program_path, encoding="utf-8") as fh:
            source = fh.read()
        os.chdir(work_dir)
        sys.path.extend(limits.get("sys_path") or [])
        applied = landlock_confine(work_dir) if limits.get("landlock", True) else []
        if "tcp" not in applied:
            _guard_sockets()
        _set_rlimits(limits)
        code = compile(source, "<string>", "exec")
    except BaseException as exc:  # noqa: BLE001 - report anything as a harness error
        _report(result_fd, {"status": "error", "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        os._exit(0)
    stdout, stderr = _CappedWriteOnly(int(limits["output_cap"])), _CappedWriteOnly(int(limits["output_cap"]))
    sys.stdout, sys.stderr, sys.stdin = stdout, stderr, _CappedWriteOnly(0)  # type: ignore[assignment]
    timeout = float(limits["timeout"])

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutException("Timed out!")

    signal.signal(signal.SIGALRM, on_alarm)
    outcome: dict
    start = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        exec(code, {})  # noqa: S102 - the point of the sandbox
        signal.setitimer(signal.ITIMER_REAL, 0)
        outcome = {"status": "passed", "message": "passed"}
    except TimeoutException:
        outcome = {"status": "timeout", "message": f"Test Case Execution Time Out (> {timeout:g} seconds)"}
    except BaseException as exc:  # noqa: BLE001 - official: any BaseException (SystemExit included) fails
        signal.setitimer(signal.ITIMER_REAL, 0)
        outcome = {"status": "failed", "message": str(exc)[:2000], "exception": type(exc).__name__}
    outcome["elapsed_s"] = round(time.monotonic() - start, 4)
    outcome["confinement"] = applied
    outcome["stdout"] = stdout.text()
    outcome["stderr"] = stderr.text()
    _report(result_fd, outcome)
    os._exit(0)


def _report(fd: int, outcome: dict) -> None:
    outcome["pid"] = os.getpid()  # forked copies of the program may report too; the guard keeps its child's
    payload = marshal.dumps(outcome)  # marshal, not json: importing json costs ~10 ms per program
    data = len(payload).to_bytes(4, "big") + payload
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass


# --- guard -------------------------------------------------------------------------------------
_PIDS_V1 = "/sys/fs/cgroup/pids"


def make_pids_cgroup(limit: int) -> str | None:
    """A per-program cgroup (v1 pids controller) capping the number of processes, where we may create one
    (root with the controller mounted). Elsewhere None: RLIMIT_NPROC and the watchdog remain."""
    path = os.path.join(_PIDS_V1, f"lmms_tasks_sbx_{os.getpid()}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as fh:
            fh.write(str(limit))
        return path
    except OSError:
        return None


def cgroup_pids(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def remove_cgroup(path: str) -> int:
    """Kill every process left in the cgroup (setsid escapees included), then remove it."""
    killed = 0
    for _ in range(500):
        pids = cgroup_pids(path)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        try:
            os.rmdir(path)
            return killed
        except OSError:
            _reap_all()
            time.sleep(0.002)
    return killed


def _reap_all() -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def _session_members(sid: int, exclude: int) -> list[int]:
    """Live (non-zombie) processes of session `sid`, except `exclude`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == exclude:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 4 and int(fields[3]) == sid and fields[0] != b"Z":  # state ppid pgrp session
            pids.append(int(entry))
    return pids


def _kill_session(child: int, child_status: list) -> int:
    """Kill the program's process group, then any session member that left it; returns how many."""
    me = os.getpid()
    sid = os.getsid(0)
    killed = 0
    try:
        os.killpg(child, signal.SIGKILL)
    except OSError:
        pass
    for _ in range(200):
        _reap_recording(child, child_status)
        members = _session_members(sid, me)
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.001)
    _reap_recording(child, child_status)
    return killed


def _reap_recording(child: int, child_status: list) -> None:
    """Reap all exited descendants, remembering the program process's own wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == child and not child_status:
            child_status.append(status)


_REPORT_FIELDS = {"status": str, "message": str, "exception": str, "elapsed_s": float, "confinement": list, "stdout": str, "stderr": str}


def _own_result(data: bytes, child: int) -> dict:
    """The program process's own report among the length-prefixed frames on the result channel."""
    offset = 0
    while offset + 4 <= len(data):
        size = int.from_bytes(data[offset : offset + 4], "big")
        frame = data[offset + 4 : offset + 4 + size]
        offset += 4 + size
        try:
            report = marshal.loads(frame)
        except (EOFError, ValueError, TypeError):
            continue
        if isinstance(report, dict) and report.get("pid") == child:
            return {k: report[k] for k, kind in _REPORT_FIELDS.items() if isinstance(report.get(k), kind)}
    return {"status": "failed", "message": "the program process sent no readable result"}


def _count_pids() -> int:
    return sum(1 for entry in os.listdir("/proc") if entry.isdigit())


def main() -> None:
    program_path, work_dir, limits_hex = sys.argv[1:4]
    limits = marshal.loads(bytes.fromhex(limits_hex))
    if os.getsid(0) != os.getpid():  # the guard sweeps its whole session: it must be a session of its own
        try:
            os.setsid()
        except OSError:
            sys.exit("sandbox_child.py must lead its own session; start it through lmms_tasks.utils.sandbox.run_program")
    max_processes = int(limits["max_processes"])
    try:  # orphaned descendants are re-parented to the guard, which reaps them (no zombies left)
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
    cgroup = make_pids_cgroup(max_processes + 1) if limits.get("cgroup", True) else None
    result_r, result_w = os.pipe()
    out_r, out_w = os.pipe()
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(result_r)
        os.close(out_r)
        os.close(go_w)
        run_program(program_path, work_dir, limits, result_w, out_w, cgroup, go_r)
    os.close(result_w)
    os.close(out_w)
    os.close(go_r)
    # Started ahead of time by the caller's pool: wait until the program file is written ("go" on stdin).
    if sys.stdin.buffer.readline().strip() != b"go":
        os.close(go_w)
        try:
            os.killpg(child, signal.SIGKILL)
        except OSError:
            os.kill(child, signal.SIGKILL)
        if cgroup:
            remove_cgroup(cgroup)
        _reap_all()
        return
    baseline = _count_pids()
    os.write(go_w, b"g")
    os.close(go_w)
    for fd in (result_r, out_r):
        os.set_blocking(fd, False)
    cap = int(limits["output_cap"])
    hard_deadline = time.monotonic() + float(limits["timeout"]) + float(limits["grace"])
    child_status: list = []
    result, output, output_size, verdict = b"", [], 0, None
    open_fds = {result_r, out_r}
    while not child_status:
        ready, _, _ = select.select(list(open_fds), [], [], 0.005)
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                open_fds.discard(fd)
            elif fd == result_r:
                result += chunk
            else:
                if output_size < cap:
                    output.append(chunk[: cap - output_size])
                output_size += len(chunk)
        _reap_recording(child, child_status)
        if child_status:
            break
        if time.monotonic() >= hard_deadline:
            verdict = {"status": "timeout", "message": f"Test Case Execution Time Out (> {float(limits['timeout']):g} seconds); killed"}
            break
        # without a pids cgroup: cheap check first (how many processes exist), the exact count only on growth
        if not cgroup and _count_pids() - baseline > max_processes and len(_session_members(os.getsid(0), os.getpid())) > max_processes:
            verdict = {"status": "failed", "message": f"killed: more than {max_processes} processes"}
            break
    if cgroup:  # every descendant is in the cgroup, session leavers included
        try:
            os.killpg(child, signal.SIGKILL)
        except OSError:
            pass
        killed = remove_cgroup(cgroup)
        _reap_recording(child, child_status)
        if not child_status:
            try:
                child_status.append(os.waitpid(child, 0)[1])
            except ChildProcessError:
                pass
    else:
        killed = _kill_session(child, child_status)
    status = child_status[0] if child_status else 0
    try:
        result += os.read(result_r, 1 << 20)
    except OSError:
        pass
    outcome: dict
    if verdict is not None:
        outcome = verdict
    elif result:
        outcome = _own_result(result, child)
    elif os.WIFSIGNALED(status):
        outcome = {"status": "failed", "message": f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"}
    else:
        outcome = {"status": "failed", "message": f"program process exited with code {os.WEXITSTATUS(status)} before finishing"}
    outcome["fd_output"] = b"".join(output).decode("utf-8", "replace")
    outcome["fd_output_bytes"] = output_size
    outcome["killed_processes"] = killed
    outcome["pids_cgroup"] = bool(cgroup)
    sys.stdout.buffer.write(marshal.dumps(outcome))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
