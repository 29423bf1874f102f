"""lmms-eval hooks for the nine VLM2-Bench tasks (the task folder's `utils.py` re-exports these).

`process_results` is cheap and deterministic: it returns one JSON-friendly item per document (ids, gt,
the stripped response, the parse) under every metric name, and the aggregation functions below compute
the official scores from those items, grouping by id. The PC-VID judge runs in the aggregation step as one
batch through `lmms_tasks.utils.services.judge.judge_batch` (memoized, so all VID metrics share one batch).

Metric names: every subtask exposes its subtask score as `vlm2_score` (the groups average it). The overall
numbers that only make sense for the whole benchmark are reported by group `vlm2_bench` alone:
`vlm2_img8_score` (8 image subtasks), `vlm2_gap_to_human` (9-subtask mean - 95.16), and the exact-match
overall `vlm2_exact_score` / `vlm2_exact_img8_score` (GC scored by the official exact match, the paper's mode).
Each subtask passes its part to the group as a `GroupInput` (a string in its own row, see
`lmms_tasks.utils.compat.group_inputs`). No metric name is a substring of another (lmms-eval matches group metrics
by substring).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import datasets

from lmms_tasks.utils.compat.group_inputs import GroupInput, payloads
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.status import stops_run
from lmms_tasks.utils.services.model_args import warn_about_model_args
from lmms_tasks.utils.vlm2_bench import HUMAN_OVERALL, SUBTASKS
from lmms_tasks.utils.vlm2_bench import messages as _messages
from lmms_tasks.utils.vlm2_bench.data import load_docs
from lmms_tasks.utils.vlm2_bench.metrics import (
    count_stats,
    cpr_pair_counts,
    gc_pair_counts,
    grp_accuracy,
    vid_stats,
    vid_type,
)
from lmms_tasks.utils.vlm2_bench.parsers import grp_correct, parse_count, parse_judge_score, parse_tf

Item = Mapping[str, Any]

SCORE = "vlm2_score"
IMG8_SCORE = "vlm2_img8_score"
GAP = "vlm2_gap_to_human"
EXACT_SCORE = "vlm2_exact_score"
EXACT_IMG8_SCORE = "vlm2_exact_img8_score"
IMAGE_SUBTASKS = tuple(s for s, (_, kind) in SUBTASKS.items() if kind != "vid")

JUDGE_PROMPT_KEYS = {"AB": "vlm2bench/pc_v_judge/prompt_ab", "ABA": "vlm2bench/pc_v_judge/prompt_aba"}
JUDGE_DEFAULT_MODEL = "gpt-4o"  # the official scorer's model; no temperature is set (API default), as officially
JUDGE_DEFAULTS = {"max_tokens": 300}


# -- documents and prompts --------------------------------------------------------------------------------


def process_docs(subtask: str, dataset: datasets.Dataset | None = None) -> datasets.Dataset:
    """Replace the one-line manifest lmms-eval loaded with the subtask's real documents."""
    warn_about_model_args(f"vlm2_bench_{subtask}")
    return datasets.Dataset.from_list(load_docs(subtask))


def process_docs_for(subtask: str) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """The `process_docs` hook of one subtask's YAML (lmms-eval passes only the loaded dataset)."""

    @stops_run(f"vlm2_bench_{subtask}")
    def hook(dataset: datasets.Dataset) -> datasets.Dataset:
        return process_docs(subtask, dataset)

    hook.__name__ = f"process_docs_{subtask}"
    return hook


def doc_to_visual(doc: Item) -> list[Any]:
    return _messages.visuals(doc)


def doc_to_text(doc: Item, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    return _messages.user_text(doc)


def doc_to_messages(doc: Item, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _messages.messages(doc)


def doc_to_target(doc: Item) -> str:
    return "" if doc.get("gt") is None else str(doc["gt"])


# -- per-document results -------------------------------------------------------------------------------

_IMAGE_GROUP_INPUTS = (IMG8_SCORE, GAP, EXACT_SCORE, EXACT_IMG8_SCORE)
_METRICS: dict[str, tuple[str, ...]] = {
    "tf_gc": (
        SCORE,
        *_IMAGE_GROUP_INPUTS,
        "tf_pair_acc",
        "tf_pos_acc",
        "tf_neg_acc",
        "tf_n_pairs",
        "gc_exact_pair_acc",
        "gc_exact_pos_acc",
        "gc_exact_neg_acc",
    ),
    "tf_cpr": (SCORE, *_IMAGE_GROUP_INPUTS, "tf_pair_acc", "tf_pos_acc", "tf_neg_acc", "tf_n_pairs"),
    "cnt": (
        SCORE,
        *_IMAGE_GROUP_INPUTS,
        "cnt_norm_score",
        "cnt_strict_score",
        "cnt_acc",
        "cnt_n_valid",
        "cnt_n_unparsed",
        "cnt_n_out_of_range",
    ),
    "grp": (SCORE, *_IMAGE_GROUP_INPUTS, "grp_acc", "grp_n"),
    "vid": (
        SCORE,
        GAP,
        EXACT_SCORE,
        "vid_ab_pct",
        "vid_aba_pct",
        "vid_n_ab",
        "vid_n_aba",
        "vid_judge_unparsed",
        "vid_judge_failed",
        "vid_judge_info",
    ),
}


def metric_names(subtask: str) -> tuple[str, ...]:
    return _METRICS[SUBTASKS[subtask][1]]


def process_results(doc: Item, results: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One item per document, repeated under every metric name of its subtask."""
    subtask = str(doc["subtask"])
    kind = SUBTASKS[subtask][1]
    response = str(results[0] if results else "").strip()
    item: dict[str, Any] = {
        "task": doc["task"],
        "subtask": subtask,
        "doc_index": int(doc["doc_index"]),
        "q_id": doc.get("q_id"),
        "gt": doc.get("gt"),
        "response": response,
    }
    if kind in ("tf_gc", "tf_cpr"):
        item["parsed"] = parse_tf(response)
    elif kind == "cnt":
        item["image_len"] = int(doc["image_len"])
        item["parsed"] = parse_count(response)
    elif kind == "grp":
        item["correct"] = grp_correct(response, str(doc.get("gt") or ""))
    else:
        item["vid"] = doc["vid"]
        item["type"] = vid_type(str(doc["vid"]))
    return {name: item for name in metric_names(subtask)}


# -- aggregation ----------------------------------------------------------------------------------------


def _subtask_of(items: Sequence[Item]) -> str | None:
    subtasks = {str(item["subtask"]) for item in items}
    if len(subtasks) > 1:
        raise ValueError(f"vlm2_bench aggregation got items of several subtasks: {sorted(subtasks)}")
    return next(iter(subtasks), None)


def _pairs(items: Sequence[Item], exact: bool = False):
    subtask = _subtask_of(items)
    if subtask is not None and SUBTASKS[subtask][1] == "tf_gc":
        return gc_pair_counts(items, exact=exact)
    return cpr_pair_counts(items, strip_tf_prefix=subtask == "pc_cpr")


def tf_pair_acc(items: Sequence[Item]) -> float:
    return _pairs(items).pair_acc


def tf_pos_acc(items: Sequence[Item]) -> float:
    return _pairs(items).pos_acc


def tf_neg_acc(items: Sequence[Item]) -> float:
    return _pairs(items).neg_acc


def tf_n_pairs(items: Sequence[Item]) -> int:
    return _pairs(items).n


def gc_exact_pair_acc(items: Sequence[Item]) -> float:
    return _pairs(items, exact=True).pair_acc


def gc_exact_pos_acc(items: Sequence[Item]) -> float:
    return _pairs(items, exact=True).pos_acc


def gc_exact_neg_acc(items: Sequence[Item]) -> float:
    return _pairs(items, exact=True).neg_acc


def cnt_norm_score(items: Sequence[Item]) -> float:
    return count_stats(items).norm_score


def cnt_strict_score(items: Sequence[Item]) -> float:
    return count_stats(items).strict_score


def cnt_acc(items: Sequence[Item]) -> float:
    return count_stats(items).accuracy


def cnt_n_valid(items: Sequence[Item]) -> int:
    return count_stats(items).n_valid


def cnt_n_unparsed(items: Sequence[Item]) -> int:
    return count_stats(items).n_unparsed


def cnt_n_out_of_range(items: Sequence[Item]) -> int:
    return count_stats(items).n_out_of_range


def grp_acc(items: Sequence[Item]) -> float:
    return grp_accuracy(items)[0]


def grp_n(items: Sequence[Item]) -> int:
    return grp_accuracy(items)[1]


# -- PC-VID judge ---------------------------------------------------------------------------------------


def judge_prompt_sha256() -> str:
    """One digest for the pair of official judge prompts (AB and ABA), recorded with every judgement."""
    from lmms_tasks.utils.services.prompts import prompt_sha256

    joined = "\n".join(f"{key}={prompt_sha256(key)}" for key in JUDGE_PROMPT_KEYS.values())
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def judge_requests(items: Iterable[Item]) -> list[Any]:
    """One judge request per video answer: the official prompt for its type, filled with str.format."""
    from lmms_tasks.utils.services.judge import JudgeRequest
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


def judge_vid(items: Sequence[Item], args: Any = None):
    """Judge every PC-VID answer (one memoized batch per task) and return (VidStats, JudgeBatch)."""
    from lmms_tasks.utils.services.judge import JudgeConfig, judge_batch

    items = list(items)
    task = str(items[0]["task"]) if items else "vlm2_bench_pc_vid"
    config = JudgeConfig.resolve(task=task, default_model=JUDGE_DEFAULT_MODEL, defaults=JUDGE_DEFAULTS)
    batch = judge_batch(
        task=task,
        requests=judge_requests(items),
        parse=parse_judge_score,
        config=config,
        output_dir=getattr(args, "output_path", None),
        prompt_sha256=judge_prompt_sha256(),
    )
    scored = []
    for outcome in batch.outcomes.values():
        if outcome.error is not None:
            continue  # transport failure after retries: dropped and counted as vid_judge_failed
        scored.append((outcome.meta.get("type") or "AB", outcome.parsed))
    return vid_stats(scored, n_failed=batch.n_failed), batch


def vid_score(items: Sequence[Item], args: Any = None) -> float:
    return judge_vid(items, args)[0].score


def vid_ab_pct(items: Sequence[Item], args: Any = None) -> float:
    return judge_vid(items, args)[0].ab_pct


def vid_aba_pct(items: Sequence[Item], args: Any = None) -> float:
    return judge_vid(items, args)[0].aba_pct


def vid_n_ab(items: Sequence[Item], args: Any = None) -> int:
    return judge_vid(items, args)[0].n_ab


def vid_n_aba(items: Sequence[Item], args: Any = None) -> int:
    return judge_vid(items, args)[0].n_aba


def vid_judge_unparsed(items: Sequence[Item], args: Any = None) -> int:
    return judge_vid(items, args)[0].n_unparsed


def vid_judge_failed(items: Sequence[Item], args: Any = None) -> int:
    return judge_vid(items, args)[0].n_failed


def vid_judge_info(items: Sequence[Item], args: Any = None) -> str:
    from lmms_tasks.utils.services.judge import judge_summary_metric

    return judge_summary_metric(judge_vid(items, args)[1])


# -- the common subtask score ----------------------------------------------------------------------------


def subtask_score(items: Sequence[Item], args: Any = None) -> float:
    """The number that enters the paper's Table 1 for this subtask (pair acc / norm score / acc / VID)."""
    subtask = _subtask_of(items)
    if subtask is None:
        return 0.0
    kind = SUBTASKS[subtask][1]
    if kind in ("tf_gc", "tf_cpr"):
        return tf_pair_acc(items)
    if kind == "cnt":
        return cnt_norm_score(items)
    if kind == "grp":
        return grp_acc(items)
    return vid_score(items, args)


def exact_subtask_score(items: Sequence[Item], args: Any = None) -> float:
    """The subtask's number in the paper's exact-match mode: GC pairs by exact "T"/"F" equality (official GC
    scorer), every other subtask as `subtask_score`."""
    subtask = _subtask_of(items)
    if subtask is not None and SUBTASKS[subtask][1] == "tf_gc":
        return gc_exact_pair_acc(items)
    return subtask_score(items, args)


def vlm2_score(items: Sequence[Item], args: Any = None) -> float:
    return subtask_score(items, args)


def _group_input(metric: str, items: Sequence[Item], score: float) -> GroupInput:
    subtask = _subtask_of(items)
    return GroupInput(f"reported by group vlm2_bench ({metric})", {"subtask": subtask, "score": score})


def vlm2_img8_score(items: Sequence[Item]) -> GroupInput:
    return _group_input(IMG8_SCORE, items, subtask_score(items))


def vlm2_gap_to_human(items: Sequence[Item], args: Any = None) -> GroupInput:
    return _group_input(GAP, items, subtask_score(items, args))


def vlm2_exact_score(items: Sequence[Item], args: Any = None) -> GroupInput:
    return _group_input(EXACT_SCORE, items, exact_subtask_score(items, args))


def vlm2_exact_img8_score(items: Sequence[Item]) -> GroupInput:
    return _group_input(EXACT_IMG8_SCORE, items, exact_subtask_score(items))


# -- group vlm2_bench (lmms-eval calls these with the subtasks' values, sizes and weight_by_size) ----------


def overall(metrics: Sequence[Any], metric: str, subtasks: Sequence[str]) -> float | None:
    """Unweighted mean of the subtasks' scores carried by their group inputs; None (logged, never raised:
    raising here would discard the finished run) unless exactly `subtasks` reported."""
    scores = {str(p["subtask"]): float(p["score"]) for p in payloads(metrics, metric)}
    if sorted(scores) != sorted(subtasks):
        logger.error(f"vlm2_bench {metric} not computed: needs subtasks {sorted(subtasks)}, got {sorted(scores)}")
        return None
    return sum(scores.values()) / len(scores)


def group_img8_score(metrics: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False) -> float | None:
    return overall(metrics, IMG8_SCORE, IMAGE_SUBTASKS)


def group_gap_to_human(metrics: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False) -> float | None:
    mean = overall(metrics, GAP, tuple(SUBTASKS))
    return None if mean is None else mean - HUMAN_OVERALL


def group_exact_score(metrics: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False) -> float | None:
    return overall(metrics, EXACT_SCORE, tuple(SUBTASKS))


def group_exact_img8_score(metrics: Sequence[Any], sizes: Sequence[int] | None = None, weight_by_size: bool = False) -> float | None:
    return overall(metrics, EXACT_IMG8_SCORE, IMAGE_SUBTASKS)
