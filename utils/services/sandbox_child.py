"""The program's side of the sandbox: the harness that runs one program as the official HumanEval-V harness
does. `lmms_tasks.utils.services.sandbox` starts it as `python -I -B -S -c BOOTSTRAP PATH WORKDIR
SETTINGS_HEX`, inside bubblewrap (or, in the fallback, as a plain subprocess), and sends this module's code
(compiled once per caller process), then the program (4-byte length + UTF-8 text) and the run's token, on
its stdin. Standard library only; the package imports its record codec and `judge_channel`.

Inside bubblewrap the harness is the program process itself (pid 2; bubblewrap's init is pid 1, and when
the harness ends the kernel kills everything left in the pid namespace). In the fallback it forks: the
parent waits and exits with the program process's status (code, or 128 + signal, as bubblewrap reports
it), so the program's parent is never the evaluator.

Result channel. The harness writes b"R" when it is up (so the caller tells a sandbox that could not start
from a program that failed), then, after `exec` returned, one frame (a `pack_record` record) carrying the
per-run token, which it reads from its input pipe only then. The caller accepts a verdict only if exactly one
frame arrived, it carries the token, and the program process then exited 0 (`judge_channel`): writing frames
cannot turn a failure into a pass. What stays possible from inside the interpreter, as in the official
harness: a program written against this harness can read the token from its input pipe, write a frame and
`os._exit(0)`, or monkeypatch the harness; it only changes its own verdict.
"""

from __future__ import annotations

import marshal
import os
import resource
import signal
import sys
import time


# --- records: what the program process reports ------------------------------------------------------
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


# --- the program process -------------------------------------------------------------------------------
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
    """Best-effort network block at the Python level (fallback only; bypassable through `_socket`)."""
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


def _report(fd: int, outcome: dict[str, str]) -> None:
    payload = pack_record(outcome)
    data = len(payload).to_bytes(4, "big") + payload
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass


def _wait_and_exit(program: int) -> None:
    """The fallback's parent: wait for the program process and exit with its status, as bubblewrap does."""
    while True:
        pid, status = os.waitpid(program, 0)
        if pid == program and (os.WIFEXITED(status) or os.WIFSIGNALED(status)):
            os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def main(argv: list[str] | None = None) -> None:
    """Set up (rlimits, paths), wait for the program, run `exec(program, {})` under the official timer,
    report one frame; never returns. Everything that does not depend on the program happens before it
    arrives."""
    work_dir, settings_hex = (sys.argv[1:] if argv is None else argv)[:2]
    settings = marshal.loads(bytes.fromhex(settings_hex))  # written by the caller, before any program
    result_fd = int(settings["result_fd"])
    os.write(result_fd, b"R")  # the sandbox is up
    applied: list[str] = []
    try:
        os.chdir(work_dir)
        sys.path.extend(settings.get("sys_path") or [])
        max_tasks = int(settings["max_processes"])
        if settings["isolated"]:
            nproc: int | None = max_tasks + 2  # counted per (user namespace, uid): bubblewrap's init and this process too
        else:
            _guard_sockets()
            applied.append("python-socket-guard")
            # counted per uid on the host: only meaningful when not root
            nproc = _count_own_processes() + max_tasks if os.getuid() != 0 else None
        _set_rlimits(settings, nproc)
        applied.append(f"rlimits(tasks={nproc if nproc is not None else 'unlimited'})")
        go = os.dup(0)  # the program, then the token; the program's own stdin is /dev/null
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        if not settings["isolated"]:
            program = os.fork()
            if program:
                for fd in (go, result_fd, 1, 2):
                    os.close(fd)
                _wait_and_exit(program)
        header = _read_exactly(go, 4)
        if len(header) < 4:  # the caller gave the spare up
            os._exit(0)
        source = _read_exactly(go, int.from_bytes(header, "big")).decode("utf-8", "surrogatepass")
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
        outcome["token"] = _read_exactly(go, 16).hex()
    except OSError:
        outcome["token"] = ""
    _report(result_fd, outcome)
    os._exit(0)


# --- the verdict (read by the caller) ---------------------------------------------------------------------
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


RESULT_CAP = 1 << 20
_STATUSES = ("passed", "failed", "timeout")


def judge_channel(data: bytes, token: str, program_status: int | None) -> dict:
    """The verdict from the result channel (after the b"R"): exactly one well-formed frame, carrying this
    run's token, from a program process that then exited 0 (`program_status`: a wait status). Anything else
    fails, with the reason."""
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
