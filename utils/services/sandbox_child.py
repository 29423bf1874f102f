"""The sandbox's child side: started by `lmms_tasks.utils.services.sandbox` as `python -I -B -S -c BOOTSTRAP PATH
WORKDIR SETTINGS_HEX`; the caller sends this module's code (compiled once per caller process) and later
the program (4-byte length + UTF-8 text) on the guard's stdin.

Standard library only (it runs in a fresh isolated interpreter); the package imports only its record
codec (`pack_record`/`unpack_record`).

Processes. The *guard* (this script) stays on the host, outside every confinement: it builds the sandbox
before the program arrives, hands the program over, drains and caps the output, enforces the hard
deadline, kills everything at the end, decides the verdict and prints it (a `pack_record` record) on
its own stdout. What it builds, where the kernel allows (the *namespace mode*):

    guard ── holder (user+mount+net+ipc+uts namespaces; waits for init)
               └── init (pid 1 of a new pid namespace; builds the filesystem view, reaps, reports)
                     └── program process (pid 2; drops every capability, confines itself, runs the program)

- user namespace: the host uid is never 0. Started as root, the holder drops to `uid` (65534, "nobody")
  and clears its groups; started as a user, that user. The namespace maps only that uid (identity map),
  holds no capability that means anything on the host, and allows no nested user namespace.
- pid namespace: the program sees only its own processes (/proc is a fresh procfs); when the program
  process ends, init exits and the kernel kills everything left in the namespace (daemons that `setsid`
  and clear their environment included). No pids cgroup is needed for that.
- network namespace: no interface is up (not even loopback): no TCP, no UDP datagram, no abstract unix
  socket of the host (those live in the network namespace).
- mount namespace: the root is an empty read-only tmpfs holding read-only binds of what an interpreter
  needs (/usr, /etc, the lib and bin links, the interpreter's prefix, the virtual environment,
  site-packages), the device nodes null/zero/full/random/urandom, a fresh /proc, a private /tmp and
  /dev/shm (tmpfs, capped), and the work directory (read-write) at its host path. Everything else of the
  host is absent: /proc of the host, /root, /home, $HOME, the judge and execution caches, the output
  directory, other sandboxes' directories, and every pathname unix socket (/run, /tmp, $HOME, ...).
  Caches and directories named in `hide` are covered with an empty tmpfs even when they lie below a bind.
- ipc and uts namespaces: no shared SysV/POSIX IPC with the host.

Where namespaces are unavailable (unshare refused, an unknown architecture, a mount refused) or disabled
(`namespaces=False`), the guard falls back to the *plain mode* (the layers below, without the kernel
isolation) and says what is missing in the result (`isolation_missing`).

Both modes: the program process runs `exec(program, {})` under a wall-clock timer exactly like the
official HumanEval-V harness, with rlimits (CPU, address space, file size, open files, tasks, no core),
PR_SET_NO_NEW_PRIVS, Landlock where the kernel has it (no writes outside the work directory, /tmp and
/dev/shm of the sandbox; no TCP; no signals to outside processes; no mounts), stdin from /dev/null and
captured output. As root with the cgroup-v1 pids controller, a per-program pids cgroup as well.

Result channel. The program process writes one frame (a `pack_record` record) to a pipe that the
guard reads. The guard accepts a verdict only if exactly one frame arrived, it carries the per-run
token (written by the guard into the program's input pipe *after* the program text and read by the
harness only after `exec` returned), and the program process then exited 0 through the harness. Any
other shape (two frames, a frame without the token, a frame followed by a signal or another exit code,
garbage, a flood) is a failure with the reason. What stays possible from inside the interpreter, as in
the official harness (where a program can append "passed" to the result list and `os._exit(0)`): a
program written against this harness can read the token from its input pipe, write a well-formed frame
and `os._exit(0)`; it can also monkeypatch the harness's own code in its interpreter. Such a program
only changes its own verdict.
"""

from __future__ import annotations

import ctypes
import errno as errnos
import fcntl
import marshal
import os
import resource
import select
import signal
import sys
import time


# --- records: what the program process and the guard report -------------------------------------
def pack_record(record: dict[str, str]) -> bytes:
    """Length-prefixed UTF-8 key/value strings. Trivially and safely parsed from untrusted bytes (unlike
    marshal), and cheap: importing json alone costs ~7 ms of CPU per sandbox (it pulls in re)."""
    out = bytearray()
    for key, value in record.items():
        for text in (key, value):
            raw = text.encode("utf-8", "surrogatepass")
            out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


def unpack_record(data: bytes) -> dict[str, str] | None:
    """The inverse of pack_record; None for anything malformed."""
    items, offset = [], 0
    while offset < len(data):
        size = int.from_bytes(data[offset : offset + 4], "big")
        if offset + 4 > len(data) or offset + 4 + size > len(data):
            return None
        try:
            items.append(data[offset + 4 : offset + 4 + size].decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            return None
        offset += 4 + size
    if len(items) % 2:
        return None
    return dict(zip(items[::2], items[1::2]))


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long
_LIBC.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_LIBC.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

# --- Landlock (Linux >= 5.13; TCP >= 6.7; scoped signals and abstract sockets >= 6.12) ----------------
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


def landlock_confine(writable: list[str]) -> list[str]:
    """Deny writes outside `writable` (and /dev/null), TCP bind/connect, and signals/abstract unix
    sockets outside the domain. Returns the protections applied (empty without Landlock)."""
    abi = _LIBC.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return []
    fs = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE
    fs |= _FS_REFER if abi >= 2 else 0
    fs |= _FS_TRUNCATE if abi >= 3 else 0
    attr = _RulesetAttr(
        fs, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0, (_SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX) if abi >= 6 else 0
    )
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _LIBC.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return []
    file_rights = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
    for path, rights in [(p, fs) for p in writable] + [("/dev/null", file_rights)]:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rule = _PathBeneathAttr(rights, fd)
        _LIBC.syscall(_SYS_ADD_RULE, ruleset, ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
        os.close(fd)
    _LIBC.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, required by landlock_restrict_self
    if _LIBC.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
        os.close(ruleset)
        return []
    os.close(ruleset)
    applied = ["landlock:fs-write"]
    if abi >= 4:
        applied.append("landlock:tcp")
    if abi >= 6:
        applied.append("landlock:signal+abstract-unix")
    return applied


# --- namespaces and mounts -------------------------------------------------------------------------
_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
NAMESPACES = (("user", _CLONE_NEWUSER), ("pid", _CLONE_NEWPID), ("net", _CLONE_NEWNET), ("mount", _CLONE_NEWNS), ("ipc", _CLONE_NEWIPC), ("uts", _CLONE_NEWUTS))
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_SYS_MOUNT_SETATTR, _AT_RECURSIVE = 442, 0x8000
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 1, 2, 4
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "ppc64": 203, "s390x": 217, "i686": 217, "armv7l": 218}
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = 1, 4
DEVICES = ("null", "zero", "full", "random", "urandom")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None
    _check(_LIBC.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {fstype or source} on {target}")


def _make_readonly(path: str, *, recursive: bool = True) -> None:
    """Read-only, nosuid, nodev for a bind and every mount below it (mount_setattr keeps locked flags)."""
    attr = _MountAttr(_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV, 0, 0, 0)
    flags = _AT_RECURSIVE if recursive else 0
    result = _LIBC.syscall(_SYS_MOUNT_SETATTR, -100, path.encode(), flags, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    _check(0 if result == 0 else -1, f"mount_setattr(read-only) {path}")


def _pivot_root(new_root: str, put_old: str) -> None:
    if hasattr(_LIBC, "pivot_root"):
        _LIBC.pivot_root.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        _check(_LIBC.pivot_root(new_root.encode(), put_old.encode()), "pivot_root")
        return
    number = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(38, f"pivot_root: unknown system call number on {os.uname().machine}")
    _check(0 if _LIBC.syscall(number, new_root.encode(), put_old.encode()) == 0 else -1, "pivot_root")


def drop_capabilities() -> None:
    """Empty effective, permitted and inheritable sets (ambient ones follow), then no_new_privs."""
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _check(_LIBC.capset(ctypes.byref(header), data), "capset")
    _LIBC.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS


def _makedirs(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)


def build_filesystem(settings: dict, fds: dict[str, int], work_dir: str) -> list[str]:
    """In init (pid 1, fresh mount namespace): the new root, then pivot_root into it. Bind sources are
    O_PATH descriptors the holder opened in this mount namespace (so a uid that cannot traverse, say,
    /root can still get the interpreter bound from /root/.pyenv). Returns notes on what is missing."""
    notes: list[str] = []
    cap = int(settings["file_size_bytes"])
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing we mount propagates to the host
    new_root = "/tmp"  # any existing directory of this private mount namespace would do
    _mount("tmpfs", new_root, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=4m")
    for link, target in settings["links"]:
        _makedirs(os.path.dirname(new_root + link))
        os.symlink(target, new_root + link)
    # the private /tmp first: a bind below it (a virtual environment or checkout under /tmp) must lie on top
    # of it, not be covered by it
    _makedirs(new_root + "/tmp")
    _mount("tmpfs", new_root + "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={cap}")
    for path in settings["binds"]:
        target = new_root + path
        if os.path.isdir(f"/proc/self/fd/{fds[path]}"):
            _makedirs(target)
        else:
            _makedirs(os.path.dirname(target))
            open(target, "a").close()  # noqa: SIM115 - a mount point for a file
        _mount(f"/proc/self/fd/{fds[path]}", target, None, _MS_BIND | _MS_REC)
        _make_readonly(target)
    _makedirs(new_root + "/proc")
    # fresh procfs of the new pid namespace; must precede the pivot (the kernel wants a visible procfs)
    _mount("proc", new_root + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    _makedirs(new_root + "/dev")
    _mount("tmpfs", new_root + "/dev", "tmpfs", _MS_NOSUID | _MS_NOEXEC, "mode=0755,size=64k")
    for name in DEVICES:
        open(f"{new_root}/dev/{name}", "a").close()  # noqa: SIM115
        _mount(f"/dev/{name}", f"{new_root}/dev/{name}", None, _MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{new_root}/dev/{name}")
    _makedirs(new_root + "/dev/shm")
    _mount("tmpfs", new_root + "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={cap}")
    _makedirs(new_root + work_dir)
    _mount(f"/proc/self/fd/{fds[work_dir]}", new_root + work_dir, None, _MS_BIND)
    for hidden in settings["hide"]:
        target = new_root + hidden
        if os.path.isdir(target) and not os.path.islink(target):
            _mount("tmpfs", target, "tmpfs", _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=4k,mode=0555")
    _makedirs(new_root + "/.old_root")
    _pivot_root(new_root, new_root + "/.old_root")
    os.chdir("/")
    _check(_LIBC.umount2(b"/.old_root", _MNT_DETACH), "umount old root")
    os.rmdir("/.old_root")
    _mount(None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    try:  # no nested user namespace (a program could otherwise regain capabilities in one)
        with open("/proc/sys/user/max_user_namespaces", "w") as fh:
            fh.write("0")
    except OSError as exc:
        notes.append(f"nested user namespaces not blocked ({exc.strerror})")
    return notes


# --- program process -------------------------------------------------------------------------------
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
    """Best-effort network block at the Python level (plain mode only; bypassable through `_socket`)."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("network access is disabled in the sandbox")

    for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        setattr(socket.socket, name, refuse)
    socket.create_connection = refuse  # type: ignore[assignment]


def _set_rlimits(settings: dict, nproc: int | None) -> None:
    def lim(kind: int, value: int) -> None:
        try:
            _soft, hard = resource.getrlimit(kind)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass

    lim(resource.RLIMIT_CPU, int(settings["cpu_seconds"]))
    if settings.get("memory_bytes"):
        lim(resource.RLIMIT_AS, int(settings["memory_bytes"]))
    lim(resource.RLIMIT_FSIZE, int(settings["file_size_bytes"]))
    lim(resource.RLIMIT_NOFILE, int(settings["open_files"]))
    lim(resource.RLIMIT_CORE, 0)
    if nproc is not None:
        lim(resource.RLIMIT_NPROC, nproc)


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


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def program_process(settings: dict, work_dir: str, fds: dict[str, int], mode: str, cgroup: str | None) -> None:
    """Body of the program process; never returns. Everything that does not depend on the program
    (confinement, imports) happens before the program text arrives on `fds['go']`."""
    result_fd, go_fd = fds["result"], fds["go"]
    applied: list[str] = []
    try:
        if cgroup and mode == "plain":
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
        os.setpgid(0, 0)
        max_tasks = int(settings["max_processes"])
        if mode == "ns":
            drop_capabilities()
            nproc: int | None = max_tasks + 2  # counted per (user namespace, uid): holder and init too
            writable = [work_dir, "/tmp", "/dev/shm"]
        else:
            if os.getuid() == 0 and settings.get("drop_uid") is not None:
                uid = int(settings["drop_uid"])
                try:  # refused where "root" is itself confined (a user namespace that denies setgroups)
                    os.setgroups([])
                    os.setresgid(uid, uid, uid)
                    os.setresuid(uid, uid, uid)
                    applied.append(f"uid:{uid}")
                except OSError as exc:
                    applied.append(f"note:uid {uid} refused ({exc.strerror})")
            _LIBC.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
            # counted per uid on the host: only meaningful when not root
            nproc = _count_own_processes() + max_tasks if os.getuid() != 0 else None
            writable = [work_dir]
        os.chdir(work_dir)
        sys.path.extend(settings.get("sys_path") or [])
        if settings.get("landlock", True):
            applied += landlock_confine(writable)
        if mode == "plain":
            _guard_sockets()
            applied.append("python-socket-guard")
        _set_rlimits(settings, nproc)
        applied.append(f"rlimits(tasks={nproc if nproc is not None else 'unlimited'})")
        header = _read_exactly(go_fd, 4)
        if len(header) < 4:  # the caller gave the spare up
            os._exit(0)
        source = _read_exactly(go_fd, int.from_bytes(header, "big")).decode("utf-8", "surrogatepass")
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds["out"], 1)
        os.dup2(fds["out"], 2)
        os.close(devnull)
        os.close(fds["out"])
    except BaseException as exc:  # noqa: BLE001 - report anything as a harness error
        _report(result_fd, {"status": "error", "setup": "1", "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        os._exit(3)
    stdout, stderr = _CappedWriteOnly(int(settings["output_cap"])), _CappedWriteOnly(int(settings["output_cap"]))
    sys.stdout, sys.stderr, sys.stdin = stdout, stderr, _CappedWriteOnly(0)  # type: ignore[assignment]
    timeout = float(settings["timeout"])
    me = os.getpid()

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutException("Timed out!")

    signal.signal(signal.SIGALRM, on_alarm)
    outcome: dict
    start = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        exec(compile(source, "<string>", "exec"), {})  # noqa: S102 - the point of the sandbox
        signal.setitimer(signal.ITIMER_REAL, 0)
        outcome = {"status": "passed", "message": "passed"}
    except TimeoutException:
        outcome = {"status": "timeout", "message": f"Test Case Execution Time Out (> {timeout:g} seconds)"}
    except BaseException as exc:  # noqa: BLE001 - official: any BaseException (SystemExit included) fails
        signal.setitimer(signal.ITIMER_REAL, 0)
        outcome = {"status": "failed", "message": str(exc)[:2000], "exception": type(exc).__name__}
    if os.getpid() != me:  # a fork of the program came back into the harness: only the original reports
        os._exit(0)
    outcome["elapsed_s"] = repr(round(time.monotonic() - start, 4))
    outcome["confinement"] = "\n".join(applied)
    outcome["stdout"] = stdout.text()
    outcome["stderr"] = stderr.text()
    try:  # the token sits in the input pipe behind the program text; read only now
        outcome["token"] = _read_exactly(go_fd, 16).hex()
    except OSError:
        outcome["token"] = ""
    _report(result_fd, outcome)
    os._exit(0)


def _report(fd: int, outcome: dict[str, str]) -> None:
    payload = pack_record(outcome)
    data = len(payload).to_bytes(4, "big") + payload
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass


# --- holder and init (namespace mode) ----------------------------------------------------------------
def _send(fd: int, kind: bytes, payload: bytes = b"") -> None:
    """A message to the guard on the status pipe: 1-byte kind, 4-byte length, payload."""
    try:
        os.write(fd, kind + len(payload).to_bytes(4, "big") + payload)
    except OSError:
        pass


def _quiet_stdio() -> None:
    devnull = os.open("/dev/null", os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    os.close(devnull)


def holder_process(settings: dict, work_dir: str, fds: dict[str, int], cgroup: str | None, guard: int) -> None:
    """Creates the namespaces (the guard writes the id maps), opens the bind sources, drops to the
    unprivileged uid and forks init; then waits for init. Never returns."""
    status, step = fds["status"], "start"
    try:
        _quiet_stdio()
        if cgroup:
            step = "joining the pids cgroup"
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
        root = os.geteuid() == 0
        if root:  # the uid stays 0 for now: owner access to root's 0700 directories (lookups of bind sources)
            step = f"dropping supplementary groups and switching to gid {settings['uid']}"
            gid = int(settings["uid"])
            os.setgroups([])
            os.setresgid(gid, gid, gid)
        flags = 0
        for _name, flag in NAMESPACES:
            flags |= flag
        step = "unshare(user, pid, net, mount, ipc, uts)"
        _check(_LIBC.unshare(flags), step)
        _send(status, b"U")
        if os.read(fds["ctl"], 1) != b"M":
            os._exit(1)
        step = "opening the bind sources"
        opened = {path: os.open(path, os.O_PATH) for path in [*settings["binds"], work_dir]}
        if root:
            step = f"switching to uid {settings['uid']}"
            uid = int(settings["uid"])
            os.setresuid(uid, uid, uid)  # the only uid mapped; keeps the namespace's capabilities
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != guard:
            os._exit(1)
        step = "forking init"
        init = os.fork()
        if init == 0:
            init_process(settings, work_dir, {**fds, **opened})
        _send(status, b"I", init.to_bytes(4, "big"))
        for fd in (fds["result"], fds["out"], fds["go"], status, fds["ctl"], *opened.values()):
            os.close(fd)
        while True:
            try:
                pid, _ = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == init:
                break
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001
        _send_error(status, exc, step)
        os._exit(1)


def _send_error(fd: int, exc: BaseException, step: str) -> None:
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if isinstance(exc, OSError) and step in detail:
        text = f"{type(exc).__name__}: {detail}"
    else:
        text = f"{step}: {type(exc).__name__}: {detail}"
    _send(fd, b"E", marshal.dumps([getattr(exc, "errno", None), text]))


def init_process(settings: dict, work_dir: str, fds: dict[str, int]) -> None:
    """Pid 1 of the sandbox: builds the filesystem view, forks the program process, reports its wait
    status to the guard, and exits, which makes the kernel kill whatever is left in the namespace."""
    status, step = fds["status"], "building the filesystem view"
    try:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 ignores default-action signals from inside
        notes = build_filesystem(settings, fds, work_dir)
        step = "forking the program process"
        for path in [*settings["binds"], work_dir]:
            os.close(fds[path])
        _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # the program may not ptrace or read init
        program = os.fork()
        if program == 0:
            os.close(status)
            os.close(fds["ctl"])
            program_process(settings, work_dir, fds, "ns", None)
        for fd in (fds["result"], fds["out"], fds["go"], fds["ctl"]):
            os.close(fd)
        _send(status, b"R", marshal.dumps(notes))
        program_status = None
        while program_status is None:
            try:
                pid, wait_status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == program:
                program_status = wait_status
        left = sum(1 for entry in os.listdir("/proc") if entry.isdigit() and entry != "1")
        _send(status, b"X", marshal.dumps([program_status, left]))
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001
        _send_error(status, exc, step)
        os._exit(1)


# --- guard -------------------------------------------------------------------------------------------
_PIDS_V1 = "/sys/fs/cgroup/pids"


def make_pids_cgroup(limit: int) -> str | None:
    """A per-program cgroup (v1 pids controller) capping processes and threads, where we may create one
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
        for pid in cgroup_pids(path):
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


def _proc_table() -> list[tuple[int, int, int, bytes]]:
    """(pid, ppid, session, state) of every process visible in /proc."""
    table = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            table.append((int(entry), int(fields[1]), int(fields[3]), fields[0]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def _session_members(sid: int, exclude: int) -> list[int]:
    """Live (non-zombie) processes of session `sid`, except `exclude`."""
    return [pid for pid, _ppid, session, state in _proc_table() if session == sid and pid != exclude and state != b"Z"]


def _leftovers() -> list[int]:
    """Live processes of the guard's session and every live descendant of the guard: as a subreaper the
    guard inherits orphans, so a daemon that left the session and cleared its environment is found too."""
    me, sid = os.getpid(), os.getsid(0)
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, ppid, _session, _state in table:
        children.setdefault(ppid, []).append(pid)
    found, stack = set(), list(children.get(me, []))
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack += children.get(pid, [])
    found |= {pid for pid, _ppid, session, _state in table if session == sid}
    live = {pid for pid, _ppid, _session, state in table if state != b"Z"}
    return sorted((found & live) - {me})


def _signal_all(pids: list[int], signum: int) -> int:
    sent = 0
    for pid in pids:
        try:
            os.kill(pid, signum)
            sent += 1
        except OSError:
            pass
    return sent


def _kill_session() -> int:
    """Kill every other member of the guard's session and every descendant (plain mode).

    A fork bomb regrows while its members are killed one by one (each kill frees a slot for a sibling's
    next fork), and a starved guard scans /proc slowly, so killing alone can lose the race forever. So the
    members are stopped first (a stopped process cannot fork), until a scan finds no running member that is
    not stopped yet, and only then killed."""
    killed = 0
    for _ in range(200):
        _reap_all()
        members = _leftovers()
        if not members:
            break
        stopped: set[int] = set()
        for _ in range(100):
            running = [pid for pid in members if pid not in stopped]
            if not running:
                break
            _signal_all(running, signal.SIGSTOP)
            stopped.update(running)
            members = _leftovers()
        killed += _signal_all(sorted(stopped | set(members)), signal.SIGKILL)
        time.sleep(0.001)
    _reap_all()
    return killed


def _count_tasks() -> int:
    """Tasks on the machine (the watchdog's cheap first check: one small read, even under a fork bomb)."""
    try:
        with open("/proc/loadavg", "rb") as fh:
            return int(fh.read().split()[3].split(b"/")[1])
    except (OSError, IndexError, ValueError):
        return sum(1 for entry in os.listdir("/proc") if entry.isdigit())


def _frames(data: bytes) -> tuple[list[bytes], int]:
    """Split the result channel into length-prefixed frames; returns (frames, trailing garbage bytes)."""
    frames, offset = [], 0
    while offset + 4 <= len(data):
        size = int.from_bytes(data[offset : offset + 4], "big")
        if offset + 4 + size > len(data):
            break
        frames.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return frames, len(data) - offset


_RESULT_CAP = 1 << 20
_STATUSES = ("passed", "failed", "timeout")


def judge_channel(data: bytes, token: str, program_status: int | None) -> dict:
    """The verdict from the result channel: exactly one well-formed frame, carrying this run's token,
    from a program process that then exited 0. Anything else fails, with the reason."""
    frames, garbage = _frames(data)
    if not frames and not garbage:
        if program_status is None:
            return {"status": "failed", "message": "the program process sent no result and its end was not observed"}
        if os.WIFSIGNALED(program_status):
            return {"status": "failed", "message": f"killed by signal {signal.Signals(os.WTERMSIG(program_status)).name}"}
        return {"status": "failed", "message": f"program process exited with code {os.WEXITSTATUS(program_status)} before finishing"}
    if len(frames) != 1 or garbage:
        return {"status": "failed", "message": f"result channel rejected: {len(frames)} frames and {garbage} stray bytes (exactly one frame expected; forged?)"}
    report = unpack_record(frames[0])
    if report is None:
        return {"status": "failed", "message": "result channel rejected: a malformed frame"}
    if report.get("token") != token:
        if report.get("setup") == "1" and report.get("status") == "error":
            return {"status": "error", "message": str(report.get("message"))[:2000]}
        return {"status": "failed", "message": "result channel rejected: a frame without this run's token (forged?)"}
    if program_status is None or not os.WIFEXITED(program_status) or os.WEXITSTATUS(program_status) != 0:
        how = "was not observed" if program_status is None else (
            f"was killed by signal {os.WTERMSIG(program_status)}" if os.WIFSIGNALED(program_status) else f"exited with code {os.WEXITSTATUS(program_status)}"
        )
        return {"status": "failed", "message": f"result channel rejected: the program process {how} after its report"}
    outcome: dict = {k: report[k] for k in ("status", "message", "exception", "stdout", "stderr") if k in report}
    try:
        outcome["elapsed_s"] = float(report.get("elapsed_s", ""))
    except ValueError:
        pass
    outcome["confinement"] = [item for item in report.get("confinement", "").split("\n") if item]
    if outcome.get("status") not in _STATUSES:
        return {"status": "failed", "message": "result channel rejected: unknown status"}
    outcome.setdefault("message", outcome["status"])
    return outcome


class _StatusReader:
    """Messages from holder and init on the status pipe (kind, payload), read with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.closed = fd, b"", False

    def feed(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.closed = True
        self.buffer += chunk

    def pop(self) -> tuple[bytes, bytes] | None:
        if len(self.buffer) < 5:
            return None
        size = int.from_bytes(self.buffer[1:5], "big")
        if len(self.buffer) < 5 + size:
            return None
        kind, payload = self.buffer[:1], self.buffer[5 : 5 + size]
        self.buffer = self.buffer[5 + size :]
        return kind, payload

    def wait(self, deadline: float) -> tuple[bytes, bytes] | None:
        while True:
            message = self.pop()
            if message is not None or self.closed:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if select.select([self.fd], [], [], remaining)[0]:
                self.feed()


class Guard:
    """Builds one sandbox (namespace mode, else plain), runs one program in it, returns the outcome."""

    def __init__(self, settings: dict, work_dir: str) -> None:
        self.settings, self.work_dir = settings, work_dir
        self.max_tasks = int(settings["max_processes"])
        self.mode = "plain"
        self.missing = ""
        self.confinement: list[str] = []
        self.holder = self.init = self.program = None  # type: int | None
        self.program_status: int | None = None
        self.status: _StatusReader | None = None
        self.cgroup: str | None = None

    # set-up -------------------------------------------------------------------------------------
    def _pipes(self) -> None:
        self.result_r, self.result_w = os.pipe()
        self.out_r, self.out_w = os.pipe()
        self.go_r, self.go_w = os.pipe()

    def _child_fds(self) -> dict[str, int]:
        return {"result": self.result_w, "out": self.out_w, "go": self.go_r}

    def start(self) -> None:
        """Everything before the program arrives. Raises OSError when no process can be created."""
        self._pipes()
        if self.settings.get("namespaces", True):
            self.missing = self._start_namespaces()
        else:
            self.missing = "namespaces: disabled by configuration (Limits.namespaces=False)"
        if self.mode == "plain":
            self._start_plain()
        for fd in (self.result_w, self.out_w, self.go_r):
            os.close(fd)

    def _start_namespaces(self) -> str:
        """Returns '' on success, else what is missing (the caller falls back to the plain mode)."""
        if os.geteuid() == 0 and self.settings.get("cgroup", True):
            self.cgroup = make_pids_cgroup(self.max_tasks + 2)
        status_r, status_w = os.pipe()
        ctl_r, ctl_w = os.pipe()
        guard = os.getpid()
        try:
            holder = os.fork()
        except OSError:
            for fd in (status_r, status_w, ctl_r, ctl_w):
                os.close(fd)
            raise
        if holder == 0:
            os.close(status_r)
            os.close(ctl_w)
            holder_process(self.settings, self.work_dir, {**self._child_fds(), "status": status_w, "ctl": ctl_r}, self.cgroup, guard)
        self.holder = holder
        os.close(status_w)
        os.close(ctl_r)
        reader = _StatusReader(status_r)
        deadline = time.monotonic() + 20.0
        problem, error = "", None
        message = reader.wait(deadline)
        if message is not None and message[0] == b"U":
            try:
                self._write_id_maps(holder)
                os.write(ctl_w, b"M")
            except OSError as exc:
                problem = f"writing the user namespace's id maps: {exc}"
            while not problem:
                message = reader.wait(deadline)
                if message is None:
                    problem = "the namespace set-up did not answer"
                elif message[0] == b"I":
                    self.init = int.from_bytes(message[1], "big")
                elif message[0] == b"R":
                    notes = marshal.loads(message[1])  # from init, which the program cannot write as
                    break
                else:
                    error, problem = marshal.loads(message[1])
        elif message is not None and message[0] == b"E":
            error, problem = marshal.loads(message[1])
        else:
            problem = "the namespace holder died"
        os.close(ctl_w)
        if problem:
            self._stop_holder()
            os.close(status_r)
            self.init = self.holder = None
            if self.cgroup:
                remove_cgroup(self.cgroup)
                self.cgroup = None
            if error in (errnos.EAGAIN, errnos.ENOMEM):  # transient: a start failure, not a missing feature
                raise OSError(error, problem)
            return f"namespaces: {problem}"
        os.set_blocking(status_r, False)
        self.status = reader
        self.mode = "ns"
        uid = self.settings["uid"] if os.geteuid() == 0 else os.geteuid()
        self.confinement = ["namespaces:" + "+".join(name for name, _ in NAMESPACES), f"uid:{uid}", "no-network", "private-filesystem"]
        self.confinement += [f"note:{note}" for note in notes]
        return ""

    def _write_id_maps(self, pid: int) -> None:
        """Identity map of the one uid/gid the sandbox runs as (written from the parent namespace)."""
        if os.geteuid() == 0:
            uid = gid = int(self.settings["uid"])
        else:
            uid, gid = os.geteuid(), os.getegid()
            with open(f"/proc/{pid}/setgroups", "w") as fh:
                fh.write("deny")
        with open(f"/proc/{pid}/uid_map", "w") as fh:
            fh.write(f"{uid} {uid} 1")
        with open(f"/proc/{pid}/gid_map", "w") as fh:
            fh.write(f"{gid} {gid} 1")

    def _stop_holder(self) -> None:
        for pid in (self.init, self.holder):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if self.holder:
            try:
                os.waitpid(self.holder, 0)
            except ChildProcessError:
                pass
        _reap_all()

    def _start_plain(self) -> None:
        if os.geteuid() == 0 and self.settings.get("cgroup", True) and self.cgroup is None:
            self.cgroup = make_pids_cgroup(self.max_tasks + 1)
        program = os.fork()
        if program == 0:
            for fd in (self.result_r, self.out_r, self.go_w):
                os.close(fd)
            program_process(self.settings, self.work_dir, self._child_fds(), "plain", self.cgroup)
        self.program = program

    # run ----------------------------------------------------------------------------------------
    def abandon(self) -> None:
        """The caller gave the spare up: stop everything without running anything."""
        os.close(self.go_w)
        if self.mode == "ns":
            self._stop_holder()
        else:
            try:
                os.killpg(self.program, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(self.program, signal.SIGKILL)  # type: ignore[arg-type]
                except OSError:
                    pass
            _kill_session()
        if self.cgroup:
            remove_cgroup(self.cgroup)

    def run(self, source: bytes) -> dict:
        token = os.urandom(16)
        pending = len(source).to_bytes(4, "big") + source + token
        try:  # program and token in the pipe at once where it fits
            fcntl.fcntl(self.go_w, 1031, min(max(len(pending), 4096), 1 << 20))  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(self.go_w, False)
        for fd in (self.result_r, self.out_r):
            os.set_blocking(fd, False)
        watched = self.holder if self.mode == "ns" else self.program
        try:
            ended = os.pidfd_open(watched)  # readable once the watched process has exited
        except (OSError, AttributeError):
            ended = None
        baseline = _count_tasks()
        cap = int(self.settings["output_cap"])
        hard_deadline = time.monotonic() + float(self.settings["timeout"]) + float(self.settings["grace"])
        result, output, output_size, verdict = b"", [], 0, None
        readers = {self.result_r, self.out_r} | ({self.status.fd} if self.status else set())
        finished = False
        while not finished:
            if pending:
                try:
                    pending = pending[os.write(self.go_w, pending) :]
                except BlockingIOError:
                    pass
                except OSError:
                    pending = b""
            waits = list(readers) + ([ended] if ended is not None else [])
            ready, _, _ = select.select(waits, [self.go_w] if pending else [], [], 0.005 if ended is None or not self.cgroup and self.mode == "plain" else 0.05)
            for fd in ready:
                if fd == ended:
                    continue
                if self.status and fd == self.status.fd:
                    self.status.feed()
                    if self.status.closed:
                        readers.discard(fd)
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    readers.discard(fd)
                elif fd == self.result_r:
                    if len(result) <= _RESULT_CAP:  # one honest frame is small; a flood only fails the program
                        result += chunk
                else:
                    if output_size < cap:
                        output.append(chunk[: cap - output_size])
                    output_size += len(chunk)
            finished = self._ended(watched)
            if finished:
                break
            if time.monotonic() >= hard_deadline:
                verdict = {"status": "timeout", "message": f"Test Case Execution Time Out (> {float(self.settings['timeout']):g} seconds); killed"}
                break
            # plain mode without a pids cgroup: cheap check first (how many processes exist), exact count on growth
            if self.mode == "plain" and not self.cgroup and _count_tasks() - baseline > self.max_tasks:
                if len(_session_members(os.getsid(0), os.getpid())) > self.max_tasks:
                    verdict = {"status": "failed", "message": f"killed: more than {self.max_tasks} processes"}
                    break
        os.close(self.go_w)
        killed = self._finish()
        if ended is not None:
            os.close(ended)
        result += _drain(self.result_r, _RESULT_CAP)
        output_tail = _drain(self.out_r, 1 << 22)
        if output_size < cap:
            output.append(output_tail[: cap - output_size])
        output_size += len(output_tail)
        if self.status is not None:
            killed += self._program_status_from_init()
        if verdict is None:
            outcome = judge_channel(result, token.hex(), self.program_status)
        else:
            outcome = verdict
        outcome["confinement"] = self.confinement + list(outcome.get("confinement") or []) + (["pids-cgroup"] if self.cgroup else [])
        outcome["isolation_missing"] = self.missing
        outcome["fd_output"] = b"".join(output).decode("utf-8", "replace")
        outcome["fd_output_bytes"] = output_size
        outcome["killed_processes"] = killed
        outcome["pids_cgroup"] = bool(self.cgroup)
        return outcome

    def _ended(self, pid: int | None) -> bool:
        try:
            done, wait_status = os.waitpid(pid, os.WNOHANG)  # type: ignore[arg-type]
        except ChildProcessError:
            return True
        if done == 0:
            return False
        if self.mode == "plain":
            self.program_status = wait_status
        return True

    def _finish(self) -> int:
        """Kill everything the program left (or everything, at the deadline); returns how many."""
        killed = 0
        if self.mode == "ns":
            if self.init:
                try:
                    os.kill(self.init, signal.SIGKILL)  # the kernel kills the whole pid namespace
                except OSError:
                    pass
            try:
                os.waitpid(self.holder, 0)  # type: ignore[arg-type]
            except ChildProcessError:
                pass
        else:
            # The program's process group, even when the program process itself has ended: a fork bomb's
            # children outlive the original (its timer does not pass to them, so it times out alone). One
            # group kill is atomic with respect to fork: no member can create a process after it.
            try:
                os.killpg(self.program, signal.SIGKILL)  # type: ignore[arg-type]
            except OSError:
                pass
        if self.cgroup:
            killed += remove_cgroup(self.cgroup)
        if self.mode == "plain":
            killed += _kill_session()
            if self.program_status is None:
                try:
                    self.program_status = os.waitpid(self.program, os.WNOHANG)[1] or None  # type: ignore[arg-type]
                except ChildProcessError:
                    pass
        _reap_all()
        return killed

    def _program_status_from_init(self) -> int:
        """Read init's report of the program process's wait status; returns how many it left behind."""
        assert self.status is not None
        self.status.feed()
        left = 0
        while True:
            message = self.status.pop()
            if message is None:
                break
            if message[0] == b"X":
                program_status, left = marshal.loads(message[1])
                self.program_status = program_status
        os.close(self.status.fd)
        return int(left or 0)


def _drain(fd: int, limit: int) -> bytes:
    data = b""
    try:
        while len(data) < limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    os.close(fd)
    return data


def _read_program() -> bytes | None:
    """The program text from the caller (4-byte length + UTF-8), or None when the spare is given up."""
    stdin = sys.stdin.buffer
    header = stdin.read(4)
    if len(header) < 4:
        return None
    size = int.from_bytes(header, "big")
    source = stdin.read(size)
    return source if len(source) == size else None


def _emit(outcome: dict) -> None:
    """The outcome for the caller, every value as a string (lists one item per line, booleans '1' or '')."""
    record = {}
    for key, value in outcome.items():
        if isinstance(value, bool):
            value = "1" if value else ""
        elif isinstance(value, (list, tuple)):
            value = "\n".join(str(item) for item in value)
        record[key] = str(value)
    sys.stdout.buffer.write(pack_record(record))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    work_dir, settings_hex = (sys.argv[1:] if argv is None else argv)[:2]
    settings = marshal.loads(bytes.fromhex(settings_hex))  # written by the caller, before any program
    if os.getsid(0) != os.getpid():  # the guard may sweep its whole session: it must be a session of its own
        try:
            os.setsid()
        except OSError:
            sys.exit("sandbox_child.py must lead its own session; start it through lmms_tasks.utils.services.sandbox.run_program")
    try:  # orphaned descendants are re-parented to the guard, which reaps them (no zombies left)
        _LIBC.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
    guard = Guard(settings, work_dir)
    try:
        guard.start()
    except OSError as exc:  # EAGAIN, ENOMEM...: no program process could be created
        if guard.cgroup:
            remove_cgroup(guard.cgroup)
        _emit({"status": "error", "start_error": True, "message": f"sandbox could not start: {type(exc).__name__}: {exc}"})
        return
    source = _read_program()
    if source is None:
        guard.abandon()
        return
    _emit(guard.run(source))


if __name__ == "__main__":
    main()
