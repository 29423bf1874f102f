"""Unbiased pass@k (Chen et al. 2021) exactly as the official `evaluate.py` computes, rounds and omits it.

numpy is used for the product and the mean so that float rounding (and hence the 1-decimal result)
matches the official scorer bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k), as the numerically stable product; 1.0 when n - c < k."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def official_k(sample_num: int) -> int:
    """The official scorer reports pass@1 for one sample per task and pass@3 otherwise."""
    return 1 if sample_num == 1 else 3


def pass_at_k_mean(passed_by_task: Mapping[str, Sequence[bool | int]], k: int) -> float | None:
    """100 * mean over tasks of the per-task estimate, unrounded; None (omitted, quirk H11) when any task
    has fewer than k samples or there is no task."""
    if not passed_by_task:
        return None
    counts = [(len(v), sum(int(bool(x)) for x in v)) for v in passed_by_task.values()]
    if any(n < k for n, _ in counts):
        return None
    return mean_of_estimates([pass_at_k(n, c, k) for n, c in counts])


def mean_of_estimates(estimates: Sequence[float]) -> float:
    """100 * the mean of per-task pass@k estimates (0-1, in task order), unrounded: numpy's mean, as the
    official scorer takes it (the batch step computes each estimate once; the aggregations average them)."""
    return float(np.array(estimates).mean()) * 100


def pass_at_k_score(passed_by_task: Mapping[str, Sequence[bool | int]], k: int) -> float | None:
    """The official number: round(100 * mean over tasks, 1); None when the official scorer omits it."""
    mean = pass_at_k_mean(passed_by_task, k)
    return None if mean is None else round(mean, 1)
