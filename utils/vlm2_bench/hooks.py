"""lmms-eval hooks for the nine VLM2-Bench tasks (the task folder's `utils.py` re-exports these).

`process_results` is cheap and deterministic: it returns one JSON-friendly item per document (ids, gt,
the stripped response, the parse) under every metric name, and the aggregation functions below compute
the official scores from those items, grouping by id. The PC-VID judge runs once per task in the batch step
(`score_batch`, lmms-eval's `process_results_batch`) as one batch through
`lmms_tasks.utils.services.llm_judge.judge.judge_batch`; it writes the verdicts into the items, and the aggregations
are plain functions of them.

Metric names: every subtask exposes its subtask score as `vlm2_score` (the groups average it) and its
score in the paper's exact-match mode as `vlm2_exact_score` (GC pairs by exact "T"/"F" equality, every
other subtask its `vlm2_score`). The numbers that only make sense for the whole benchmark are group-only
metrics of group `vlm2_bench` (`group_metric` entries; each group aggregation receives the subtask name
of every value): `vlm2_img8_score` (8 image subtasks), `vlm2_gap_to_human` (9-subtask mean - 95.16) and
`vlm2_exact_img8_score`. Aggregations are named `agg_<metric>`, group aggregations `group_<what>`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from lmms_tasks.utils.services import records
from lmms_tasks.utils.services.data import DataError, metadata_of, task_loader
from lmms_tasks.utils.services.llm_judge.verdicts import Verdict, check_unparsed, max_share, verdict_fields
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.model_args import warn_about_model_args
from lmms_tasks.utils.services.stats import NA, UNIT_SCORE, fraction_item, metric_item, unit_item
from lmms_tasks.utils.services.status import inspecting
from lmms_tasks.utils.vlm2_bench import HUMAN_OVERALL, IMAGE_SUBTASKS, SUBTASKS, TASK_PREFIX, task_name
from lmms_tasks.utils.vlm2_bench import messages as _messages
from lmms_tasks.utils.vlm2_bench.data import SOURCE, load_docs
from lmms_tasks.utils.vlm2_bench.metrics import (
    Pair,
    VidStats,
    count_stats,
    count_units,
    cpr_pair_counts,
    cpr_pairs,
    gc_pair_counts,
    gc_pairs,
    grp_accuracy,
    grp_units,
    vid_se_unit_scores,
    vid_stats,
    vid_type,
    vid_type_pct,
)
from lmms_tasks.utils.vlm2_bench.parsers import grp_correct, parse_count, parse_judge_score, parse_tf

Item = Mapping[str, Any]

SCORE = "vlm2_score"
IMG8_SCORE = "vlm2_img8_score"
GAP = "vlm2_gap_to_human"
EXACT_SCORE = "vlm2_exact_score"
EXACT_IMG8_SCORE = "vlm2_exact_img8_score"

JUDGE_PROMPT_KEYS = {"AB": "vlm2bench/pc_v_judge/prompt_ab", "ABA": "vlm2bench/pc_v_judge/prompt_aba"}
JUDGE_DEFAULT_MODEL = "gpt-4o"  # the official scorer's model; no temperature is set (API default), as officially
JUDGE_DEFAULTS = {"max_tokens": 300}


# -- documents and prompts --------------------------------------------------------------------------------


def load_subtask(
    metadata: Mapping[str, Any] | None = None, subtask: str | None = None, kind: Any = None, strip_tf_prefix: Any = False, **_: Any
) -> datasets.DatasetDict:
    """The `custom_dataset` of every subtask (the shared template names it): lmms-eval calls it with the task's
    `metadata` and its `dataset_kwargs`, where the subtask's YAML declares the subtask, its kind and, for PC-Cpr,
    `strip_tf_prefix` (`{subtask: pc_cpr, kind: tf_cpr, strip_tf_prefix: true}`): the one place lmms-eval hands a
    task's own values to a hook before `process_results` (which gets only the document), so they are stamped
    into the documents."""
    if subtask not in SUBTASKS:
        raise DataError(f"vlm2_bench: dataset_kwargs.subtask is {subtask!r}; a VLM2-Bench task names one of the table's subtasks {sorted(SUBTASKS)}")
    if not isinstance(strip_tf_prefix, bool):
        raise DataError(f"{task_name(subtask)}: dataset_kwargs.strip_tf_prefix is {strip_tf_prefix!r}; expected true or false")
    return dataset_for(subtask, kind, strip_tf_prefix)(metadata=metadata)


def dataset_for(subtask: str, kind: str, strip_tf_prefix: bool = False) -> Callable[..., datasets.DatasetDict]:
    """The loader of one subtask, as its YAML declares it: its checked documents, loaded when the task loads."""
    if subtask not in SUBTASKS:
        raise ValueError(f"not a VLM2-Bench subtask: {subtask!r}")
    task = task_name(subtask)

    def build(metadata: dict[str, Any]) -> list[dict[str, Any]]:
        warn_about_model_args(task)
        if kind == "vid" and not inspecting(metadata):
            max_share()  # a malformed LMMS_TASKS_UNPARSED_MAX_SHARE stops the run before any inference
        docs = load_docs(subtask, kind=kind, strip_tf_prefix=strip_tf_prefix)
        if kind == "vid" and not inspecting(metadata):  # the judge's preflight after the data check (no network needed)
            from lmms_tasks.utils.services.llm_judge.judge import announce

            announce(judge_config(task, metadata), task)
        return docs

    return task_loader(task, build, source=SOURCE)


def doc_to_visual(doc: Item) -> list[Any]:
    return _messages.visuals(doc)


def doc_to_text(doc: Item, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    return _messages.user_text(doc)


def doc_to_messages(doc: Item, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _messages.messages(doc)


def doc_to_target(doc: Item) -> str:
    return "" if doc.get("gt") is None else str(doc["gt"])


# -- per-document results -------------------------------------------------------------------------------

_METRICS: dict[str, tuple[str, ...]] = {
    "tf_gc": (
        SCORE,
        EXACT_SCORE,
        "tf_pair_acc",
        "tf_pos_acc",
        "tf_neg_acc",
        "tf_n_pairs",
        "gc_exact_pair_acc",
        "gc_exact_pos_acc",
        "gc_exact_neg_acc",
    ),
    "tf_cpr": (SCORE, EXACT_SCORE, "tf_pair_acc", "tf_pos_acc", "tf_neg_acc", "tf_n_pairs"),
    "cnt": (
        SCORE,
        EXACT_SCORE,
        "cnt_norm_score",
        "cnt_strict_score",
        "cnt_acc",
        "cnt_n_valid",
        "cnt_n_unparsed",
        "cnt_n_out_of_range",
    ),
    "grp": (SCORE, EXACT_SCORE, "grp_acc", "grp_n"),
    "vid": (
        SCORE,
        EXACT_SCORE,
        "vid_ab_pct",
        "vid_aba_pct",
        "vid_n_ab",
        "vid_n_aba",
        "vid_judge_unparsed",
        "vid_judge_failed",
    ),
}


def metric_names(kind: str) -> tuple[str, ...]:
    """The metrics of a kind (its tasks' metric_list): each gets the document's item."""
    return _METRICS[kind]


def process_results(doc: Item, results: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One item per document, repeated under every metric name of its subtask."""
    subtask, kind = str(doc["subtask"]), str(doc["kind"])
    response = str(results[0] if results else "").strip()
    item: dict[str, Any] = {
        "task": doc["task"],
        "subtask": subtask,
        "kind": kind,
        "doc_index": int(doc["doc_index"]),
        "q_id": doc.get("q_id"),
        "gt": doc.get("gt"),
        "response": response,
    }
    if kind in ("tf_gc", "tf_cpr"):
        item["parsed"] = parse_tf(response)
        if kind == "tf_cpr":
            item["strip_tf_prefix"] = bool(doc.get("strip_tf_prefix"))
    elif kind == "cnt":
        item["image_len"] = int(doc["image_len"])
        item["parsed"] = parse_count(response)
    elif kind == "grp":
        item["correct"] = grp_correct(response, str(doc.get("gt") or ""))
    else:
        item["vid"] = doc["vid"]
        item["type"] = vid_type(str(doc["vid"]))
    return {name: item for name in metric_names(kind)}


# -- aggregation ----------------------------------------------------------------------------------------


def _subtask_of(items: Sequence[Item]) -> str | None:
    subtasks = {str(item["subtask"]) for item in items}
    if len(subtasks) > 1:
        raise ValueError(f"vlm2_bench aggregation got items of several subtasks: {sorted(subtasks)}")
    return next(iter(subtasks), None)


def _kind_of(items: Sequence[Item]) -> str | None:
    """The kind the items' subtask declares (each item carries it); None without items."""
    _subtask_of(items)
    return next((str(item["kind"]) for item in items), None)


def _strip_tf_prefix(items: Sequence[Item]) -> bool:
    """Whether the subtask's YAML declares PC-Cpr's q_id prefix rule (each item carries it)."""
    return any(bool(item.get("strip_tf_prefix")) for item in items)


def _pairs(items: Sequence[Item], exact: bool = False):
    if _kind_of(items) == "tf_gc":
        return gc_pair_counts(items, exact=exact)
    return cpr_pair_counts(items, strip_tf_prefix=_strip_tf_prefix(items))


def agg_tf_pair_acc(items: Sequence[Item]) -> float:
    return _pairs(items).pair_acc


def agg_tf_pos_acc(items: Sequence[Item]) -> float:
    return _pairs(items).pos_acc


def agg_tf_neg_acc(items: Sequence[Item]) -> float:
    return _pairs(items).neg_acc


def agg_tf_n_pairs(items: Sequence[Item]) -> int:
    return _pairs(items).n


def agg_gc_exact_pair_acc(items: Sequence[Item]) -> float:
    return _pairs(items, exact=True).pair_acc


def agg_gc_exact_pos_acc(items: Sequence[Item]) -> float:
    return _pairs(items, exact=True).pos_acc


def agg_gc_exact_neg_acc(items: Sequence[Item]) -> float:
    return _pairs(items, exact=True).neg_acc


def agg_cnt_norm_score(items: Sequence[Item]) -> float:
    return count_stats(items).norm_score


def agg_cnt_strict_score(items: Sequence[Item]) -> float:
    return count_stats(items).strict_score


def agg_cnt_acc(items: Sequence[Item]) -> float:
    return count_stats(items).accuracy


def agg_cnt_n_valid(items: Sequence[Item]) -> int:
    return count_stats(items).n_valid


def agg_cnt_n_unparsed(items: Sequence[Item]) -> int:
    return count_stats(items).n_unparsed


def agg_cnt_n_out_of_range(items: Sequence[Item]) -> int:
    return count_stats(items).n_out_of_range


def agg_grp_acc(items: Sequence[Item]) -> float:
    return grp_accuracy(items)[0]


def agg_grp_n(items: Sequence[Item]) -> int:
    return grp_accuracy(items)[1]


# -- PC-VID judge ---------------------------------------------------------------------------------------


def judge_prompt_sha256() -> str:
    """One digest for the pair of official judge prompts (AB and ABA), recorded with every judgement."""
    from lmms_tasks.utils.services.prompts import prompt_sha256

    joined = "\n".join(f"{key}={prompt_sha256(key)}" for key in JUDGE_PROMPT_KEYS.values())
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def judge_requests(items: Iterable[Item]) -> list[Any]:
    """One judge request per video answer: the official prompt for its type, filled with str.format."""
    from lmms_tasks.utils.services.llm_judge.judge import JudgeRequest
    from lmms_tasks.utils.services.prompts import prompt

    requests = []
    for item in sorted(items, key=lambda it: int(it["doc_index"])):
        type_ = vid_type(str(item["vid"]))
        text = prompt(JUDGE_PROMPT_KEYS[type_]).format(description=item.get("response") or "")
        requests.append(
            JudgeRequest(
                key=str(item["doc_index"]),
                messages=[{"role": "user", "content": text}],
                meta={"doc_id": int(item["doc_index"]), "vid": item["vid"], "type": type_},
            )
        )
    return requests


def judge_config(task: str, metadata: Mapping[str, Any] | None) -> Any:
    """PC-VID's judge from the metadata the task was handed (the official gpt-4o < LMMS_TASKS_JUDGE_* < the
    YAML's metadata.judge < what a command handed over: `services.llm_judge.judge.JudgeConfig.for_task`)."""
    from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig

    return JudgeConfig.for_task(task, metadata, default_model=JUDGE_DEFAULT_MODEL, defaults=JUDGE_DEFAULTS)


def judge_vid(
    items: Sequence[Item], args: Any = None, output_dir: str | None = None, check: bool = True, metadata: Mapping[str, Any] | None = None
) -> dict[int, dict[str, Any]]:
    """Judge every PC-VID answer as one batch (the batch step calls this once per task) and return each
    document's verdict fields (`services.llm_judge.verdicts`) by doc_index.

    The judge summary (`<run's records folder>/judgements/<task>.summary.json`, `services.records`) also gets the one-line `judge_info`.
    `output_dir` overrides the run's output path (k-samples responses are judged into their own folder).
    `check`: warn, and exit 3, when most replies have no usable score (`verdicts.check_unparsed`), and warn
    when a question type has no judged video (its official percentage is then the constant 0). `metadata`:
    the task config's (its judge)."""
    from lmms_tasks.utils.services.llm_judge.judge import add_to_summary, judge_batch, judge_summary_metric

    items = list(items)
    task = str(items[0]["task"]) if items else "vlm2_bench_pc_vid"
    config = judge_config(task, metadata)
    batch = judge_batch(
        task=task,
        requests=judge_requests(items),
        parse=parse_judge_score,
        config=config,
        output_dir=output_dir or records.run_dir(args, metadata),
        prompt_sha256=judge_prompt_sha256(),
        metadata=metadata,
    )
    if "judge_info" not in batch.summary:
        add_to_summary(batch, {"judge_info": judge_summary_metric(batch)})
    found = {int(o.meta["doc_id"]): verdict_fields(o) for o in batch.outcomes.values()}
    if check:
        check_unparsed(task, batch.outcomes)
        _warn_types_without_judged_videos(task, [{**i, **found[int(i["doc_index"])]} for i in items])
    return found


def _verdicts(items: Sequence[Item]) -> list[tuple[int, str, Verdict]]:
    """(doc_index, type, the judge's verdict the batch step wrote) per video, in document order."""
    return sorted(
        (int(i["doc_index"]), str(i.get("type") or vid_type(str(i["vid"]))), Verdict.of(i, f"{i.get('task')} doc {i.get('doc_index')}"))
        for i in items
    )


def vid_stats_of(items: Sequence[Item]) -> VidStats:
    """The PC-VID numbers from the judged items: failed requests and unparsed replies dropped, as officially."""
    verdicts = _verdicts(items)
    return vid_stats(((t, v.parsed) for _, t, v in verdicts if not v.failed), n_failed=sum(v.failed for _, _, v in verdicts))


def judged_videos(items: Sequence[Item]) -> list[tuple[int, str, float]]:
    """(doc_index, type, judge score) of every video the judge scored: the PC-VID units (failed requests and
    replies without a score are dropped, as officially)."""
    return [(d, t, float(v.parsed)) for d, t, v in _verdicts(items) if not v.failed and v.parsed is not None]


def _warn_types_without_judged_videos(task: str, items: Sequence[Item]) -> None:
    """A type with videos but no judged one scores the official constant 0, which reads like all wrong: say so,
    with the counts (`vid_n_ab` / `vid_n_aba` in the results)."""
    verdicts = _verdicts(items)
    for type_ in ("AB", "ABA"):
        mine = [v for _, t, v in verdicts if t == type_]
        if mine and not any(not v.failed and v.parsed is not None for v in mine):
            logger.warning(
                f"{task}: no {type_} video was judged (0 of {len(mine)}: {sum(v.unparsed for v in mine)} unparsed, "
                f"{sum(v.failed for v in mine)} failed): vid_{type_.lower()}_pct = 0 is the official value of an empty type, "
                f"not a score (vid_n_{type_.lower()} = 0)"
            )


def vid_score(items: Sequence[Item]) -> float:
    return vid_stats_of(items).score


def agg_vid_ab_pct(items: Sequence[Item]) -> float:
    return vid_stats_of(items).ab_pct


def agg_vid_aba_pct(items: Sequence[Item]) -> float:
    return vid_stats_of(items).aba_pct


def agg_vid_n_ab(items: Sequence[Item]) -> int:
    return vid_stats_of(items).n_ab


def agg_vid_n_aba(items: Sequence[Item]) -> int:
    return vid_stats_of(items).n_aba


def agg_vid_judge_unparsed(items: Sequence[Item]) -> int:
    return vid_stats_of(items).n_unparsed


def agg_vid_judge_failed(items: Sequence[Item]) -> int:
    return vid_stats_of(items).n_failed


# -- the common subtask score ----------------------------------------------------------------------------


def subtask_score(items: Sequence[Item]) -> float:
    """The number that enters the paper's Table 1 for this subtask (pair acc / norm score / acc / VID)."""
    kind = _kind_of(items)
    if kind is None:
        return 0.0
    if kind in ("tf_gc", "tf_cpr"):
        return agg_tf_pair_acc(items)
    if kind == "cnt":
        return agg_cnt_norm_score(items)
    if kind == "grp":
        return agg_grp_acc(items)
    return vid_score(items)


def exact_subtask_score(items: Sequence[Item]) -> float:
    """The subtask's number in the paper's exact-match mode: GC pairs by exact "T"/"F" equality (official GC
    scorer), every other subtask as `subtask_score`."""
    if _kind_of(items) == "tf_gc":
        return agg_gc_exact_pair_acc(items)
    return subtask_score(items)


def agg_vlm2_score(items: Sequence[Item]) -> float:
    return subtask_score(items)


def agg_vlm2_exact_score(items: Sequence[Item]) -> float:
    return exact_subtask_score(items)


# -- per-unit scores: standard errors and batch scoring ----------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One official unit of a subtask score: a T/F pair, a counting or grouping question, a judged video."""

    doc_index: int  # the document that stands for the unit in per-sample scores (a pair's first member)
    unit_id: str  # the pair's id (GC: the raw q_id; OC/PC-Cpr: the main id), the q_id, or the video id
    score: float  # on the subtask's 0-100 scale; PC-VID: `vid_se_unit_scores` (mean: (AB% + ABA%) / 2)
    fraction: float  # the unit's own result as a 0-1 fraction (PC-VID: its type's percentage / 100)


def _pair_unit(pair: Pair) -> Unit:
    return Unit(pair.doc_index, pair.pair_id, 100.0 * pair.correct, float(pair.correct))


def _tf_pairs(items: Sequence[Item], exact: bool = False) -> list[Pair]:
    if _kind_of(items) == "tf_gc":
        return gc_pairs(items, exact=exact)
    return cpr_pairs(items, strip_tf_prefix=_strip_tf_prefix(items))


def units(items: Sequence[Item], exact: bool = False) -> list[Unit]:
    """The units of the subtask's score (`exact`: GC pairs by the official exact match), in file order."""
    items = list(items)
    kind = _kind_of(items)
    if kind is None:
        return []
    if kind in ("tf_gc", "tf_cpr"):
        return sorted((_pair_unit(p) for p in _tf_pairs(items, exact)), key=lambda u: u.doc_index)
    if kind == "cnt":  # answers the official scorer excludes (unparseable, out of range, no gt) are no unit
        return [Unit(int(i["doc_index"]), str(i.get("q_id")), score, score / 100) for i, score, _ in count_units(items) if score is not None]
    if kind == "grp":
        return [Unit(int(i["doc_index"]), str(i.get("q_id")), 100.0 * ok, float(ok)) for i, ok in grp_units(items)]
    vids = {int(i["doc_index"]): str(i["vid"]) for i in items}
    judged = judged_videos(items)
    scores = vid_se_unit_scores((t, s) for _, t, s in judged)
    return [Unit(d, vids.get(d, str(d)), w, vid_type_pct(t, s) / 100) for (d, t, s), w in zip(judged, scores)]


def _scored(units: Iterable[tuple[Item, str, float]]) -> list[tuple[int, str, float]]:
    return [(int(item["doc_index"]), unit_id, float(score)) for item, unit_id, score in units]


def _pair_scores(field: str, exact: bool = False) -> Callable[[Sequence[Item]], list[tuple[int, str, float]]]:
    return lambda items: [(p.doc_index, p.pair_id, 100.0 * getattr(p, field)) for p in _tf_pairs(items, exact)]


def _vid_type_scores(type_: str) -> Callable[[Sequence[Item]], list[tuple[int, str, float]]]:
    def scores(items: Sequence[Item]) -> list[tuple[int, str, float]]:
        vids = {int(i["doc_index"]): str(i["vid"]) for i in items}
        return [(d, vids.get(d, str(d)), vid_type_pct(t, s)) for d, t, s in judged_videos(items) if t == type_]

    return scores


# Per metric with a standard error: its units as (doc_index of the document standing for it, unit id, the
# unit's score on the metric's scale), so that lmms-eval's `<metric>_stderr_clt` (SD, ddof=1, / sqrt(n)
# over the items carrying the score) is the standard error of the metric's mean over its units.
UNIT_SCORES: dict[str, Callable[[Sequence[Item]], list[tuple[int, str, float]]]] = {
    SCORE: lambda items: [(u.doc_index, u.unit_id, u.score) for u in units(items)],
    EXACT_SCORE: lambda items: [(u.doc_index, u.unit_id, u.score) for u in units(items, exact=True)],
    "tf_pair_acc": _pair_scores("correct"),
    "tf_pos_acc": _pair_scores("pos_ok"),
    "tf_neg_acc": _pair_scores("neg_ok"),
    "gc_exact_pair_acc": _pair_scores("correct", exact=True),
    "gc_exact_pos_acc": _pair_scores("pos_ok", exact=True),
    "gc_exact_neg_acc": _pair_scores("neg_ok", exact=True),
    "cnt_norm_score": lambda items: _scored((i, str(i.get("q_id")), s) for i, s, _ in count_units(items) if s is not None),
    "cnt_strict_score": lambda items: _scored((i, str(i.get("q_id")), s or 0.0) for i, s, _ in count_units(items)),
    "cnt_acc": lambda items: _scored((i, str(i.get("q_id")), 100.0 * ok) for i, _, ok in count_units(items)),
    "grp_acc": lambda items: _scored((i, str(i.get("q_id")), 100.0 * ok) for i, ok in grp_units(items)),
    "vid_ab_pct": _vid_type_scores("AB"),
    "vid_aba_pct": _vid_type_scores("ABA"),
}


def _repeat_output_dir(args: Any, repeat: int | None, metadata: dict[str, Any]) -> str | None:
    """Where the judgements of the k-samples responses `repeat` go: `<run's records folder>/repeats/<repeat>/`."""
    base = records.run_dir(args, metadata) if repeat is not None else None
    return None if repeat is None or not base else str(Path(base) / "repeats" / str(repeat))


def score_batch(results: Sequence[Mapping[str, Any]], args: Any = None, repeat: int | None = None, config: Any = None) -> list[dict[str, Any]]:
    """The task's `process_results_batch`. PC-VID: the one place where the answers are judged (one batch per
    task, by the judge the task config names: `config.metadata`); every metric's item of each document gets the judge's verdict (`services.llm_judge.verdicts`), from which
    the aggregations compute. Every metric with a standard error (`UNIT_SCORES`): each unit's score goes
    into that metric's item of the document that stands for it (a pair's first question, a counting answer,
    every grouping question, every judged video), as `vlm2_score` (the task's `score_key`: on the metric's
    0-100 scale, what lmms-eval's `<metric>_stderr_clt` reads) and `pair_id` (the cluster); the headline
    `vlm2_score` item also as `score` (0-1), and the sample's `unit_score` (0-1, what --baseline reads).
    Documents that stand for no unit (a pair's second question, an excluded answer) carry no score.

    For the k-samples responses (`repeat` = j) each unit is scored from the j-th responses, as a 0-1
    fraction, for lmms-eval's stability metrics (their judgements go to `<run's records folder>/repeats/<j>/`)."""
    results = [dict(r) for r in results]
    items = [r[SCORE] for r in results if SCORE in r]
    if not items:
        return results
    if _kind_of(items) == "vid":
        verdicts = judge_vid(items, args, output_dir=_repeat_output_dir(args, repeat, metadata_of(config)), check=repeat is None, metadata=metadata_of(config))
        if repeat is None:  # every metric aggregates its own items: each carries the verdict
            for result in results:
                for metric, value in result.items():
                    if isinstance(value, dict) and "doc_index" in value:
                        result[metric] = {**value, **verdicts[int(value["doc_index"])]}
            items = [r[SCORE] for r in results if SCORE in r]
        else:
            items = [{**i, **verdicts[int(i["doc_index"])]} for i in items]
    if repeat is not None:
        by_doc = {u.doc_index: u for u in units(items)}
        for result in results:
            unit = by_doc.get(int(result[SCORE]["doc_index"])) if SCORE in result else None
            if unit is not None:
                result[SCORE] = fraction_item(result[SCORE], SCORE, unit.fraction, pair_id=unit.unit_id)
        return results
    position = {int(r[SCORE]["doc_index"]): r for r in results if SCORE in r}
    for metric, scores_of in UNIT_SCORES.items():
        if not any(metric in r for r in results):
            continue
        for doc_index, unit_id, score in scores_of(items):
            result = position[doc_index]
            if metric == SCORE:
                result[SCORE] = unit_item(result[SCORE], SCORE, score, pair_id=unit_id)
                result[UNIT_SCORE] = score / 100.0
            else:
                result[metric] = metric_item(result[metric], SCORE, score, pair_id=unit_id)
    return results


# -- groups (lmms-eval passes the subtasks' values, sizes, weight_by_size and the subtask of each value) ----


def _mean(values: Sequence[float]) -> float:
    return sum(float(v) for v in values) / len(values)


def _independent_mean_stderr(stderrs: Sequence[Any]) -> float | str:
    """Standard error of an unweighted mean of k independent subtask means: sqrt(sum se_i^2) / k; "N/A"
    when one of those k has none (lmms-eval hands a group every subtask's, "N/A" ones too)."""
    if any(not isinstance(s, (int, float)) for s in stderrs):
        return NA
    return math.sqrt(sum(float(s) ** 2 for s in stderrs)) / len(stderrs)


def _by_subtask(values: Sequence[Any], subtasks: Sequence[str], wanted: Sequence[str], metric: str) -> list[Any] | None:
    """The values of the `wanted` subtasks (task names without prefix), in that order; None (logged, never
    raised: raising here would discard the finished run) unless every one of them reported."""
    by_name = {str(task).removeprefix(TASK_PREFIX): value for task, value in zip(subtasks, values)}
    missing = sorted(set(wanted) - set(by_name))
    if missing:
        logger.error(f"vlm2_bench {metric} not computed: needs subtasks {sorted(wanted)}, missing {missing}")
        return None
    return [by_name[name] for name in wanted]


def _in_table_order(values: Sequence[Any], subtasks: Sequence[str]) -> list[Any]:
    """The values in the subtask table's order: a family group lists its subtasks through a `tag:`, which
    lmms-eval fills in the order it happens to find the YAML files, so every mean adds in one fixed order."""
    if len(subtasks) != len(values):
        return list(values)
    order = {name: index for index, name in enumerate(SUBTASKS)}
    ranked = sorted(zip(subtasks, values), key=lambda pair: (order.get(str(pair[0]).removeprefix(TASK_PREFIX), len(order)), str(pair[0])))
    return [value for _, value in ranked]


def group_mean(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float:
    """A cue-type group's score and the Table 1 overall: the unweighted mean of its subtasks' scores."""
    return _mean(_in_table_order(values, subtasks))


def group_overall(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float | None:
    """Table 1 "Avg": the unweighted mean over exactly the 9 subtasks."""
    found = _by_subtask(values, subtasks, tuple(SUBTASKS), SCORE)
    return None if found is None else _mean(found)


def group_img8_score(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float | None:
    """The mean over exactly the 8 image subtasks (PC-VID left out)."""
    found = _by_subtask(values, subtasks, IMAGE_SUBTASKS, IMG8_SCORE)
    return None if found is None else _mean(found)


def group_gap_to_human(values: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float | None:
    """Table 1 "Δhuman": the 9-subtask mean minus the human overall (95.16)."""
    mean = group_overall(values, sizes, weight_by_size, subtasks)
    return None if mean is None else mean - HUMAN_OVERALL


def _mean_stderr(stderrs: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float | str:
    return _independent_mean_stderr(_in_table_order(stderrs, subtasks))


def _img8_stderr(stderrs: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False, subtasks: Sequence[str] = ()) -> float | str | None:
    """From the eight image subtasks' standard errors only: PC-VID's (maybe "N/A") is not in this mean."""
    found = _by_subtask(stderrs, subtasks, IMAGE_SUBTASKS, f"{IMG8_SCORE} standard error")
    return None if found is None else _independent_mean_stderr(found)


group_mean.stderr = _mean_stderr  # type: ignore[attr-defined]
group_overall.stderr = _mean_stderr  # type: ignore[attr-defined]
group_gap_to_human.stderr = _mean_stderr  # type: ignore[attr-defined]  # minus a constant: same error
group_img8_score.stderr = _img8_stderr  # type: ignore[attr-defined]
