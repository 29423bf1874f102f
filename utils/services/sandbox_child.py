"""The program's side of the sandbox: runs one program as the official HumanEval-V harness does. `sandbox.py`
starts it inside bubblewrap (it is the program process, pid 2) or, in the fallback, as a subprocess that forks so
that the program's parent is never the evaluator. Its stdin brings this module's code, the program and the token.

Result channel: b"R" once up (so a sandbox that did not start is told from a failing program), then, after
`exec` returned, one frame (`pack_record`) carrying the run's token, read from the input pipe only then.
`judge_channel` accepts exactly one frame with the token from a process that then exited 0: writing frames cannot
turn a failure into a pass. As officially, a program written against this harness can still forge its own verdict.
"""

from __future__ import annotations

import contextlib
import io
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
    items, garbage = _frames(data)
    try:
        texts = [item.decode("utf-8", "surrogatepass") for item in items]
    except UnicodeDecodeError:
        return None
    return None if garbage or len(texts) % 2 else dict(zip(texts[::2], texts[1::2]))


def _frames(data: bytes) -> tuple[list[bytes], int]:
    """Split length-prefixed items; returns (items, trailing garbage bytes)."""
    frames, offset = [], 0
    while offset + 4 <= len(data) and offset + 4 + (size := int.from_bytes(data[offset : offset + 4], "big")) <= len(data):
        frames.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return frames, len(data) - offset


# --- the program process -------------------------------------------------------------------------------
class TimeoutException(Exception):  # raised by the wall-clock timer inside the program, as officially
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise TimeoutException("Timed out!")


class _CappedWriteOnly(io.StringIO):
    """sys.stdout/sys.stderr stand-in, as officially (a StringIO that cannot be read), keeping the first `cap` characters."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap, self.parts, self.size = cap, [], 0

    def write(self, text: str) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        self.parts.append(text[: max(0, self.cap - self.size)])
        self.size += len(text)
        return len(text)

    def read(self, *args: object) -> str:
        raise OSError("stream is write-only")

    readline = readlines = read

    def readable(self) -> bool:
        return False


def _refuse(*args: object, **kwargs: object) -> None:
    raise PermissionError("network access is disabled in the sandbox")


def _guard_sockets() -> None:
    """Best-effort network block at the Python level (fallback only; bypassable through `_socket`)."""
    import socket

    for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        setattr(socket.socket, name, _refuse)
    socket.create_connection = _refuse  # type: ignore[assignment]


def _set_rlimits(settings: dict, nproc: int | None) -> None:
    """soft == hard (a program cannot raise them), lowered to the evaluator's own hard limits."""
    limits = {"CPU": settings["cpu_seconds"], "AS": settings["memory_bytes"] or None, "FSIZE": settings["file_size_bytes"], "NOFILE": settings["open_files"], "CORE": 0, "NPROC": nproc}
    for name, value in limits.items():
        kind, hard = getattr(resource, f"RLIMIT_{name}"), resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[1]
        if value is not None:
            value = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
            resource.setrlimit(kind, (value, value))


def _own_processes() -> int:
    count = 0
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            count += os.stat(f"/proc/{entry}").st_uid == os.getuid()
    return count


def _read_exactly(fd: int, size: int, data: bytes = b"") -> bytes:
    while len(data) < size and (chunk := os.read(fd, size - len(data))):
        data += chunk
    return data


def _report(fd: int, outcome: dict[str, str]) -> None:
    payload = pack_record(outcome)
    with contextlib.suppress(OSError):
        os.write(fd, len(payload).to_bytes(4, "big") + payload)  # a pipe write of any size completes (blocking fd)


def main(argv: list[str] | None = None) -> None:
    """Set up (rlimits, paths) before the program arrives, run `exec(program, {})` under the official timer,
    report one frame; never returns."""
    work_dir, settings_hex = (sys.argv[1:] if argv is None else argv)[:2]
    settings = marshal.loads(bytes.fromhex(settings_hex))  # written by the caller, before any program
    result_fd = int(settings["result_fd"])
    os.write(result_fd, b"R")  # the sandbox is up
    applied: list[str] = []
    try:
        os.chdir(work_dir)
        sys.path.extend(settings["sys_path"])
        # tasks are counted per (user namespace, uid): bubblewrap's init and this process count; in the fallback per
        # uid on the host (the evaluator's other processes too; root is not limited)
        nproc: int | None = int(settings["max_processes"]) + 2
        if not settings["isolated"]:
            _guard_sockets()
            applied.append("python-socket-guard")
            nproc = _own_processes() + nproc - 2 if os.getuid() != 0 else None
        _set_rlimits(settings, nproc)
        applied.append(f"rlimits(tasks={nproc if nproc is not None else 'unlimited'})")
        go = os.dup(0)  # the program, then the token; the program's own stdin is /dev/null (the harness's fd 0 was a pipe)
        os.dup2(os.open(os.devnull, os.O_RDONLY, 0), 0)
        if not settings["isolated"]:
            program = os.fork()
            if program:  # the parent: exits with the program process's status, as bubblewrap does
                status = os.waitpid(program, 0)[1]
                os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
        header = _read_exactly(go, 4)
        if len(header) < 4:  # the caller gave the spare up
            os._exit(0)
        source = _read_exactly(go, int.from_bytes(header, "big")).decode("utf-8", "surrogatepass")
    except BaseException as exc:  # noqa: BLE001 - report anything as a harness error
        _report(result_fd, {"status": "error", "setup": "1", "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        os._exit(3)
    stdout, stderr = _CappedWriteOnly(int(settings["output_cap"])), _CappedWriteOnly(int(settings["output_cap"]))
    sys.stdout, sys.stderr, sys.stdin = stdout, stderr, _CappedWriteOnly(0)  # type: ignore[assignment]
    timeout, me, start = float(settings["timeout"]), os.getpid(), time.monotonic()
    signal.signal(signal.SIGALRM, _on_alarm)
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
    outcome["stdout"], outcome["stderr"] = "".join(stdout.parts), "".join(stderr.parts)
    outcome["token"] = _read_exactly(go, 16).hex()  # the token sits in the input pipe behind the program text; read only now
    _report(result_fd, outcome)
    os._exit(0)


# --- the verdict (read by the caller) ---------------------------------------------------------------------
RESULT_CAP = 1 << 20


def judge_channel(data: bytes, token: str, program_status: int) -> dict:
    """The verdict from the result channel (after the b"R"): exactly one well-formed frame, carrying this run's
    token, from a program process that then exited 0 (`program_status`: its wait status). Anything else fails,
    with the reason."""
    frames, garbage = _frames(data)
    ended = f"killed by signal {signal.Signals(os.WTERMSIG(program_status)).name}" if os.WIFSIGNALED(program_status) else f"exited with code {os.WEXITSTATUS(program_status)}"
    if not frames and not garbage:
        return {"status": "failed", "message": ended if os.WIFSIGNALED(program_status) else f"program process {ended} before finishing"}
    if len(frames) != 1 or garbage:
        return {"status": "failed", "message": f"result channel rejected: {len(frames)} frames and {garbage} stray bytes (exactly one frame expected; forged?)"}
    report = unpack_record(frames[0])
    if report is None:
        return {"status": "failed", "message": "result channel rejected: a malformed frame"}
    if report.get("token") != token:
        if report.get("setup") == "1" and report.get("status") == "error":
            return {"status": "error", "message": str(report.get("message"))[:2000]}
        return {"status": "failed", "message": "result channel rejected: a frame without this run's token (forged?)"}
    if program_status != 0:
        return {"status": "failed", "message": f"result channel rejected: the program process {ended.replace('killed', 'was killed')} after its report"}
    if report.get("status") not in ("passed", "failed", "timeout"):
        return {"status": "failed", "message": "result channel rejected: unknown status"}
    outcome: dict = {k: report[k] for k in ("status", "message", "exception", "stdout", "stderr") if k in report}
    try:
        outcome["elapsed_s"] = float(report.get("elapsed_s", ""))
    except ValueError:
        pass
    outcome["confinement"] = [item for item in report.get("confinement", "").split("\n") if item]
    return outcome
