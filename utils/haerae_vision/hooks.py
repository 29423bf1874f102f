"""lmms-eval hooks for the two HAERAE-Vision tasks and their group (the task folder's `utils.py` re-exports
the ones its YAMLs name; the metric template in yaml_templates/ names the aggregations here directly).

Each task's `custom_dataset` loader (`dataset_for`) checks the judge settings and the data before any model
request; `process_results` only cleans the response (`metrics.process_results`); the aggregations
(`agg_<metric>`) judge every item of the task in one memoized, cached batch (`metrics.scored_task`). Group
`haerae_vision` reports group-only metrics from the subtasks' `haerae_vision_score` (`group_metric`
entries, each aggregation receiving the subtask name of every value): the score of each question variant
and the under-specification gap, explicit minus original paired by `question_idx`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import datasets

from lmms_tasks.utils.haerae_vision import TASK_PREFIX, VARIANTS, data, metrics, prompting, task_name
from lmms_tasks.utils.services.data import task_loader
from lmms_tasks.utils.services.judge import announce
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.model_args import warn_about_model_args
from lmms_tasks.utils.services.status import inspecting

Item = Mapping[str, Any]


def dataset_for(task: str) -> Callable[..., datasets.DatasetDict]:
    """The `custom_dataset` loader of one variant's task: the judge settings first (a malformed one stops the
    run before any inference), then the checked, stamped documents."""
    variant = task.removeprefix(TASK_PREFIX)
    if task_name(variant) != task:
        raise ValueError(f"not a HAERAE-Vision task: {task!r}")

    def build() -> datasets.Dataset:
        config = metrics.judge_config(task)
        if not inspecting():
            announce(config, task)
        warn_about_model_args(task)
        return data.load_docs(variant)

    return task_loader(task, build)


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


# -- task aggregations -----------------------------------------------------------------------------------


def agg_haerae_vision_score(items: list[Item], args: Any = None) -> float:
    """Mean item score, a missing score counting 0 (official), on the 0-1 scale."""
    return metrics.scored_task(items, args).mean()


def agg_judge_failures(items: list[Item], args: Any = None) -> int:
    """Items without a score: judge transport failures plus unparseable judge replies."""
    return metrics.scored_task(items, args).failures


def agg_category_scores(items: list[Item], args: Any = None) -> dict[str, float]:
    """Mean score per category (Korean names as in the data), missing scores counting 0."""
    return metrics.scored_task(items, args).category_means()


def agg_judge_info(items: list[Item], args: Any = None) -> str:
    """Judge provenance: model, endpoint, prompt sha256, counts and tokens."""
    return metrics.scored_task(items, args).judge_info


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


def group_underspec_gap(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float | None:
    """`underspec_gap`: explicit minus original, paired by question_idx (0-1 scale), from the two tasks'
    scored items of this run. A gap that cannot be formed (a variant missing, no shared item) is logged and
    reported as None rather than raised: raising here would discard the finished run."""
    found = {}
    for task in subtasks:
        scored = metrics.scored(task)
        if scored is not None and task in {task_name(v) for v in VARIANTS}:
            found[scored.variant] = scored
    try:
        return metrics.paired_gap(found)
    except ValueError as exc:
        logger.error(f"haerae_vision underspec_gap not computed: {exc}")
        return None


def group_sum(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> int:
    """The group's judge_failures: the subtasks' counts added."""
    return int(sum(int(v) for v in values))
