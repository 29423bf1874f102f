"""Backport: an aggregation's own `stderr` fills the task's `<metric>_stderr` (patch 0005).

lmms-eval 0.7.3 (`api.metrics.stderr_for_metric`) knows standard errors only for its registered and
bootstrappable aggregations; every task-defined aggregation gets "N/A". With the patch, an aggregation
callable carrying a callable `stderr` attribute (a function of the same per-sample items) supplies it.
The shim wraps `stderr_for_metric` where `TaskOutput.calculate_aggregate_metric` looks it up.
"""

from __future__ import annotations

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


def install() -> bool:
    from lmms_eval import evaluator_utils
    from lmms_eval.api import metrics

    original = metrics.stderr_for_metric

    def stderr_for_metric(metric: Any, bootstrap_iters: int) -> Callable[..., Any] | None:
        own = getattr(metric, "stderr", None)
        if callable(own) and bootstrap_iters > 0:
            return own
        return original(metric, bootstrap_iters)

    stderr_for_metric.__wrapped__ = original  # type: ignore[attr-defined]
    metrics.stderr_for_metric = stderr_for_metric
    evaluator_utils.stderr_for_metric = stderr_for_metric
    return True
