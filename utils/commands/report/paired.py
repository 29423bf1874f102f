"""Paired differences between two runs that scored the same documents: the one place the report
computes numbers rather than copying them.

For each task both runs evaluated, the samples files (`<stamp>_samples_<task>.jsonl` beside the
results) hold one per-document item under the task's headline metric; the documents that stand for a
unit (a VLM2-Bench pair, a HumanEval-V task, an item) carry the unit's `score`. The runs are compared on
the units both scored (same `doc_id`, and the same ids inside the item where it has them): the mean of
the per-unit differences d = run − baseline, its standard error s_d / sqrt(n) (s_d: the sample standard
deviation of d), the 95% confidence interval mean ± t(0.975, n−1) · SE and the two-sided paired t-test
p-value. A difference is "within noise" when that interval contains 0 (equivalently p ≥ 0.05).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedDifference:
    n: int
    mean_baseline: float
    mean_run: float
    difference: float  # mean of run − baseline
    se: float | None  # None when n < 2
    ci_low: float | None
    ci_high: float | None
    p_value: float | None

    @property
    def within_noise(self) -> bool | None:
        """True when the 95% interval contains 0; None when there is no interval (n < 2)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_low <= 0.0 <= self.ci_high


def paired_difference(baseline: Sequence[float], run: Sequence[float], scale: float = 1.0) -> PairedDifference:
    """The paired comparison of `run` with `baseline` (same units, same order), every number multiplied
    by `scale` (the unit scores' scale to the metric's)."""
    if len(baseline) != len(run):
        raise ValueError(f"paired samples differ in length: {len(baseline)} and {len(run)}")
    n = len(run)
    if n == 0:
        raise ValueError("no paired units")
    a = [float(x) * scale for x in baseline]
    b = [float(x) * scale for x in run]
    diffs = [y - x for x, y in zip(a, b)]
    mean_d = math.fsum(diffs) / n
    mean_a, mean_b = math.fsum(a) / n, math.fsum(b) / n
    if n < 2:
        return PairedDifference(n, mean_a, mean_b, mean_d, None, None, None, None)
    sd = math.sqrt(math.fsum((d - mean_d) ** 2 for d in diffs) / (n - 1))
    se = sd / math.sqrt(n)
    if se == 0.0:  # every difference equal: no spread, the interval is the point
        p = 1.0 if mean_d == 0.0 else 0.0
        return PairedDifference(n, mean_a, mean_b, mean_d, 0.0, mean_d, mean_d, p)
    from scipy.stats import t as student_t

    df = n - 1
    half_width = float(student_t.ppf(0.5 + CONFIDENCE / 2, df)) * se
    p = float(2.0 * student_t.sf(abs(mean_d / se), df))
    return PairedDifference(n, mean_a, mean_b, mean_d, se, mean_d - half_width, mean_d + half_width, min(1.0, p))


__all__ = ["CONFIDENCE", "PairedDifference", "paired_difference"]
