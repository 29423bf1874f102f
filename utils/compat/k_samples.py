"""Backport: `--repeats K` scores each of the K responses of a task that sets `score_each_repeat: true`, so the
stability metrics appear (patch 0007).

lmms-eval 0.7.3 computes the per-response scores of k-samples mode (expected accuracy, consensus accuracy,
internal variance, consistency rate) only when a document has K requests, but it clones ONE instance K
times, so a document has one request whose `resps` holds the K responses: the stability metrics never
appear. The patch adds the task option `score_each_repeat` (default false; `TaskConfig` accepts it through
the task_config shim) and, for a task that sets it, scores each response with `process_results(doc,
[response])` (after the same reasoning-tag stripping as the filtered response) when a document has one
request with exactly `repeats` responses. A task that does not set it gets the process_results calls 0.7.3
makes, `--repeats` or not: each call may cost a judge call. The shim wraps `lmms_eval.evaluator._process_document_results` (a module global looked up at
call time) to add those scores where 0.7.3 left none; the document's own metrics are untouched. Every
metric of such a document now has per-response values, and a metric whose items carry no score (a count,
any metric other than the task's `score_key`) is skipped quietly rather than with a warning per metric and
task (the patch logs it at debug level): the shim wraps `TaskOutput.calculate_stability_metrics` to leave
those metrics out.

Feature probe: a direct call of `_process_document_results` on a tiny fake task that opts in (repeats 2, one
request with two responses): 0.7.3 returns no per-response scores, the patched lmms-eval two. A probe of the
behaviour, not of a name, so it holds whatever else changes around the function; if the function is
missing or has another signature there is nothing this shim could wrap, and it reports the feature present.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

NAME = "k_samples"
PATCHES = ("0007-evaluator-k-samples-stability",)


def _fake(repeats: int, responses: list[str], score_each_repeat: bool = True) -> tuple[Any, Any]:
    config = SimpleNamespace(repeats=repeats, score_each_repeat=score_each_repeat)
    task = SimpleNamespace(config=config, process_results=lambda doc, results: {"probe": float(results[0] == "a")})
    request = SimpleNamespace(resps=list(responses), filtered_resps={"none": responses[0]}, raw_filtered_resps={}, args=(), token_counts=[], doc={})
    return task, request


def present() -> bool:
    from lmms_eval import evaluator

    process = getattr(evaluator, "_process_document_results", None)
    if process is None:
        return True
    task, request = _fake(2, ["a", "b"])
    try:
        processed = process((0, {}, [request]), task=task, filter_key="none", reasoning_tags=None, log_samples=False)
    except Exception:  # noqa: BLE001 - another signature: nothing to backport onto
        return True
    return bool(getattr(processed, "per_sample_scores", None))


def response_scores(task: Any, doc: Any, request: Any, reasoning_tags: Any) -> dict[str, list[Any]]:
    """Each response of the request scored on its own: {metric: [value per response]}."""
    from lmms_eval.api.reasoning import strip_reasoning_tags

    scores: dict[str, list[Any]] = {}
    for response in request.resps:
        if reasoning_tags is not None and isinstance(response, str):
            response = strip_reasoning_tags(response, reasoning_tags)
        for metric, value in task.process_results(doc, [response]).items():
            scores.setdefault(metric, []).append(value)
    return scores


def install() -> bool:
    from lmms_eval import evaluator

    process = evaluator._process_document_results

    def _process_document_results(item: Any, *, task: Any, filter_key: str, reasoning_tags: Any, log_samples: bool) -> Any:
        processed = process(item, task=task, filter_key=filter_key, reasoning_tags=reasoning_tags, log_samples=log_samples)
        _, doc, requests = item
        config = getattr(task, "config", None)
        repeats = getattr(config, "repeats", 1) or 1
        opted_in = bool(getattr(config, "score_each_repeat", False))
        if opted_in and not processed.per_sample_scores and repeats > 1 and len(requests) == 1 and isinstance(requests[0].resps, list) and len(requests[0].resps) == repeats:
            processed.per_sample_scores.update(response_scores(task, doc, requests[0], reasoning_tags))
        return processed

    _process_document_results.__wrapped__ = process  # type: ignore[attr-defined]
    evaluator._process_document_results = _process_document_results

    from lmms_eval.evaluator_utils import TaskOutput

    stability = TaskOutput.calculate_stability_metrics

    def calculate_stability_metrics(self: Any) -> None:
        score_key = (self.task_config or {}).get("score_key", "score")
        unscored = {key: values for key, values in self.per_sample_metrics.items() if not _has_scores(values, score_key)}
        for key in unscored:
            del self.per_sample_metrics[key]
        try:
            return stability(self)
        finally:
            self.per_sample_metrics.update(unscored)

    calculate_stability_metrics.__wrapped__ = stability  # type: ignore[attr-defined]
    TaskOutput.calculate_stability_metrics = calculate_stability_metrics
    return True


def _has_scores(per_document: list[Any], score_key: str) -> bool:
    """Whether any per-response value is a number or a dict holding `score_key` (what lmms-eval reads)."""
    return any(
        isinstance(x, (int, float)) or (isinstance(x, dict) and score_key in x)
        for scores in per_document
        if isinstance(scores, list)
        for x in scores
    )
