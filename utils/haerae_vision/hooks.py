"""lmms-eval hooks for the two HAERAE-Vision tasks and their group (the task folder's `utils.py` re-exports
the ones its YAMLs name; each task's metric_list names the aggregations here directly).

Each task's `custom_dataset` loader (`load_subtask`, the variant named by its YAML's `dataset_kwargs`) checks
the judge settings (from the metadata lmms-eval passes it) and the data before any model request;
`process_results` only cleans the response (`metrics.process_results`); the batch step (`score_batch`) judges
every item of the task in one cached batch (`metrics.scored_task`) and writes into the items what the
aggregations need (verdict, official value, category mean: `metrics.batch_fields`); the aggregations
(`agg_<metric>`) read those fields. Group `haerae_vision` reports group-only metrics from the subtasks'
results (`group_metric` entries, each aggregation receiving the subtask name of every value): the score of
each question variant (from `haerae_vision_score`) and the under-specification gap, explicit minus original
paired by `question_idx` (from `item_scores`, the judged items' values each task reports).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets

from lmms_tasks.utils.haerae_vision import GAP, VARIANTS, data, metrics, prompting, task_name
from lmms_tasks.utils.services import records
from lmms_tasks.utils.services.data import DataError, metadata_of, task_loader
from lmms_tasks.utils.services.llm_judge.judge import announce
from lmms_tasks.utils.services.llm_judge.verdicts import max_share
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.model_args import warn_about_model_args
from lmms_tasks.utils.services.stats import NA, UNIT_SCORE, fraction_item, unit_item
from lmms_tasks.utils.services.status import inspecting

Item = Mapping[str, Any]


def load_subtask(metadata: Mapping[str, Any] | None = None, variant: Any = None, **_: Any) -> datasets.DatasetDict:
    """The `custom_dataset` of every variant's task (the shared template names it): lmms-eval calls it with the
    task's `metadata` and its `dataset_kwargs`, where the task's YAML declares its question variant
    (`{variant: original}`: the question_<variant> column is what the model and the judge see)."""
    if not isinstance(variant, str) or not variant.isidentifier():
        raise DataError(f"haerae_vision: dataset_kwargs.variant is {variant!r}; expected a question variant such as {list(VARIANTS)}")
    return dataset_for(variant)(metadata=metadata)


def dataset_for(variant: str) -> Callable[..., datasets.DatasetDict]:
    """The loader of one variant's task: the judge settings first (a malformed one stops the
    run before any inference), then the checked, stamped documents, then the judge's preflight (bad data is
    named first: it needs no network)."""
    task = task_name(variant)

    def build(metadata: dict[str, Any]) -> datasets.Dataset:
        config = metrics.judge_config(task, metadata)
        max_share()  # a malformed LMMS_TASKS_UNPARSED_MAX_SHARE stops the run before any inference
        warn_about_model_args(task)
        docs = data.load_docs(variant)
        if not inspecting(metadata):
            announce(config, task)
        return docs

    return task_loader(task, build, source=data.SOURCE, source_split=data.SPLIT)


def doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return prompting.build_messages(doc)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return prompting.images(doc)


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return prompting.question_text(doc)


def doc_to_target(doc: dict[str, Any]) -> str:
    answer = doc.get("answer")
    return "" if answer is None else str(answer)


process_results = metrics.process_results


# -- task aggregations: they read what the batch step (`score_batch`) wrote into the items -----------------


def agg_haerae_vision_score(items: list[Item]) -> float | None:
    """Mean item score over the items the judge answered (a reply without a usable score counts 0,
    officially; a failed request is left out and counted in judge_failures), on the 0-1 scale; None (shown
    N/A) when no request got a reply."""
    scores = metrics.item_scores_of(items)
    return sum(scores.values()) / len(scores) if scores else None


def agg_judge_failures(items: list[Item]) -> int:
    """Judge requests that still failed after their retries: those items are not in the score."""
    return sum(verdict.failed for verdict, _ in metrics.judged_items(items).values())


def agg_judge_unparsed(items: list[Item]) -> int:
    """Judge replies without a usable score (no or several <score> tags): counted 0 in the score."""
    return sum(verdict.unparsed for verdict, _ in metrics.judged_items(items).values())


def agg_category_scores(items: list[Item]) -> dict[str, float]:
    """`{category: mean item score}` over the judged items (same rules as the score; a category with no
    judged item is left out): in results.json, not in the printed table (whose cells are numbers)."""
    return metrics.category_scores_of(items)


def agg_item_scores(items: list[Item]) -> dict[str, float]:
    """`{question_idx: official value}` of every judged item: what the group's paired gap reads (lmms-eval
    hands a group its subtasks' values); in results.json, not in the printed table."""
    return metrics.item_scores_of(items)


SCORE = "haerae_vision_score"


def score_batch(results: Sequence[Mapping[str, Any]], args: Any = None, repeat: int | None = None, config: Any = None) -> list[dict[str, Any]]:
    """The tasks' `process_results_batch`, the one place where the task is judged and its numbers computed (one
    batch per task), by the judge its config names (`config.metadata`: the YAML's `judge:` and what a command
    handed over): every metric's item of each document gets the item's verdict (`services.llm_judge.verdicts`) and,
    for a judged item, its official value (`item_score`) and its category's mean (`category_score`), which
    the aggregations read (`metrics.batch_fields`); every judged item's score (0-1; a reply without a usable
    score is 0) also goes into its `haerae_vision_score` item, as `haerae_vision_score` (what lmms-eval's CLT
    stderr reads) and `score` (/ 100), and into the sample's `unit_score` (/ 100, what --baseline reads); an
    item whose judge request failed gets none. When most replies have no usable score, the run warns and exits 3
    (`services.llm_judge.verdicts.check_unparsed`).

    For the k-samples responses (`repeat` = j) each item's j-th response is judged (into
    `<run's records folder>/repeats/<j>/judgements/`), for lmms-eval's stability metrics."""
    results = [dict(r) for r in results]
    items = [r[SCORE] for r in results if SCORE in r]
    if not items:
        return results
    metadata = metadata_of(config)
    output_dir = records.run_dir(args, metadata)  # this run's own records folder (services.records)
    if repeat is not None and output_dir:
        output_dir = str(Path(output_dir) / "repeats" / str(repeat))
    scored, verdicts = metrics.scored_task(items, args, output_dir=output_dir, check=repeat is None, metadata=metadata)
    fields = metrics.batch_fields(scored, verdicts) if repeat is None else {}
    for result in results:
        qid = str(result[SCORE]["question_idx"]) if SCORE in result else None
        if qid is None:
            continue
        if repeat is None:
            for metric in metrics.BREAKDOWNS:  # a samples file saved before these metrics existed (`score` re-scores it)
                result.setdefault(metric, {f: result[SCORE][f] for f in metrics.ID_FIELDS})
            for metric in metrics.METRICS:
                if isinstance(result.get(metric), dict):
                    result[metric] = {**result[metric], **fields[qid]}
        if qid in scored.failed:
            continue
        value = scored.counted(qid)
        if repeat is None:
            result[SCORE] = unit_item(result[SCORE], SCORE, value)
            result[UNIT_SCORE] = value / 100.0  # lmms-eval's --baseline reports it x100: back on the 0-1 scale
        else:
            result[SCORE] = fraction_item(result[SCORE], SCORE, value)
    return results


# -- group haerae_vision (lmms-eval passes the values, sizes, weight_by_size and each value's subtask) ------


def _variant_value(values: Sequence[Any], subtasks: Sequence[str], variant: str) -> Any:
    by_task = dict(zip(subtasks, values))
    return by_task.get(task_name(variant))


def group_original_score(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> Any:
    """`score_original`: the original-question task's score, reported next to the explicit one."""
    return _variant_value(values, subtasks, "original")


def group_explicit_score(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> Any:
    """`score_explicit`: the explicit-question task's score."""
    return _variant_value(values, subtasks, "explicit")


def _item_scores(values: Sequence[Any], subtasks: Sequence[str]) -> dict[str, dict[str, float]]:
    """Each variant's judged item scores: the tasks' `item_scores` values lmms-eval hands the group."""
    found = {}
    for variant in GAP:
        value = _variant_value(values, subtasks, variant)
        if isinstance(value, Mapping):
            found[variant] = {str(q): float(v) for q, v in value.items()}
    return found


def group_underspec_gap(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float | None:
    """`underspec_gap`: explicit minus original, paired by question_idx over the items both tasks had judged
    (0-1 scale), from the two tasks' `item_scores`. A gap that cannot be formed (a variant
    missing, no shared item) is logged and reported as None rather than raised: raising here would discard
    the finished run."""
    try:
        return metrics.paired_gap(_item_scores(values, subtasks))
    except ValueError as exc:
        logger.error(f"haerae_vision underspec_gap not computed: {exc}")
        return None


def _underspec_gap_stderr(
    stderrs: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = (), values: Sequence[Any] = ()
) -> float | str:
    """The gap's paired standard error: SD(per-item differences, ddof=1) / sqrt(n_pairs) (not the two
    tasks' standard errors combined: the same items are asked both ways), from the tasks' `item_scores`
    (`values`, handed to a group `.stderr` that declares them)."""
    try:
        return metrics.paired_gap_stderr(_item_scores(values, subtasks))
    except ValueError:
        return NA


group_original_score.stderr = lambda stderrs, sizes=None, weight_by_size=False, subtasks=(): _variant_value(stderrs, subtasks, "original")  # type: ignore[attr-defined]
group_explicit_score.stderr = lambda stderrs, sizes=None, weight_by_size=False, subtasks=(): _variant_value(stderrs, subtasks, "explicit")  # type: ignore[attr-defined]
group_underspec_gap.stderr = _underspec_gap_stderr  # type: ignore[attr-defined]


def group_sum(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> int:
    """The group's judge_failures / judge_unparsed: the subtasks' counts added."""
    return int(sum(int(v) for v in values))
