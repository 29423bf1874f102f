"""Make a failed or incomplete evaluation visible to whoever runs it: a clear error and a non-zero exit.

lmms-eval 0.7.3 hides failures from scripts. `cli_evaluate` catches every `Exception` of a run (a data error
in `process_docs`, an unreadable image while requests are built, an error in an aggregation), prints
"Error during evaluation", writes no results and exits 0; `process_docs` itself runs inside a download
step retried 5 times. Our tasks work around both:

- **Bad data stops the run at load time.** Each task's `process_docs` is wrapped by `stops_run`: any error
  while loading and checking the documents is re-raised as `StopEvaluation`, a `BaseException` that
  lmms-eval neither retries nor catches, so the run ends before any model request with the message
  (naming the benchmark, file, row and field) and exit status 1.
- **Faults after generation keep the outputs and fail the exit status.** Judge requests that still fail
  after their retries and executions the sandbox could not complete are recorded here (`record_incomplete`);
  lmms-eval then writes its results and samples as usual, and the process exits with `EXIT_INCOMPLETE`
  instead of 0. An error that lmms-eval swallowed ("Error during evaluation", seen through its logger)
  makes it exit with `EXIT_FAILED`. `install()` (called by every task's `process_docs`) puts the guard
  in place: a `sys.exit` that turns a success status into the fault's code, and a log sink.

`python -m lmms_tasks score` reads the same records to choose its own exit status.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from lmms_tasks.utils.services.logging import logger

EXIT_INCOMPLETE = 3  # outputs written, but some judgements or executions failed: numbers are not final
EXIT_FAILED = 4  # lmms-eval reported an error during evaluation (it writes no results then)

SWALLOWED_MARKER = "Error during evaluation"


class StopEvaluation(BaseException):
    """Stops an lmms-eval run at once (a BaseException: lmms-eval neither retries nor swallows it).

    Raised for data that cannot be evaluated correctly; the message names the benchmark, the file, the
    row or line, the record id and the field."""


@dataclass(frozen=True)
class Fault:
    code: int
    task: str
    message: str


_faults: list[Fault] = []
_lock = threading.Lock()
_installed = False
_real_exit: Callable[..., Any] = sys.exit

F = TypeVar("F", bound=Callable[..., Any])


def record_incomplete(task: str, message: str) -> None:
    """Scoring of `task` is incomplete (the run's outputs are still written); logged as an error."""
    _record(Fault(EXIT_INCOMPLETE, task, message))


def record_failed(task: str, message: str) -> None:
    _record(Fault(EXIT_FAILED, task, message))


def _record(fault: Fault) -> None:
    with _lock:
        _faults.append(fault)
    logger.error(f"{fault.task}: {fault.message}")


def faults(task: str | None = None) -> list[Fault]:
    with _lock:
        return [f for f in _faults if task is None or f.task == task]


def clear() -> None:
    with _lock:
        _faults.clear()


def exit_code() -> int:
    """The status a finished run should have: 0, EXIT_INCOMPLETE or EXIT_FAILED (the worst recorded)."""
    with _lock:
        return max((f.code for f in _faults), default=0)


def _guarded_exit(status: Any = None) -> None:
    code = exit_code()
    if code and status in (None, 0):
        with _lock:
            listed = list(_faults)
        print(f"lmms-tasks: exit status {code}: {len(listed)} problem(s) in this run:", file=sys.stderr)
        for fault in listed[:20]:
            print(f"  - {fault.task}: {fault.message}", file=sys.stderr)
        sys.stderr.flush()
        status = code
    _real_exit(status)


def _sink(message: Any) -> None:
    record = message.record
    if SWALLOWED_MARKER in record["message"] and record["name"].startswith("lmms_eval"):
        _record(Fault(EXIT_FAILED, "lmms-eval", "the run failed and wrote no results (see the traceback above)"))


def running_lmms_eval_cli() -> bool:
    """Whether this process is the lmms-eval command (`lmms-eval ...`, `python -m lmms_eval ...`, a rank
    started by `accelerate launch -m lmms_eval`): the only place the exit status is ours to fix. A user's
    own script calling lmms-eval's Python API, or a test process, keeps its exit status."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and (spec.name or "").split(".")[0] == "lmms_eval":
        return True
    return os.path.basename(sys.argv[0] if sys.argv else "") in ("lmms-eval", "lmms_eval")


def install() -> None:
    """Put the exit-status guard in place (idempotent). Only in the lmms-eval command's process; even
    there nothing changes unless a fault is recorded."""
    global _installed
    with _lock:
        if _installed or not running_lmms_eval_cli():
            return
        _installed = True
    sys.exit = _guarded_exit  # type: ignore[assignment]
    logger.add(_sink, level="ERROR", format="{message}")


_inspecting = threading.Event()


@contextlib.contextmanager
def inspecting_documents() -> Iterator[None]:
    """Documents are loaded to be looked at (`media-stats`), not evaluated: checks that guard only what an
    evaluation does (HumanEval-V's code-execution opt-in) do not apply."""
    _inspecting.set()
    try:
        yield
    finally:
        _inspecting.clear()


def inspecting() -> bool:
    return _inspecting.is_set()


def stops_run(task: str) -> Callable[[F], F]:
    """Decorator for a task's `process_docs`: install the guard; any load or check error stops the run."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def hook(*args: Any, **kwargs: Any) -> Any:
            install()
            try:
                return fn(*args, **kwargs)
            except StopEvaluation:
                raise
            except Exception as exc:  # noqa: BLE001 - every load error must stop the run, not be retried
                raise StopEvaluation(f"{task}: {exc}") from exc

        return hook  # type: ignore[return-value]

    return wrap
