"""Backport: the `lmms-eval` command exits non-zero when scoring is incomplete or an evaluation error was
caught (patch 0003).

lmms-eval 0.7.3's `cli_evaluate` catches every exception of an evaluation, prints it ("Error during
evaluation"), writes no results and returns normally, and nothing can tell it that a task's scoring is
incomplete: every run exits 0. The patch makes `cli_evaluate` return a status (the highest of: each caught
exception's `exit_status`, default 4; and the statuses reported through `lmms_eval.api.run_status`) and the
console script, `python -m lmms_eval` and `lmms-eval eval` exit with it.

The shim gives 0.7.3 the same statuses without depending on how the process was started (the console
script looks up `sys.exit` before the run, so replacing `sys.exit` cannot work there):
- a loguru sink notes each "Error during evaluation" record, with the status the exception being handled
  carries (`exit_status`, e.g. 1 for bad data; else 4); it records and never logs;
- at interpreter exit, if a status is due, it prints the same lines as the patched lmms-eval, runs the
  remaining exit handlers and ends the process with that status (`os._exit`: the only way an exit handler
  can change a status). A process dying of an uncaught exception keeps Python's own status.

It is installed only in the lmms-eval command's process (`lmms-eval ...`, `python -m lmms_eval ...`, each
rank of `accelerate launch -m lmms_eval`); a script calling lmms-eval's Python API keeps its own status.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import threading
from typing import Any

from lmms_tasks.utils.services import status

NAME = "exit_status"
PATCHES = ("0003-cli-exit-status",)
MARKER = "Error during evaluation"

_uncaught = threading.Event()


def present() -> bool:
    return importlib.util.find_spec("lmms_eval.api.run_status") is not None


def running_lmms_eval_cli() -> bool:
    """Whether this process is the lmms-eval command: the only place whose exit status is ours to set."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and (spec.name or "").split(".")[0] == "lmms_eval":
        return True
    return os.path.basename(sys.argv[0] if sys.argv else "") in ("lmms-eval", "lmms_eval")


def _sink(message: Any) -> None:
    """Note an evaluation error lmms-eval caught. Runs inside loguru's handler: it must never log."""
    exc = sys.exc_info()[1]
    code = getattr(exc, "exit_status", status.EXIT_FAILED) if exc is not None else status.EXIT_FAILED
    code = code if isinstance(code, int) and not isinstance(code, bool) else status.EXIT_FAILED  # as the patch does
    text = str(exc).strip().splitlines()[0] if exc is not None and str(exc).strip() else type(exc).__name__ if exc else "see the error above"
    status.record(status.Fault(code, "lmms-eval", f"the evaluation failed and wrote no results: {text}"))


def _is_caught_error(record: dict[str, Any]) -> bool:
    return MARKER in record["message"] and str(record["name"] or "").startswith("lmms_eval")


def summary_lines(code: int) -> list[str]:
    """What the patched lmms-eval prints before exiting non-zero: the status, then each incomplete report."""
    lines = [f"lmms-eval: exit status {code}"]
    lines += [f"  - {f.task}: {f.message}" for f in status.faults() if f.code == status.EXIT_INCOMPLETE]
    return lines


def _excepthook(previous: Any) -> Any:
    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        _uncaught.set()
        previous(kind, value, tb)

    return hook


def _at_exit() -> None:
    code = status.exit_code()
    if code == 0 or _uncaught.is_set():
        return
    for line in summary_lines(code):
        print(line, file=sys.stderr)
    atexit.unregister(_at_exit)
    atexit._run_exitfuncs()  # the handlers registered before ours (logging, torch, multiprocessing) still run
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def install() -> bool:
    if not running_lmms_eval_cli():
        return False
    from loguru import logger

    logger.add(_sink, level="ERROR", filter=_is_caught_error, format="{message}", catch=True)
    sys.excepthook = _excepthook(sys.excepthook)
    atexit.register(_at_exit)
    return True
