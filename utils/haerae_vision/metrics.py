"""Per-document results and the aggregation step: judge every item once, then the official aggregation.

`process_results` only cleans the response and returns a JSON-friendly item per metric (the same dict
under every metric key), so inference and judging are separable (`python -m lmms_tasks score` re-runs
the aggregation from a samples file). Every aggregation function below calls `scored_task`, which sends
the task's items to the shared judge client in one batch (memoized in-process, cached on disk), so the
several metrics of one task cost one batch.

Official aggregation (earlier repo's `merge_scores.ipynb`, spec 3.5): a missing score (judge transport
failure, no / several `<score>` tags, zero denominator) counts as 0.0 in the mean; scores are not clipped;
scale 0-1. Per-category means use the same rule. The group reports the gap explicit - original, paired by
`question_idx` over the items both variants scored.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_tasks.utils.services.cache import content_key
from lmms_tasks.utils.compat.group_inputs import GroupInput, payloads
from lmms_tasks.utils.haerae_vision import VARIANTS
from lmms_tasks.utils.haerae_vision.judging import DEFAULT_JUDGE_MODEL, JUDGE_PARAMS, judge_message_batch, parse_score, template_sha256
from lmms_tasks.utils.haerae_vision.prompting import clean_response
from lmms_tasks.utils.services.logging import logger

METRICS = ("haerae_vision_score", "judge_failures", "category_scores", "judge_info", "underspec_gap")
ITEM_FIELDS = ("task", "variant", "question_idx", "category", "question_used", "checklist_text", "response")


class ItemError(ValueError):
    """A per-document item is malformed; the message names the task and question_idx at fault."""


def variant_metric(variant: str) -> str:
    """`score_original` / `score_explicit`: the task's score under a name the group can report."""
    return f"score_{variant}"


# -- per document ----------------------------------------------------------------------------------------


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """One item per metric key (the same dict): ids, category, and the cleaned judge inputs."""
    raw = results[0] if results else ""
    item = {
        "task": str(doc["hv_task"]),
        "variant": str(doc["hv_variant"]),
        "question_idx": str(doc["question_idx"]),
        "category": "" if doc.get("category") is None else str(doc["category"]),
        "question_used": str(doc["question_used"]),
        "checklist_text": str(doc["checklist_text"]),
        "response": clean_response(raw),
    }
    keys = (*METRICS, variant_metric(item["variant"]))
    return {key: item for key in keys}


# -- judging ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredTask:
    """One task's judged items: score per question_idx (None = failed or unparseable), category per id."""

    task: str
    variant: str
    scores: dict[str, float | None]
    categories: dict[str, str]
    judge_info: str

    @property
    def n(self) -> int:
        return len(self.scores)

    @property
    def failures(self) -> int:
        return sum(1 for s in self.scores.values() if s is None)

    def counted(self, qid: str) -> float:
        """The official aggregation value of one item: its score, or 0.0 when it has none."""
        score = self.scores[qid]
        return 0.0 if score is None else float(score)

    def mean(self, ids: Iterable[str] | None = None) -> float:
        ids = list(self.scores) if ids is None else list(ids)
        return sum(self.counted(q) for q in ids) / len(ids) if ids else 0.0

    def category_means(self) -> dict[str, float]:
        by_category: dict[str, list[str]] = defaultdict(list)
        for qid, category in self.categories.items():
            by_category[category].append(qid)
        return {category: self.mean(by_category[category]) for category in sorted(by_category)}


def _validated(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Items in question_idx order, checked; a malformed or conflicting item raises naming it."""
    by_id: dict[str, dict[str, Any]] = {}
    task = None
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ItemError(f"HAERAE-Vision item {position}: expected a dict, got {type(item).__name__}")
        missing = [f for f in ITEM_FIELDS if f not in item]
        label = f"HAERAE-Vision task {item.get('task')!r} question_idx={item.get('question_idx')!r}"
        if missing:
            raise ItemError(f"{label}: item lacks field(s) {missing}")
        if item["variant"] not in VARIANTS:
            raise ItemError(f"{label}: unknown variant {item['variant']!r}")
        if task is not None and item["task"] != task:
            raise ItemError(f"{label}: items of two tasks ({task!r}, {item['task']!r}) in one aggregation")
        task = item["task"]
        clean = {f: str(item[f]) for f in ITEM_FIELDS}
        previous = by_id.get(clean["question_idx"])
        if previous is not None and previous != clean:
            raise ItemError(f"{label}: two different results for one question_idx")
        by_id[clean["question_idx"]] = clean
    return [by_id[k] for k in sorted(by_id, key=_id_order)]


def _id_order(qid: str) -> tuple[int, int | str]:
    return (0, int(qid)) if qid.lstrip("-").isdigit() else (1, qid)


_requests_lock = threading.Lock()
_requests_memo: dict[str, list[Any]] = {}


def _judge_requests(items: list[dict[str, Any]]) -> list[Any]:
    """One JudgeRequest per item (memoized: several metrics of a task build the same list)."""
    from lmms_tasks.utils.services.judge import JudgeRequest

    key = content_key(items)
    with _requests_lock:
        cached = _requests_memo.get(key)
    if cached is not None:
        return cached
    texts = judge_message_batch([(item["question_used"], item["response"], item["checklist_text"]) for item in items])
    requests = [
        JudgeRequest(
            key=item["question_idx"],
            messages=[{"role": "user", "content": text}],
            params=dict(JUDGE_PARAMS),
            meta={"task": item["task"], "question_idx": item["question_idx"], "category": item["category"]},
        )
        for item, text in zip(items, texts)
    ]
    with _requests_lock:
        _requests_memo[key] = requests
    return requests


def make_process_docs(variant: str) -> Any:
    """`process_docs` of one variant's task: the judge settings first (a malformed one stops the run before
    any inference), then the checked documents; any error stops the run (`run_status.stops_run`)."""
    import datasets

    from lmms_tasks.utils.haerae_vision import data, task_name
    from lmms_tasks.utils.services.status import stops_run
    from lmms_tasks.utils.services.model_args import warn_about_model_args

    task = task_name(variant)

    @stops_run(task)
    def process_docs(dataset: datasets.Dataset | None) -> datasets.Dataset:
        judge_config(task)
        warn_about_model_args(task)
        return data.load_docs(variant)

    process_docs.__name__ = f"process_docs_{variant}"
    return process_docs


def judge_config(task: str) -> Any:
    """The task's judge settings (official defaults < LMMS_TASKS_JUDGE_* < YAML metadata.judge).

    Also called from `process_docs`, so a malformed setting stops the run before any inference.
    """
    from lmms_tasks.utils.services.judge import JudgeConfig

    return JudgeConfig.resolve(task=task, default_model=DEFAULT_JUDGE_MODEL, defaults=JUDGE_PARAMS)


def scored_task(items: Iterable[Mapping[str, Any]], args: Any = None) -> ScoredTask:
    """Judge the task's items (one memoized, cached batch) and return their official scores."""
    from lmms_tasks.utils.services.judge import judge_batch, judge_summary_metric

    checked = _validated(items)
    if not checked:
        raise ItemError("HAERAE-Vision aggregation received no items")
    task, variant = checked[0]["task"], checked[0]["variant"]
    config = judge_config(task)
    batch = judge_batch(
        task=task,
        requests=_judge_requests(checked),
        parse=parse_score,
        config=config,
        output_dir=getattr(args, "output_path", None),
        prompt_sha256=template_sha256(),
    )
    scores = {item["question_idx"]: batch.outcomes[item["question_idx"]].parsed for item in checked}
    categories = {item["question_idx"]: item["category"] for item in checked}
    return ScoredTask(task=task, variant=variant, scores=scores, categories=categories, judge_info=judge_summary_metric(batch))


# -- task aggregations -----------------------------------------------------------------------------------


def aggregate_score(items: list[Mapping[str, Any]], args: Any = None) -> float:
    """Mean item score, a missing score counting 0 (official), on the 0-1 scale."""
    return scored_task(items, args).mean()


def aggregate_judge_failures(items: list[Mapping[str, Any]], args: Any = None) -> int:
    """Items without a score: judge transport failures plus unparseable judge replies."""
    return scored_task(items, args).failures


def aggregate_category_scores(items: list[Mapping[str, Any]], args: Any = None) -> dict[str, float]:
    """Mean score per category (Korean names as in the data), missing scores counting 0."""
    return scored_task(items, args).category_means()


def aggregate_judge_info(items: list[Mapping[str, Any]], args: Any = None) -> str:
    """Judge provenance: model, endpoint, prompt sha256, counts and tokens."""
    return scored_task(items, args).judge_info


def paired_scores(variant: str, scores: Mapping[str, float]) -> GroupInput:
    """A task's per-item scores for the group's gap (`GroupInput` payload: variant and scores by question_idx)."""
    text = f"{variant}: {len(scores)} items scored; the gap is reported by group haerae_vision"
    return GroupInput(text, {"variant": variant, "scores": dict(scores)})


def aggregate_paired_scores(items: list[Mapping[str, Any]], args: Any = None) -> GroupInput:
    """The `underspec_gap` value of one task: its counted per-item scores, for the group to pair."""
    scored = scored_task(items, args)
    return paired_scores(scored.variant, {qid: scored.counted(qid) for qid in scored.scores})


# -- group aggregations (lmms-eval calls them with the subtasks' values, sizes and weight_by_size) --------


def underspec_gap(original: Mapping[str, float], explicit: Mapping[str, float]) -> tuple[float, int]:
    """Mean of explicit - original over the question_idx both variants scored, and how many that is."""
    common = sorted(set(original) & set(explicit), key=_id_order)
    if not common:
        raise ValueError("HAERAE-Vision gap: the original and explicit runs share no question_idx")
    return sum(explicit[q] - original[q] for q in common) / len(common), len(common)


def group_underspec_gap(metrics: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False) -> float | None:
    """The group's `underspec_gap`: explicit minus original, paired by question_idx (0-1 scale).

    Runs after every task is scored, so a gap that cannot be formed (a variant missing, no shared item)
    is logged and reported as None rather than raised: raising here would discard the finished run.
    """
    try:
        return paired_gap(metrics)
    except (TypeError, ValueError) as exc:
        logger.error(f"haerae_vision underspec_gap not computed: {exc}")
        return None


def paired_gap(metrics: Sequence[Any]) -> float:
    """explicit - original from the subtasks' `paired_scores`; raises when they cannot be paired."""
    by_variant = {payload["variant"]: payload["scores"] for payload in payloads(metrics, "underspec_gap")}
    missing = [v for v in VARIANTS if v not in by_variant]
    if missing:
        raise ValueError(f"HAERAE-Vision gap needs both variants; missing {missing}")
    original, explicit = by_variant["original"], by_variant["explicit"]
    gap, n = underspec_gap(original, explicit)
    if n != len(original) or n != len(explicit):
        logger.warning(f"haerae_vision gap over the {n} items both variants scored ({len(original)} original, {len(explicit)} explicit)")
    return gap


def group_sum(metrics: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False) -> int:
    """The group's judge_failures: the subtasks' counts added."""
    return int(sum(int(m) for m in metrics))
