"""Standard errors on the metric's own scale, and the per-unit score fields lmms-eval reads.

Every headline number is a mean over the metric's official unit (a VLM2-Bench pair, a HumanEval-V task, a
HAERAE-Vision item), or a combination of such means. On a unit the standard error is lmms-eval's CLT form:
the sample standard deviation (ddof=1) of the per-unit scores over sqrt(n). The per-unit score is written
into each such metric's item of the document that stands for the unit (`process_results_batch`):

- `item[<score_key>]`: the unit's score on that metric's scale (lmms-eval's `<metric>_stderr_clt` and
  `_stderr_clustered` read it, so they come out on the metric's scale too): the one standard-error route
  of every task metric (lmms-eval's `<metric>_stderr`, its bootstrap route, stays "N/A" for task-defined
  aggregations);
- in the headline metric's item only:
  `item["score"]` and the sample's top-level `unit_score`: the same score / 100. lmms-eval's `--baseline`
  reads them (the current run's `item["score"]`, the baseline file's first numeric field whose name holds
  "score": `unit_score`) and reports the baseline mean, the difference and its CI x100, as points of a
  percentage metric; /100 keeps those on the metric's own scale (for the 0-100 metrics `score` is then
  the 0-1 fraction, lmms-eval's convention; for HAERAE-Vision's 0-1 score it is the score / 100).

In k-samples mode (`--repeats`) the per-response items carry the unit's result as a 0-1 fraction under both
keys instead: lmms-eval's stability metrics assume 0/1 scores (consensus accuracy is a majority vote).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

NA = "N/A"  # lmms-eval's marker for a standard error that cannot be computed
UNIT_SCORE = "unit_score"  # the sample-level field lmms-eval's --baseline loader reads


def mean(values: Iterable[float]) -> float:
    values = [float(v) for v in values]
    return math.fsum(values) / len(values) if values else 0.0


def sample_sd(values: Iterable[float]) -> float | None:
    """The sample standard deviation (ddof=1); None for fewer than two values."""
    values = [float(v) for v in values]
    if len(values) < 2:
        return None
    centre = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - centre) ** 2 for v in values) / (len(values) - 1))


def clt_stderr(values: Iterable[float]) -> float | str:
    """SD(values, ddof=1) / sqrt(n): the standard error of a mean over n units; "N/A" for n < 2."""
    values = [float(v) for v in values]
    sd = sample_sd(values)
    return NA if sd is None else sd / math.sqrt(len(values))


def unit_item(item: Mapping[str, Any], score_key: str, value: float, **fields: Any) -> dict[str, Any]:
    """A copy of a headline item carrying its unit's score: `score_key` on the metric's scale, `score` the
    same / 100 (see the module docstring), plus any identifying `fields` (e.g. a cluster id)."""
    return {**item, **fields, score_key: float(value), "score": float(value) / 100.0}


def metric_item(item: Mapping[str, Any], score_key: str, value: float, **fields: Any) -> dict[str, Any]:
    """A copy of a non-headline metric's item carrying its unit's score under `score_key` (the metric's own
    scale, for lmms-eval's `<metric>_stderr_clt`), plus any identifying `fields` (e.g. a cluster id)."""
    return {**item, **fields, score_key: float(value)}


def fraction_item(item: Mapping[str, Any], score_key: str, fraction: float, **fields: Any) -> dict[str, Any]:
    """A copy of a per-response item (k-samples mode) carrying its score as a 0-1 fraction under both keys:
    lmms-eval's stability metrics (consensus accuracy is a majority vote) expect the 0/1 convention."""
    return {**item, **fields, score_key: float(fraction), "score": float(fraction)}


__all__ = ["NA", "UNIT_SCORE", "clt_stderr", "fraction_item", "mean", "metric_item", "sample_sd", "unit_item"]
