"""The official VLM2-Bench scoring formulas (spec section 1.6), as pure functions over per-doc items.

Items are the dicts `process_results` returns (after a JSON round trip when re-scored offline). They
arrive unordered from several ranks, so every function sorts by `doc_index` (the record's position in
its JSONL file) before anything order-dependent, such as "a later duplicate q_id overwrites an earlier
one", and groups by id, never by position. All scores are on the 0-100 scale.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lmms_tasks.utils.vlm2_bench.parsers import grp_correct, parse_count, parse_tf

Item = Mapping[str, Any]

PENALTY_FACTOR = 10  # official constant (its comment recommends 1-3; 10 is what the scorer uses)
L_MAX = 4


def _in_file_order(items: Iterable[Item]) -> list[Item]:
    return sorted(items, key=lambda item: int(item["doc_index"]))


def _pct(numerator: float, denominator: int) -> float:
    return 100.0 * numerator / denominator if denominator > 0 else 0.0


@dataclass(frozen=True)
class PairCounts:
    """The three official T/F accuracies' numerators and their common denominator N (pairs)."""

    correct_pos: int
    correct_neg: int
    correct_pairs: int
    n: int

    @property
    def pos_acc(self) -> float:
        return _pct(self.correct_pos, self.n)

    @property
    def neg_acc(self) -> float:
        return _pct(self.correct_neg, self.n)

    @property
    def pair_acc(self) -> float:
        return _pct(self.correct_pairs, self.n)


def cpr_pair_key(q_id: Any, strip_tf_prefix: bool) -> tuple[str, str] | None:
    """(main_id, 'p'|'n') as the official OC/PC comparison scorer derives it, or None if it skips the id.

    Split on the *first* underscore ("oc_1_p" -> suffix "1_p" -> skipped); PC strips a leading "tf_".
    """
    if not isinstance(q_id, str) or not q_id or "_" not in q_id:
        return None
    if strip_tf_prefix and q_id.startswith("tf_"):
        q_id = q_id[3:]
    main_id, suffix = q_id.split("_", 1)
    return (main_id, suffix) if suffix in ("p", "n") else None


@dataclass(frozen=True)
class Pair:
    """One T/F unit of the official scorer: its id, its members (file order), and whether its positive
    (gt "T") and negative (gt "F") members are answered correctly. `doc_index` is the first member's: the
    document that stands for the pair in per-sample scores."""

    pair_id: str
    members: tuple[Item, ...]
    pos_ok: bool
    neg_ok: bool

    @property
    def correct(self) -> bool:
        return self.pos_ok and self.neg_ok

    @property
    def doc_index(self) -> int:
        return min(int(m["doc_index"]) for m in self.members)


def cpr_pairs(items: Iterable[Item], strip_tf_prefix: bool) -> list[Pair]:
    """OC-Cpr / PC-Cpr pairs by main id; a later duplicate overwrites; incomplete pairs are left out."""
    found: dict[str, dict[str, Item]] = {}
    for item in _in_file_order(items):
        key = cpr_pair_key(item.get("q_id"), strip_tf_prefix)
        if key is not None:
            found.setdefault(key[0], {})[key[1]] = item
    return [
        Pair(main_id, (members["p"], members["n"]), _tf_item_correct(members["p"]), _tf_item_correct(members["n"]))
        for main_id, members in found.items()
        if "p" in members and "n" in members
    ]


def _counts(pairs: list[Pair]) -> PairCounts:
    return PairCounts(sum(p.pos_ok for p in pairs), sum(p.neg_ok for p in pairs), sum(p.correct for p in pairs), len(pairs))


def cpr_pair_counts(items: Iterable[Item], strip_tf_prefix: bool) -> PairCounts:
    """OC-Cpr / PC-Cpr: pairs by main id; a later duplicate overwrites; incomplete pairs leave N."""
    return _counts(cpr_pairs(items, strip_tf_prefix))


def _tf_item_correct(item: Item) -> bool:
    parsed = parse_tf(str(item.get("response") or "").strip())
    return bool(parsed) and parsed == str(item.get("gt") or "").strip().upper()


def gc_pairs(items: Iterable[Item], exact: bool = False) -> list[Pair]:
    """GC-Mat / GC-Trk units: items grouped by raw q_id (a singleton is a unit that can never be correct).

    "Positive" is the gt-"T" member, "negative" the gt-"F" member. `exact=True` is the official scorer
    (the answer must be exactly "T"/"F"); the default parses the answer with the official T/F parser
    first, as VLMEvalKit does, because the official GC numbers were computed on answers standardized by
    code that was never published.
    """
    groups: dict[str, list[Item]] = {}
    for item in _in_file_order(items):
        groups.setdefault(str(item.get("q_id")), []).append(item)
    pairs = []
    for q_id, members in groups.items():
        p_ok = n_ok = False
        for item in members:
            gt = item.get("gt")
            response = str(item.get("response") or "").strip()
            answer = response if exact else parse_tf(response)
            if gt == "T" and answer == gt:
                p_ok = True
            elif gt == "F" and answer == gt:
                n_ok = True
        pairs.append(Pair(q_id, tuple(members), p_ok, n_ok))
    return pairs


def gc_pair_counts(items: Iterable[Item], exact: bool = False) -> PairCounts:
    """GC-Mat / GC-Trk counts over `gc_pairs` (N includes singletons)."""
    return _counts(gc_pairs(items, exact))


def count_item_score(parsed: int | None, gt: int, image_len: int) -> float | None:
    """The official normalized counting score of one item; None when it is excluded as invalid.

    Invalid = unparseable, or outside [1, L]. Partial credit only arises when L >= 4.
    """
    if parsed is None or not 1 <= parsed <= image_len:
        return None
    diff = abs(parsed - gt)
    if diff == 0:
        return 100.0
    max_error = max(gt - 1, image_len - gt)
    relative_error = diff / max_error if max_error > 0 else 0
    penalty = (L_MAX / image_len) * (relative_error ** (1.0 / PENALTY_FACTOR))
    return 100 * (1 - penalty) if penalty < 1 else 0.0


@dataclass(frozen=True)
class CountStats:
    norm_score: float  # official: mean over valid items only (the subtask score)
    strict_score: float  # invalid items count as 0 and stay in the denominator
    accuracy: float  # parsed == gt over all items
    n: int
    n_valid: int
    n_unparsed: int
    n_out_of_range: int


def count_stats(items: Iterable[Item]) -> CountStats:
    """OC-Cnt / PC-Cnt over all items; L is the item's `image_len` (from image_seq_len / image_seq)."""
    total = valid = unparsed = out_of_range = correct = 0
    score_sum = 0.0
    for item in items:
        total += 1
        if item.get("gt") is None:  # official: 'missing_gt_answer', counted in the accuracy denominator only
            continue
        gt = int(item["gt"])
        image_len = int(item["image_len"])
        parsed = parse_count(str(item.get("response") or "").strip())
        score = count_item_score(parsed, gt, image_len)
        if parsed is None:
            unparsed += 1
        elif score is None:
            out_of_range += 1
        else:
            valid += 1
            score_sum += score
            correct += parsed == gt
    return CountStats(
        norm_score=score_sum / valid if valid else 0.0,
        strict_score=score_sum / total if total else 0.0,
        accuracy=_pct(correct, total),
        n=total,
        n_valid=valid,
        n_unparsed=unparsed,
        n_out_of_range=out_of_range,
    )


def count_units(items: Iterable[Item]) -> list[tuple[Item, float | None, bool]]:
    """Per counting item (file order): (item, its normalized score or None when the official scorer
    excludes it (no gt, unparseable, outside [1, L]), whether the parsed count equals gt)."""
    out = []
    for item in _in_file_order(items):
        if item.get("gt") is None:
            out.append((item, None, False))
            continue
        parsed = parse_count(str(item.get("response") or "").strip())
        score = count_item_score(parsed, int(item["gt"]), int(item["image_len"]))
        out.append((item, score, score is not None and parsed == int(item["gt"])))
    return out


def grp_units(items: Iterable[Item]) -> list[tuple[Item, bool]]:
    """Per grouping item (file order): (item, whether it is answered correctly)."""
    return [(item, grp_correct(str(item.get("response") or "").strip(), str(item.get("gt") or ""))) for item in _in_file_order(items)]


def grp_accuracy(items: Iterable[Item]) -> tuple[float, int]:
    """OC-Grp / PC-Grp accuracy over all items (multi-choice and unparseable answers are wrong)."""
    items = list(items)
    correct = sum(grp_correct(str(item.get("response") or "").strip(), str(item.get("gt") or "")) for item in items)
    return _pct(correct, len(items)), len(items)


@dataclass(frozen=True)
class VidStats:
    score: float  # (AB% + ABA%) / 2, macro over the two types
    ab_pct: float
    aba_pct: float
    n_ab: int  # judged and parsed
    n_aba: int
    n_unparsed: int  # judge replied without "Score: <n>": dropped, as officially
    n_failed: int  # judge unreachable after retries: dropped (the official script would crash)


def vid_type(vid: str) -> str:
    """Official rule: a video is ABA iff its id contains "ABA"."""
    return "ABA" if "ABA" in vid else "AB"


def vid_stats(scored: Iterable[tuple[str, int | None]], n_failed: int = 0) -> VidStats:
    """From (type, judge score or None) pairs: unparsed scores are dropped; no clipping; empty type -> 0."""
    ab: list[int] = []
    aba: list[int] = []
    unparsed = 0
    for type_, score in scored:
        if score is None:
            unparsed += 1
        elif type_ == "ABA":
            aba.append(score)
        else:
            ab.append(score)
    ab_pct = (sum(ab) / len(ab) if ab else 0) / 1 * 100
    aba_pct = (sum(aba) / len(aba) if aba else 0) / 2 * 100
    return VidStats((ab_pct + aba_pct) / 2, ab_pct, aba_pct, len(ab), len(aba), unparsed, n_failed)


def vid_type_pct(type_: str, score: float) -> float:
    """One judged video on its type's 0-100 scale: AB judge scores are 0-1 (x100), ABA 0-2 (x50)."""
    return score * (50.0 if type_ == "ABA" else 100.0)


def vid_unit_scores(judged: Iterable[tuple[str, float]]) -> list[float]:
    """Per judged video (type, parsed judge score), the unit score whose plain mean is the official
    (AB% + ABA%) / 2: its type's percentage weighted by n / (2 n_type), n the judged videos."""
    judged = list(judged)
    n = len(judged)
    per_type = {t: sum(1 for type_, _ in judged if type_ == t) for t in ("AB", "ABA")}
    return [vid_type_pct(t, s) * n / (2 * per_type[t]) for t, s in judged]


def vid_se_unit_scores(judged: Iterable[tuple[str, float]]) -> list[float]:
    """Per judged video (type, parsed judge score), the unit score whose plain mean is the official
    (AB% + ABA%) / 2 and whose CLT standard error (SD, ddof=1, / sqrt(n)) is that of a mean of two
    independent type means, sqrt(SE_AB^2 + SE_ABA^2) / 2 (a type without a judged video contributes 0):
    the score plus the video's percentage centred on its type's mean, scaled by
    sqrt(n (n - 1) / (4 n_type (n_type - 1))). When a type has exactly one judged video its variance cannot
    be estimated: the weighted units of `vid_unit_scores` are returned (the two types pooled)."""
    judged = list(judged)
    n = len(judged)
    pcts = {t: [vid_type_pct(t, s) for type_, s in judged if type_ == t] for t in ("AB", "ABA")}
    if any(len(values) == 1 for values in pcts.values()):
        return vid_unit_scores(judged)
    score = sum(math.fsum(v) / len(v) for v in pcts.values() if v) / 2
    centre = {t: math.fsum(v) / len(v) for t, v in pcts.items() if v}
    scale = {t: math.sqrt(n * (n - 1) / (4 * len(v) * (len(v) - 1))) for t, v in pcts.items() if v}
    return [score + scale[t] * (vid_type_pct(t, s) - centre[t]) for t, s in judged]
