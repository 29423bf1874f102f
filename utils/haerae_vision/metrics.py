"""Per-document results and the aggregation step: judge every item once, then the official aggregation.

`process_results` only cleans the response and returns a JSON-friendly item per metric (the same dict
under every metric key; the two breakdown metrics get the ids only), so inference and judging are
separable (re-scoring from a samples file re-runs the batch step and the aggregations). The batch step
calls `scored_task` once per task: it sends the task's items to the shared judge client in one batch
(cached on disk) and returns the task's scores (`ScoredTask`); the batch step writes into each item its
verdict, its official value and its category's mean (`batch_fields`), and every aggregation reads those
fields (`judged_items`): nothing is rebuilt or re-validated after the batch step.

Official aggregation (earlier repo's `merge_scores.ipynb`, spec 3.5): a reply without a usable score (no
or several `<score>` tags, zero denominator) counts as 0.0 in the mean; scores are not clipped; scale 0-1.
A judge request that still fails after its retries has no reply at all: it is never averaged as a 0 (the
official script would have a score for it had the call gone through). The mean is over the items the judge
answered; the failed ones are counted in `judge_failures` and make the run's exit status 3 (incomplete).
Per-category means (`category_scores`, in the results) use the same rules. The group reports the gap
explicit - original, paired by `question_idx` over the items both variants had judged, from each task's
`item_scores` (the judged items' values, in the results: lmms-eval hands the group the tasks' values).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_tasks.utils.haerae_vision import GAP
from lmms_tasks.utils.haerae_vision.judging import DEFAULT_JUDGE_MODEL, JUDGE_PARAMS, judge_message_batch, parse_score, template_sha256
from lmms_tasks.utils.haerae_vision.prompting import clean_response
from lmms_tasks.utils.services import records
from lmms_tasks.utils.services.llm_judge.verdicts import Verdict, check_unparsed, verdict_fields
from lmms_tasks.utils.services.logging import logger

METRICS = ("haerae_vision_score", "judge_failures", "judge_unparsed", "category_scores", "item_scores")
BREAKDOWNS = ("category_scores", "item_scores")  # dict-valued: in results.json, not in the printed table
ITEM_FIELDS = ("task", "variant", "question_idx", "category", "question_used", "checklist_text", "response")
ID_FIELDS = ("task", "variant", "question_idx", "category")  # what a breakdown metric's item holds
ITEM_SCORE, CATEGORY_SCORE = "item_score", "category_score"  # batch-step fields of a judged item


class ItemError(ValueError):
    """A per-document item is malformed; the message names the task and question_idx at fault."""


# -- per document ----------------------------------------------------------------------------------------


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """One item per metric key (the same dict): ids, category, and the cleaned judge inputs; the breakdown
    metrics' items hold the ids only (the batch step adds the scores)."""
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
    ids = {f: item[f] for f in ID_FIELDS}
    return {key: dict(ids) if key in BREAKDOWNS else item for key in METRICS}


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

    def item_scores(self) -> dict[str, float]:
        """The judged items' official values (a reply without a usable score: 0.0), by question_idx."""
        return {q: self.counted(q) for q in self.judged}

    def category_means(self) -> dict[str, float]:
        """Mean per category over its judged items (categories with none judged are left out), by name."""
        by_category: dict[str, list[str]] = defaultdict(list)
        for qid, category in self.categories.items():
            if qid not in self.failed:
                by_category[category].append(qid)
        return {category: self.mean(by_category[category]) for category in sorted(by_category)}


def _validated(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Items in question_idx order, checked (once per task, by the batch step); a malformed or conflicting
    item raises naming it."""
    by_id: dict[str, dict[str, Any]] = {}
    task = None
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ItemError(f"HAERAE-Vision item {position}: expected a dict, got {type(item).__name__}")
        missing = [f for f in ITEM_FIELDS if f not in item]
        label = f"HAERAE-Vision task {item.get('task')!r} question_idx={item.get('question_idx')!r}"
        if missing:
            raise ItemError(f"{label}: item lacks field(s) {missing}")
        if not isinstance(item["variant"], str) or not item["variant"]:
            raise ItemError(f"{label}: variant {item['variant']!r} is not a name")
        if task is not None and item["task"] != task:
            raise ItemError(f"{label}: items of two tasks ({task!r}, {item['task']!r}) in one aggregation")
        task = item["task"]
        clean = {f: str(item[f]) for f in ITEM_FIELDS}
        previous = by_id.get(clean["question_idx"])
        if previous is not None and {f: previous[f] for f in ITEM_FIELDS} != clean:
            raise ItemError(f"{label}: two different results for one question_idx")
        by_id[clean["question_idx"]] = clean
    return [by_id[k] for k in sorted(by_id, key=_id_order)]


def _id_order(qid: str) -> tuple[int, int | str]:
    return (0, int(qid)) if qid.lstrip("-").isdigit() else (1, qid)


def _judge_requests(items: list[dict[str, Any]]) -> list[Any]:
    """One JudgeRequest per item."""
    from lmms_tasks.utils.services.llm_judge.judge import JudgeRequest

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
    return requests


def judge_config(task: str, metadata: Mapping[str, Any] | None) -> Any:
    """The task's judge settings from the metadata it was handed (official defaults < LMMS_TASKS_JUDGE_* <
    YAML metadata.judge < what a command handed over: `services.llm_judge.judge.JudgeConfig.for_task`).

    Also called by the task's data loader, so a malformed setting stops the run before any inference.
    """
    from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig

    return JudgeConfig.for_task(task, metadata, default_model=DEFAULT_JUDGE_MODEL, defaults=JUDGE_PARAMS)


def scored_task(
    items: Iterable[Mapping[str, Any]], args: Any = None, output_dir: str | None = None, check: bool = True, metadata: Mapping[str, Any] | None = None
) -> tuple[ScoredTask, dict[str, dict[str, Any]]]:
    """Judge the task's items (one cached batch; the batch step calls this once per task) and return their
    official scores and each item's verdict fields (by question_idx).

    The judge summary (`<run's records folder>/judgements/<task>.summary.json`, `services.records`) also gets the one-line `judge_info`
    (the per-category means are in the results: `category_scores`). `output_dir` overrides the run's output path
    (k-samples responses are judged into their own folder); `check`: warn (exit status 3) when most replies
    have no usable score (`services.llm_judge.verdicts.check_unparsed`); `metadata`: the task config's (its judge)."""
    from lmms_tasks.utils.services.llm_judge.judge import add_to_summary, judge_batch, judge_summary_metric

    checked = _validated(items)
    if not checked:
        raise ItemError("HAERAE-Vision aggregation received no items")
    task, variant = checked[0]["task"], checked[0]["variant"]
    config = judge_config(task, metadata)
    batch = judge_batch(
        task=task,
        requests=_judge_requests(checked),
        parse=parse_score,
        config=config,
        output_dir=output_dir or records.run_dir(args, metadata),
        prompt_sha256=template_sha256(),
        metadata=metadata,
    )
    scores = {item["question_idx"]: batch.outcomes[item["question_idx"]].parsed for item in checked}
    categories = {item["question_idx"]: item["category"] for item in checked}
    failed = frozenset(item["question_idx"] for item in checked if batch.outcomes[item["question_idx"]].error is not None)
    result = ScoredTask(task=task, variant=variant, scores=scores, categories=categories, judge_info=judge_summary_metric(batch), failed=failed)
    if "judge_info" not in batch.summary:
        add_to_summary(batch, {"judge_info": result.judge_info})
    if check:
        check_unparsed(task, batch.outcomes)
    return result, {item["question_idx"]: verdict_fields(batch.outcomes[item["question_idx"]]) for item in checked}


def batch_fields(scored: ScoredTask, verdicts: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the batch step writes into every metric's item of each document, by question_idx: the judge's
    verdict (`services.llm_judge.verdicts`) and, for a judged item, its official value (`item_score`: its score, 0.0
    for a reply without one) and its category's mean (`category_score`). Computed here once per task; the
    aggregations read them (`judged_items`)."""
    means = scored.category_means()
    out: dict[str, dict[str, Any]] = {}
    for qid, verdict in verdicts.items():
        fields = dict(verdict)
        if qid not in scored.failed:
            fields.update({ITEM_SCORE: scored.counted(qid), CATEGORY_SCORE: means[scored.categories[qid]]})
        out[qid] = fields
    return out


def judged_items(items: Iterable[Mapping[str, Any]]) -> dict[str, tuple[Verdict, Mapping[str, Any]]]:
    """The task's items by question_idx, in question_idx order (a duplicate counts once), each with the
    verdict the batch step wrote; raises when the batch step did not score them."""
    found: dict[str, Mapping[str, Any]] = {}
    for item in items:
        found[str(item["question_idx"])] = item
    if not found:
        raise ItemError("HAERAE-Vision aggregation received no items")
    return {q: (Verdict.of(found[q], f"HAERAE-Vision task {found[q].get('task')!r} question_idx={q!r}"), found[q]) for q in sorted(found, key=_id_order)}


def item_scores_of(items: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The judged items' official values (`item_score`, written by the batch step), by question_idx in order."""
    return {q: float(item[ITEM_SCORE]) for q, (verdict, item) in judged_items(items).items() if not verdict.failed}


def category_scores_of(items: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The per-category means the batch step wrote (`category_score` of each judged item), by category name."""
    found = {str(item["category"]): float(item[CATEGORY_SCORE]) for verdict, item in judged_items(items).values() if not verdict.failed}
    return {category: found[category] for category in sorted(found)}


# -- the under-specification gap ----------------------------------------------------------------------


def underspec_gap(original: Mapping[str, float], explicit: Mapping[str, float]) -> tuple[float, int]:
    """Mean of explicit - original over the question_idx both variants scored, and how many that is."""
    common = sorted(set(original) & set(explicit), key=_id_order)
    if not common:
        raise ValueError("HAERAE-Vision gap: the original and explicit runs share no question_idx")
    return sum(explicit[q] - original[q] for q in common) / len(common), len(common)


def paired_gap(by_variant: Mapping[str, Mapping[str, float]]) -> float:
    """explicit - original over the items both variants had judged; raises when they cannot be paired."""
    original, explicit = _paired(by_variant)
    gap, n = underspec_gap(original, explicit)
    if n != len(original) or n != len(explicit):
        logger.warning(f"haerae_vision gap over the {n} items both variants had judged ({len(original)} original, {len(explicit)} explicit)")
    return gap


def paired_gap_stderr(by_variant: Mapping[str, Mapping[str, float]]) -> float | str:
    """SD(explicit - original per shared item, ddof=1) / sqrt(n_pairs): the paired standard error of the gap."""
    from lmms_tasks.utils.services.stats import clt_stderr

    original, explicit = _paired(by_variant)
    return clt_stderr(explicit[q] - original[q] for q in set(original) & set(explicit))


def _paired(by_variant: Mapping[str, Mapping[str, float]]) -> tuple[Mapping[str, float], Mapping[str, float]]:
    """The judged items' scores of each variant (by question_idx)."""
    missing = [v for v in GAP if v not in by_variant]
    if missing:
        raise ValueError(f"HAERAE-Vision gap needs both variants it pairs {GAP}; missing {missing}")
    return by_variant[GAP[0]], by_variant[GAP[1]]
