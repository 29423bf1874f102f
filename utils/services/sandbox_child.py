"""Inside bubblewrap, the harness runs one program as the official HumanEval-V harness does; settings come on argv, the
program (length-prefixed) then the run's token on stdin. It writes b"R" once up, then, after `exec` returned, one frame
carrying the token, read from the pipe only then: `judge_channel` accepts exactly one such frame from a process that
then exited 0, so writing frames cannot turn a failure into a pass. As officially, a program written against this
harness can still forge its own verdict."""

from __future__ import annotations

import contextlib
import io
import marshal
import os
import resource
import signal
import sys
import time

RESULT_CAP = 1 << 20


def pack_record(record: dict[str, str]) -> bytes:
    """Length-prefixed UTF-8 key/value strings: safe to parse from untrusted bytes, cheaper than importing json (~7 ms)."""
    texts = [text.encode("utf-8", "surrogatepass") for item in record.items() for text in item]
    return b"".join(len(raw).to_bytes(4, "big") + raw for raw in texts)


def _frames(data: bytes) -> tuple[list[bytes], int]:
    """Split length-prefixed items; returns (items, trailing garbage bytes)."""
    frames, offset = [], 0
    while offset + 4 <= len(data) and offset + 4 + (size := int.from_bytes(data[offset : offset + 4], "big")) <= len(data):
        frames.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return frames, len(data) - offset


class TimeoutException(Exception):  # raised by the wall-clock timer inside the program, as officially
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise TimeoutException("Timed out!")


class _CappedWriteOnly(io.StringIO):
    """sys.stdout/sys.stderr stand-in, as officially (a StringIO that cannot be read), keeping the first `cap` characters."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap, self.kept = cap, ""

    def write(self, text: str) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        self.kept += text[: self.cap - len(self.kept)]
        return len(text)

    def read(self, *args: object) -> str:
        raise OSError("stream is write-only")

    readline = readlines = read

    def readable(self) -> bool:
        return False


def _read_exactly(fd: int, size: int, data: bytes = b"") -> bytes:
    while len(data) < size and (chunk := os.read(fd, size - len(data))):
        data += chunk
    return data


def _report(fd: int, outcome: dict[str, str]) -> None:
    payload = pack_record(outcome)
    with contextlib.suppress(OSError):
        os.write(fd, len(payload).to_bytes(4, "big") + payload)  # a pipe write of any size completes (blocking fd)


def main(work_dir: str, settings_hex: str) -> None:
    """Set up (rlimits soft == hard, at most the evaluator's hard ones), run `exec(program, {})` under the official timer."""
    settings = marshal.loads(bytes.fromhex(settings_hex))  # written by the evaluator, before any program
    result_fd, nproc = int(settings["result_fd"]), int(settings["max_processes"]) + 2  # per (user namespace, uid): bwrap's init and this process count
    os.write(result_fd, b"R")  # the sandbox is up
    try:
        os.chdir(work_dir)
        sys.path.extend(settings["sys_path"])
        limits = {"CPU": settings["cpu_seconds"], "AS": settings["memory_bytes"], "FSIZE": settings["file_size_bytes"], "NOFILE": settings["open_files"], "CORE": 0, "NPROC": nproc}
        for name, value in limits.items():
            kind, hard = getattr(resource, f"RLIMIT_{name}"), resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))
        go = os.dup(0)  # the program, then the token; the program's own stdin is /dev/null
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        source = _read_exactly(go, int.from_bytes(_read_exactly(go, 4), "big")).decode("utf-8", "surrogatepass")
    except BaseException as exc:  # noqa: BLE001 - report anything as a harness error
        _report(result_fd, {"status": "error", "setup": "1", "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        os._exit(3)
    sys.stdout, sys.stderr, sys.stdin = _CappedWriteOnly(settings["output_cap"]), _CappedWriteOnly(settings["output_cap"]), _CappedWriteOnly(0)
    out, err, me, start, timeout = sys.stdout, sys.stderr, os.getpid(), time.monotonic(), float(settings["timeout"])
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
    outcome.update(elapsed_s=repr(round(time.monotonic() - start, 4)), confinement=f"rlimits(tasks={nproc})", stdout=out.kept, stderr=err.kept)  # type: ignore[attr-defined]
    outcome["token"] = _read_exactly(go, 16).hex()  # the token sits in the input pipe behind the program text; read only now
    _report(result_fd, outcome)
    os._exit(0)


def judge_channel(data: bytes, token: str, status: int) -> dict:
    """The verdict from the result channel (after the b"R"): exactly one well-formed frame, carrying this run's token,
    from a program process that then exited 0 (`status`: its wait status). Anything else fails, with the reason."""
    frames, garbage = _frames(data)
    signalled = os.WIFSIGNALED(status)
    ended = f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}" if signalled else f"exited with code {os.WEXITSTATUS(status)}"
    if not frames and not garbage:
        return {"status": "failed", "message": ended if signalled else f"program process {ended} before finishing"}
    if len(frames) != 1 or garbage:
        return {"status": "failed", "message": f"result channel rejected: {len(frames)} frames and {garbage} stray bytes (exactly one frame expected; forged?)"}
    items, garbage = _frames(frames[0])
    try:
        texts = [item.decode("utf-8", "surrogatepass") for item in items]
    except UnicodeDecodeError:
        garbage = 1
    if garbage or len(items) % 2:
        return {"status": "failed", "message": "result channel rejected: a malformed frame"}
    report = dict(zip(texts[::2], texts[1::2]))
    if report.get("token") != token:
        if report.get("setup") == "1" and report.get("status") == "error":
            return {"status": "error", "message": report.get("message", "")[:2000]}
        return {"status": "failed", "message": "result channel rejected: a frame without this run's token (forged?)"}
    if status != 0:
        return {"status": "failed", "message": f"result channel rejected: the program process {ended.replace('killed', 'was killed')} after its report"}
    if report.get("status") not in ("passed", "failed", "timeout"):
        return {"status": "failed", "message": "result channel rejected: unknown status"}
    outcome: dict = {k: report[k] for k in ("status", "message", "exception", "stdout", "stderr") if k in report}
    try:
        outcome["elapsed_s"] = float(report.get("elapsed_s", ""))
    except ValueError:
        pass
    return {**outcome, "confinement": [item for item in report.get("confinement", "").split("\n") if item]}


if __name__ == "__main__":
    main(*sys.argv[1:3])
