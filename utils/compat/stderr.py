"""Backport: an aggregation's own `stderr` fills the task's `<metric>_stderr` (patch 0005).

lmms-eval 0.7.3 (`api.metrics.stderr_for_metric`) knows standard errors only for its registered and
bootstrappable aggregations; every task-defined aggregation gets "N/A". With the patch, an aggregation
callable carrying a callable `stderr` attribute (a function of the same per-sample items, given the CLI
args too when it declares `args`, like the aggregation) supplies it. The shim wraps `stderr_for_metric`
where `TaskOutput.calculate_aggregate_metric` looks it up, and that method, to know the task's args.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

NAME = "stderr"
PATCHES = ("0005-metrics-aggregation-stderr",)


def _probe(items: list[float]) -> float:
    return 0.0


_probe.stderr = lambda items: 0.0  # type: ignore[attr-defined]


def present() -> bool:
    from lmms_eval.api.metrics import stderr_for_metric

    return stderr_for_metric(_probe, bootstrap_iters=100000) is _probe.stderr  # type: ignore[attr-defined]


_current = threading.local()  # the args of the task whose metrics are being aggregated


def _declares_args(fn: Callable[..., Any]) -> bool:
    try:
        return "args" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def install() -> bool:
    from lmms_eval import evaluator_utils
    from lmms_eval.api import metrics

    original = metrics.stderr_for_metric

    def stderr_for_metric(metric: Any, bootstrap_iters: int) -> Callable[..., Any] | None:
        own = getattr(metric, "stderr", None)
        if not (callable(own) and bootstrap_iters > 0):
            return original(metric, bootstrap_iters)
        if not _declares_args(own):
            return own
        args = getattr(_current, "args", None)
        return lambda items: own(items, args=args)

    aggregate = evaluator_utils.TaskOutput.calculate_aggregate_metric

    def calculate_aggregate_metric(self: Any, bootstrap_iters: int = 100000) -> None:
        _current.args = getattr(self.task, "args", None)
        try:
            return aggregate(self, bootstrap_iters=bootstrap_iters)
        finally:
            _current.args = None

    stderr_for_metric.__wrapped__ = original  # type: ignore[attr-defined]
    calculate_aggregate_metric.__wrapped__ = aggregate  # type: ignore[attr-defined]
    metrics.stderr_for_metric = stderr_for_metric
    evaluator_utils.stderr_for_metric = stderr_for_metric
    evaluator_utils.TaskOutput.calculate_aggregate_metric = calculate_aggregate_metric
    return True
