"""Backport: `process_results_batch` scores every document before aggregation (patch 0006).

Our judging and code execution run on rank 0 after the gather, as one batch per task, so the per-document
items lmms-eval 0.7.3 hands to its CLT/clustered stderrs, stability metrics and `--baseline` carry no score.
The patch adds `TaskConfig.process_results_batch`: on rank 0, after the gather and before any aggregation,
lmms-eval calls `fn(results, args=...)` once per filter with every document's `process_results` dict and
replaces the metric values (and the filter's logged samples) with what it returns; keys it adds that are
not metrics go to the logged samples only. A fn that declares a `config` parameter also gets the task's
config (`config=task.config`: its metadata and the rest of the YAML, as the task was built). In k-samples mode the per-response results are scored too, one
call per response index j (`repeat=j` when fn declares it).

The shim (the TaskConfig field comes from the `task_config` shim):
- wraps `lmms_eval.evaluator._process_document_results` (a module global looked up at call time): for a
  task with a batch function, each document's result dict gets a hidden doc-id entry (so rank 0 learns the
  gathered order of the documents) and its logged sample a hidden filter tag (0.7.3 does not record which
  filter a sample belongs to); both travel through the multi-process gather with the data they describe;
- wraps `TaskOutput.calculate_aggregate_metric`, the first thing rank 0 runs after the gather: it removes
  the hidden entries, rebuilds each filter's per-document dicts by zipping its metric lists, calls the batch
  function, writes the results back, and updates the filter's logged samples after checking that they are
  the same documents in the same order (by doc id; otherwise the samples are left alone, with a warning).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from lmms_tasks.utils.services.logging import logger

NAME = "batch_scoring"
PATCHES = ("0006-task-batch-scoring",)
DOC_ID = "__lmms_tasks_doc_id__"  # hidden metric: the document's id, gathered with the metrics
FILTER = "__lmms_tasks_filter__"  # hidden logged-sample key: the filter the sample was logged for


def present() -> bool:
    from lmms_tasks.utils.compat import task_config

    return task_config.native("process_results_batch")


def batch_function(task: Any) -> Callable[..., Any] | None:
    fn = getattr(getattr(task, "config", None), "process_results_batch", None)
    return fn if callable(fn) else None


def call(
    fn: Callable[..., Any], documents: list[dict[str, Any]], metrics: list[str], args: Any, config: Any, task_name: str, repeat: int | None = None
) -> list[dict[str, Any]]:
    """`fn(documents, args=args[, config=config][, repeat=repeat])`, checked as the patch checks it."""
    parameters = inspect.signature(fn).parameters
    kwargs: dict[str, Any] = {"args": args}
    if "config" in parameters:
        kwargs["config"] = config
    if repeat is not None and "repeat" in parameters:
        kwargs["repeat"] = repeat
    scored = fn(documents, **kwargs)
    if not isinstance(scored, (list, tuple)) or len(scored) != len(documents):
        raise ValueError(f"{task_name}: process_results_batch must return a list of {len(documents)} dicts (one per document)")
    for position, result in enumerate(scored):
        missing = [m for m in metrics if not isinstance(result, dict) or m not in result]
        if missing:
            raise ValueError(f"{task_name}: process_results_batch result {position} lacks metric(s) {missing}")
    return list(scored)


def apply(output: Any) -> None:
    """What the patched lmms-eval's `TaskOutput.apply_batch_scoring` does, for a 0.7.3 TaskOutput."""
    doc_ids = {key[1]: output.sample_metrics.pop(key) for key in [k for k in output.sample_metrics if k[0] == DOC_ID]}
    tags = [sample.pop(FILTER, None) for sample in output.logged_samples]
    fn = batch_function(output.task)
    if fn is None:
        return
    args = getattr(output.task, "args", None)
    config = getattr(output.task, "config", None)
    warned = False
    for filter_key in dict.fromkeys(f for _, f in output.sample_metrics):
        metrics = [m for m, f in output.sample_metrics if f == filter_key]
        columns = [output.sample_metrics[(m, filter_key)] for m in metrics]
        if len({len(c) for c in columns}) != 1:
            logger.warning(f"{output.task_name}: process_results_batch not applied to filter {filter_key}: its documents returned different metric keys")
            continue
        scored = call(fn, [dict(zip(metrics, values)) for values in zip(*columns)], metrics, args, config, output.task_name)
        for metric in metrics:
            output.sample_metrics[(metric, filter_key)] = [result[metric] for result in scored]
        logged = [sample for sample, tag in zip(output.logged_samples, tags) if tag == filter_key]
        ids = doc_ids.get(filter_key)
        if not logged:
            continue
        if ids is not None and len(logged) == len(scored) and [s.get("doc_id") for s in logged] == list(ids):
            for sample, result in zip(logged, scored):
                sample.update(result)
        elif not warned:
            warned = True
            logger.warning(f"{output.task_name}: the logged samples of filter {filter_key} do not line up with its documents; the batch scores are not written to the samples file")
    _apply_per_response(output, fn, args, config)
    _carry_metadata(output, args)


def _carry_metadata(output: Any, args: Any) -> None:
    """The run's records folder (`services.records`, chosen by the batch step on the run's args) goes into the
    task config lmms-eval saves in the results file (`configs.<task>.metadata.records`): 0.7.3 copied that
    config (`TaskOutput.task_config`) before the batch step ran."""
    from lmms_tasks.utils.services import records

    name = records.chosen(args)
    saved = getattr(output, "task_config", None)
    if name and isinstance(saved, dict):
        saved["metadata"] = {**(saved.get("metadata") or {}), records.RECORDS_KEY: name}


def _apply_per_response(output: Any, fn: Callable[..., Any], args: Any, config: Any) -> None:
    for filter_key in dict.fromkeys(f for _, f in output.per_sample_metrics):
        metrics = [m for m, f in output.per_sample_metrics if f == filter_key]
        columns = [output.per_sample_metrics[(m, filter_key)] for m in metrics]
        if len({len(c) for c in columns}) != 1:
            logger.warning(f"{output.task_name}: process_results_batch not applied to the k-samples of filter {filter_key}")
            continue
        counts = [min(len(column[i]) for column in columns) for i in range(len(columns[0]))]
        for repeat in range(max(counts, default=0)):
            positions = [i for i, count in enumerate(counts) if count > repeat]
            documents = [{m: column[i][repeat] for m, column in zip(metrics, columns)} for i in positions]
            scored = call(fn, documents, metrics, args, config, output.task_name, repeat=repeat)
            for i, result in zip(positions, scored):
                for metric, column in zip(metrics, columns):
                    column[i][repeat] = result[metric]


def install() -> bool:
    from lmms_eval import evaluator
    from lmms_eval.evaluator_utils import TaskOutput

    process_document = evaluator._process_document_results

    def _process_document_results(item: Any, *, task: Any, filter_key: str, reasoning_tags: Any, log_samples: bool) -> Any:
        processed = process_document(item, task=task, filter_key=filter_key, reasoning_tags=reasoning_tags, log_samples=log_samples)
        if batch_function(task) is not None:
            processed.metrics[DOC_ID] = item[0]
            if processed.logged_sample is not None:
                processed.logged_sample[FILTER] = filter_key
        return processed

    _process_document_results.__wrapped__ = process_document  # type: ignore[attr-defined]
    evaluator._process_document_results = _process_document_results

    aggregate = TaskOutput.calculate_aggregate_metric

    def calculate_aggregate_metric(self: Any, bootstrap_iters: int = 100000) -> None:
        apply(self)
        return aggregate(self, bootstrap_iters=bootstrap_iters)

    calculate_aggregate_metric.__wrapped__ = aggregate  # type: ignore[attr-defined]
    TaskOutput.calculate_aggregate_metric = calculate_aggregate_metric
    return True
