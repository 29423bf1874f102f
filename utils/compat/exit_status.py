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

An evaluation ended by an error that carries its `exit_status` (a named condition the user fixes: bad
data, a judge that fails its preflight, the missing code-execution opt-in; its message says how) prints no
traceback, as with the patch: lmms-eval's `traceback.print_exc()` skips it, and the status summary ends with
its one line (`  - <message>`), the last thing the run prints. A bug (any other exception) keeps its traceback.

It is installed only in the lmms-eval command's process (`lmms-eval ...`, `python -m lmms_eval ...`, each
rank of `accelerate launch -m lmms_eval`); a script calling lmms-eval's Python API keeps its own status.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import threading
import traceback
from types import ModuleType
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


def named_status(exc: BaseException | None) -> int | None:
    """The exit status an exception declares (`exit_status`, an int), None for any other (a bug)."""
    code = getattr(exc, "exit_status", None)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _sink(message: Any) -> None:
    """Note an evaluation error lmms-eval caught. Runs inside loguru's handler: it must never log."""
    note_error(sys.exc_info()[1])


def note_error(exc: BaseException | None) -> None:
    """Record the status an error that ended an evaluation calls for (its `exit_status`, else EXIT_FAILED). Never logs."""
    code = named_status(exc)
    text = str(exc).strip().splitlines()[0] if exc is not None and str(exc).strip() else type(exc).__name__ if exc else "see the error above"
    if code is None:  # as the patch does: a bug ends the evaluation with EXIT_FAILED, its traceback printed above
        status.record(status.Fault(status.EXIT_FAILED, "lmms-eval", f"the evaluation failed and wrote no results: {text}"))
    else:  # its one line ends the status summary (`summary_lines`)
        status.record(status.Fault(code, "", text))


class _QuietTraceback:
    """Stands for the `traceback` module inside lmms-eval's CLI: `print_exc()` prints nothing for an error
    that declares its exit status (its one line follows), and the traceback of anything else."""

    def __getattr__(self, name: str) -> Any:
        return getattr(traceback, name)

    def print_exc(self, *args: Any, **kwargs: Any) -> None:
        if named_status(sys.exc_info()[1]) is None:
            traceback.print_exc(*args, **kwargs)


def _cli_module() -> ModuleType | None:
    """lmms-eval's CLI module as this process runs it: `__main__` under `python -m lmms_eval` (and each
    rank of `accelerate launch -m lmms_eval`), else the imported `lmms_eval.__main__` (the console script)."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) == "lmms_eval.__main__" and hasattr(main, "cli_evaluate"):
        return main
    module = sys.modules.get("lmms_eval.__main__")
    return module if hasattr(module, "cli_evaluate") else None


def _is_caught_error(record: dict[str, Any]) -> bool:
    return MARKER in record["message"] and str(record["name"] or "").startswith("lmms_eval")


def summary_lines(code: int) -> list[str]:
    """What the patched lmms-eval prints before exiting non-zero: the status, then each incomplete report, then
    the one line of each evaluation ended by an error that declares its exit status."""
    lines = [f"lmms-eval: exit status {code}"]
    lines += [f"  - {f.task}: {f.message}" for f in status.faults() if f.code == status.EXIT_INCOMPLETE]
    lines += [f"  - {f.message}" for f in status.faults() if f.code != status.EXIT_INCOMPLETE and not f.task]
    return lines


EXIT_INTERRUPTED = 130  # the shell's convention for a process ended by SIGINT (128 + 2)


def interrupted_line(exc: BaseException) -> str:
    """The one line an interrupted run ends with: what was kept, and how to resume. lmms-eval 0.7.3's response cache
    (`--use_cache DIR`) reuses the responses of a finished run only (an interrupted run's are never merged into it),
    and only of deterministic (temperature 0) requests, so the model is asked again."""
    kept = str(exc).strip() or "the run was interrupted"
    return (
        f"lmms-eval: exit status {EXIT_INTERRUPTED} (interrupted): {kept}; the model is asked again "
        "(lmms-eval's `--use_cache <dir>` reuses the responses of a finished run only, of temperature-0 requests) (docs/EXIT_STATUS.md)"
    )


def _excepthook(previous: Any) -> Any:
    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        _uncaught.set()
        if not issubclass(kind, KeyboardInterrupt):
            previous(kind, value, tb)
            return
        # Ctrl-C: one line instead of a traceback, and no wait for the threads still in flight (judge requests):
        # the exit handlers run, then the process ends with 130.
        print(interrupted_line(value), file=sys.stderr)
        atexit.unregister(_at_exit)
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(EXIT_INTERRUPTED)

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
    cli = _cli_module()
    if cli is not None and getattr(cli, "traceback", None) is traceback:
        cli.traceback = _QuietTraceback()
    sys.excepthook = _excepthook(sys.excepthook)
    atexit.register(_at_exit)
    return True
