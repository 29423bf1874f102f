"""The run's fault registry: what a service could not finish, and the exit status that follows from it.

Services (the judge client, the code sandbox) report here when work they were given cannot be completed
(judge requests still failing after their retries, programs the sandbox could not run); the run's outputs
are still written, but its numbers are not final. Whoever ends the run reads the registry:

- lmms-eval, when it has a run-status API (`lmms_eval.api.run_status`, proposed upstream by our patch
  series): every report is forwarded to it and the `lmms-eval` command exits with its status;
- an lmms-eval without that API ends with status 0 unless the process's own code sets `exit_code()`;
- a re-scoring command chooses its own exit status from the faults of the task it re-scored.

This module knows nothing of how lmms-eval ends a process; it only records. The exit statuses below are
the same for every entry point.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EXIT_DATA = 1  # bad data stopped the run before any model request (a `DataError` carries it)
EXIT_INCOMPLETE = 3  # outputs written, but some judgements or executions failed: numbers are not final
EXIT_FAILED = 4  # an error ended the evaluation (lmms-eval writes no results for it)


@dataclass(frozen=True)
class Fault:
    code: int
    task: str
    message: str


_faults: list[Fault] = []
_lock = threading.Lock()


def record(fault: Fault) -> None:
    """Add a fault. Never logs (a log sink may call this) and never raises."""
    with _lock:
        _faults.append(fault)


def record_incomplete(task: str, message: str) -> None:
    """Scoring of `task` is incomplete; the run's outputs are still written. Logged once, and forwarded to
    lmms-eval's run-status API when it has one, so its command exits with `EXIT_INCOMPLETE` by itself."""
    from lmms_tasks.utils.services.logging import logger

    record(Fault(EXIT_INCOMPLETE, task, message))
    logger.error(f"{task}: {message}")
    report = _runner_report_incomplete()
    if report is not None:
        report(task, message)


def _runner_report_incomplete():  # noqa: ANN202 - Callable[[str, str], None] | None
    try:
        module = importlib.import_module("lmms_eval.api.run_status")
    except ImportError:
        return None
    return getattr(module, "report_incomplete", None)


def faults(task: str | None = None) -> list[Fault]:
    with _lock:
        return [f for f in _faults if task is None or f.task == task]


def clear() -> None:
    with _lock:
        _faults.clear()


def exit_code() -> int:
    """The status the recorded faults call for: the highest code recorded, 0 when there is none (so a
    run with a failed judgement and an evaluation error exits `EXIT_FAILED`, not `EXIT_INCOMPLETE`)."""
    with _lock:
        return max((f.code for f in _faults), default=0)


INSPECTING = "inspecting_documents"  # the metadata key a command sets when it only looks at the documents


def inspecting(metadata: Mapping[str, Any] | None) -> bool:
    """The task's documents are loaded to be looked at (`media-stats` says so in the metadata it builds the
    task with), not evaluated: checks that guard only what an evaluation does (HumanEval-V's code-execution
    opt-in, a judge's preflight) do not apply. lmms-eval hands the loader the metadata; a run never sets it."""
    return (metadata or {}).get(INSPECTING) is True
