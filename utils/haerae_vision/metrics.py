"""Per-document results and the aggregation step: judge every item once, then the official aggregation.

`process_results` only cleans the response and returns a JSON-friendly item per metric (the same dict
under every metric key), so inference and judging are separable (`python -m lmms_tasks score` re-runs
the aggregation from a samples file). Every aggregation function below calls `scored_task`, which sends
the task's items to the shared judge client in one batch (memoized in-process, cached on disk), so the
several metrics of one task cost one batch.

Official aggregation (earlier repo's `merge_scores.ipynb`, spec 3.5): a reply without a usable score (no
or several `<score>` tags, zero denominator) counts as 0.0 in the mean; scores are not clipped; scale 0-1.
A judge request that still fails after its retries has no reply at all: it is never averaged as a 0 (the
official script would have a score for it had the call gone through). The mean is over the items the judge
answered; the failed ones are counted in `judge_failures` and make the run's exit status 3 (incomplete).
Per-category means use the same rules. The group reports the gap explicit - original, paired by
`question_idx` over the items both variants had judged: each task's latest `ScoredTask` is kept by task name
(`scored`), and the group aggregation, which lmms-eval runs on the same rank right after the tasks', looks
both up by the subtask names it receives.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_tasks.utils.haerae_vision import VARIANTS
from lmms_tasks.utils.haerae_vision.judging import DEFAULT_JUDGE_MODEL, JUDGE_PARAMS, judge_message_batch, parse_score, template_sha256
from lmms_tasks.utils.haerae_vision.prompting import clean_response
from lmms_tasks.utils.services.cache import content_key
from lmms_tasks.utils.services.logging import logger

METRICS = ("haerae_vision_score", "judge_failures", "judge_unparsed")
ITEM_FIELDS = ("task", "variant", "question_idx", "category", "question_used", "checklist_text", "response")


class ItemError(ValueError):
    """A per-document item is malformed; the message names the task and question_idx at fault."""


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
    return {key: item for key in METRICS}


# -- judging ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredTask:
    """One task's judged items: score per question_idx (None = no usable score), category per id, and the
    ids whose judge request failed (no reply after retries; their score is None too)."""

    task: str
    variant: str
    scores: dict[str, float | None]
    categories: dict[str, str]
    judge_info: str
    failed: frozenset[str] = frozenset()

    @property
    def n(self) -> int:
        return len(self.scores)

    @property
    def judged(self) -> list[str]:
        """The ids the judge answered (a reply, usable or not), in the scores' order."""
        return [q for q in self.scores if q not in self.failed]

    @property
    def failures(self) -> int:
        """Judge requests that failed after their retries (transport failures)."""
        return len(self.failed)

    @property
    def unparsed(self) -> int:
        """Replies without a usable score (counted 0, officially)."""
        return sum(1 for q in self.judged if self.scores[q] is None)

    def counted(self, qid: str) -> float:
        """The official aggregation value of a judged item: its score, or 0.0 when the reply had none."""
        score = self.scores[qid]
        return 0.0 if score is None else float(score)

    def mean(self, ids: Iterable[str] | None = None) -> float:
        """Mean over the judged items among `ids` (default: all); 0.0 when none was judged."""
        judged = [q for q in (self.scores if ids is None else ids) if q not in self.failed]
        return sum(self.counted(q) for q in judged) / len(judged) if judged else 0.0

    def stderr(self) -> float | str:
        """SD(judged item scores, ddof=1) / sqrt(n_judged), on the 0-1 scale."""
        from lmms_tasks.utils.services.stats import clt_stderr

        return clt_stderr(self.counted(q) for q in self.judged)

    def category_means(self) -> dict[str, float]:
        by_category: dict[str, list[str]] = defaultdict(list)
        for qid, category in self.categories.items():
            if qid not in self.failed:
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


def judge_config(task: str) -> Any:
    """The task's judge settings (official defaults < LMMS_TASKS_JUDGE_* < YAML metadata.judge).

    Also called by the task's data loader, so a malformed setting stops the run before any inference.
    """
    from lmms_tasks.utils.services.judge import JudgeConfig

    return JudgeConfig.resolve(task=task, default_model=DEFAULT_JUDGE_MODEL, defaults=JUDGE_PARAMS)


def scored_task(items: Iterable[Mapping[str, Any]], args: Any = None, output_dir: str | None = None, remember: bool = True) -> ScoredTask:
    """Judge the task's items (one memoized, cached batch) and return their official scores.

    The judge summary (`<output_path>/judgements/<task>.summary.json`) also gets the task's per-category
    means (`category_scores`) and the one-line `judge_info`. `output_dir` overrides the run's output path
    (k-samples responses are judged into their own folder); `remember=False` leaves `scored(task)`, which
    the group's gap reads, to the task's own documents."""
    from lmms_tasks.utils.services.judge import add_to_summary, judge_batch, judge_summary_metric

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
        output_dir=output_dir or getattr(args, "output_path", None),
        prompt_sha256=template_sha256(),
    )
    scores = {item["question_idx"]: batch.outcomes[item["question_idx"]].parsed for item in checked}
    categories = {item["question_idx"]: item["category"] for item in checked}
    failed = frozenset(item["question_idx"] for item in checked if batch.outcomes[item["question_idx"]].error is not None)
    result = ScoredTask(task=task, variant=variant, scores=scores, categories=categories, judge_info=judge_summary_metric(batch), failed=failed)
    if "category_scores" not in batch.summary:
        add_to_summary(batch, {"category_scores": result.category_means(), "judge_info": result.judge_info})
    if remember:
        with _scored_lock:
            _scored[task] = result
    return result


_scored_lock = threading.Lock()
_scored: dict[str, ScoredTask] = {}


def scored(task: str) -> ScoredTask | None:
    """The latest `ScoredTask` of `task` in this process (None if it was not scored here)."""
    with _scored_lock:
        return _scored.get(task)


# -- the under-specification gap ----------------------------------------------------------------------


def underspec_gap(original: Mapping[str, float], explicit: Mapping[str, float]) -> tuple[float, int]:
    """Mean of explicit - original over the question_idx both variants scored, and how many that is."""
    common = sorted(set(original) & set(explicit), key=_id_order)
    if not common:
        raise ValueError("HAERAE-Vision gap: the original and explicit runs share no question_idx")
    return sum(explicit[q] - original[q] for q in common) / len(common), len(common)


def _judged_scores(task: ScoredTask) -> dict[str, float]:
    return {q: task.counted(q) for q in task.judged}


def paired_gap(by_variant: Mapping[str, ScoredTask]) -> float:
    """explicit - original over the items both variants had judged; raises when they cannot be paired."""
    original, explicit = _paired(by_variant)
    gap, n = underspec_gap(original, explicit)
    if n != len(original) or n != len(explicit):
        logger.warning(f"haerae_vision gap over the {n} items both variants had judged ({len(original)} original, {len(explicit)} explicit)")
    return gap


def paired_gap_stderr(by_variant: Mapping[str, ScoredTask]) -> float | str:
    """SD(explicit - original per shared item, ddof=1) / sqrt(n_pairs): the paired standard error of the gap."""
    from lmms_tasks.utils.services.stats import clt_stderr

    original, explicit = _paired(by_variant)
    return clt_stderr(explicit[q] - original[q] for q in set(original) & set(explicit))


def _paired(by_variant: Mapping[str, ScoredTask]) -> tuple[dict[str, float], dict[str, float]]:
    missing = [v for v in VARIANTS if v not in by_variant]
    if missing:
        raise ValueError(f"HAERAE-Vision gap needs both variants; missing {missing}")
    return _judged_scores(by_variant["original"]), _judged_scores(by_variant["explicit"])
