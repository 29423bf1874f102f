"""Aggregations against hand-computed values of the official formulas (spec 1.6, quirks V2, V3, V8-V11),
with items unordered and split across ranks, and after a JSON round trip (as `lmms_tasks score` reads them)."""

from __future__ import annotations

import json
import random

import pytest

from lmms_tasks.utils.vlm2_bench import SUBTASKS, hooks
from lmms_tasks.utils.vlm2_bench.metrics import (
    count_item_score,
    count_stats,
    cpr_pair_counts,
    cpr_pair_key,
    gc_pair_counts,
    vid_stats,
    vid_type,
)

KIND = {"gc_mat": "tf_gc", "gc_trk": "tf_gc", "oc_cpr": "tf_cpr", "oc_cnt": "cnt", "pc_cpr": "tf_cpr", "pc_grp": "grp"}  # as their YAMLs declare (dataset_kwargs.kind)


def _item(subtask: str, index: int, q_id: str, gt, response: str, **extra) -> dict:
    """An item as `process_results` makes it: with the kind (and PC-Cpr's q_id rule, strip_tf_prefix) its YAML declares."""
    rule = {"strip_tf_prefix": subtask == "pc_cpr"} if KIND[subtask] == "tf_cpr" else {}
    return {"task": f"vlm2_bench_{subtask}", "subtask": subtask, "kind": KIND[subtask], **rule, "doc_index": index, "q_id": q_id, "gt": gt, "response": response, **extra}


def _rank_shuffled(items: list[dict], world_size: int = 3, seed: int = 0) -> list[dict]:
    """How rank 0 receives items: strided shards concatenated (rank 0's, then rank 1's, ...), JSON round-tripped."""
    shards = [items[r::world_size] for r in range(world_size)]
    gathered = [json.loads(json.dumps(item)) for shard in shards for item in shard]
    random.Random(seed).shuffle(gathered)
    return gathered


# -- T/F pairing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q_id", "strip", "expected"),
    [
        ("12_p", False, ("12", "p")),
        ("12_n", False, ("12", "n")),
        ("oc_1_p", False, None),  # split on the first "_": suffix "1_p" is dropped
        ("tf_5_p", True, ("5", "p")),
        ("tf_5_p", False, None),  # OC does not strip the prefix: main "tf", suffix "5_p"
        ("12p", False, None),
        ("", False, None),
        (None, False, None),
        ("12_x", False, None),
    ],
)
def test_cpr_pair_key(q_id, strip: bool, expected) -> None:
    assert cpr_pair_key(q_id, strip) == expected


def test_cpr_three_accuracies_with_incomplete_pairs_and_duplicates() -> None:
    items = [
        _item("oc_cpr", 0, "1_p", "T", "True"),  # pair 1: p ok
        _item("oc_cpr", 1, "1_n", "f", "F"),  # n ok (gt is stripped and upper-cased)
        _item("oc_cpr", 2, "2_p", "F", "T"),  # pair 2: p wrong
        _item("oc_cpr", 3, "2_n", "T", "T"),  # n ok
        _item("oc_cpr", 4, "3_p", "T", "T"),  # pair 3: n wrong (unparseable: two tokens)
        _item("oc_cpr", 5, "3_n", "F", "False, definitely false"),
        _item("oc_cpr", 6, "4_p", "T", "T"),  # incomplete: dropped from N
        _item("oc_cpr", 7, "oc_5_p", "T", "T"),  # malformed id: skipped
        _item("oc_cpr", 8, "5_p", "T", "F"),  # pair 5: first p wrong ...
        _item("oc_cpr", 9, "5_n", "F", "F"),
        _item("oc_cpr", 10, "5_p", "T", "T"),  # ... a later duplicate overwrites it: p ok
    ]
    # pairs 1,2,3,5 -> N=4; p ok: 1,3,5 = 3; n ok: 1,2,5 = 3; both: 1,5 = 2
    for got in (cpr_pair_counts(items, False), cpr_pair_counts(_rank_shuffled(items), False)):
        assert (got.correct_pos, got.correct_neg, got.correct_pairs, got.n) == (3, 3, 2, 4)
        assert got.pos_acc == pytest.approx(75.0)
        assert got.pair_acc == pytest.approx(50.0)
    shuffled = _rank_shuffled(items, seed=5)
    assert hooks.agg_tf_pair_acc(shuffled) == pytest.approx(50.0)
    assert hooks.agg_tf_pos_acc(shuffled) == pytest.approx(75.0)
    assert hooks.agg_tf_neg_acc(shuffled) == pytest.approx(75.0)
    assert hooks.agg_tf_n_pairs(shuffled) == 4
    assert hooks.agg_vlm2_score(shuffled) == pytest.approx(50.0)


def test_pc_cpr_strips_tf_prefix_but_oc_does_not() -> None:
    items = [
        _item("pc_cpr", 0, "tf_1_p", "T", "T"),
        _item("pc_cpr", 1, "1_n", "F", "F"),  # pairs with tf_1_p once the prefix is stripped
        _item("pc_cpr", 2, "tf_2_n", "F", "T"),  # incomplete
    ]
    assert hooks.agg_tf_n_pairs(_rank_shuffled(items)) == 1
    assert hooks.agg_tf_pair_acc(_rank_shuffled(items)) == pytest.approx(100.0)
    as_oc = [dict(item, subtask="oc_cpr", strip_tf_prefix=False) for item in items]  # OC-Cpr declares no prefix rule
    assert hooks.agg_tf_n_pairs(as_oc) == 0  # "tf_1_p" -> main "tf", suffix "1_p": skipped
    assert hooks.agg_tf_pair_acc(as_oc) == 0.0


def test_gc_groups_by_raw_q_id_and_counts_singletons() -> None:
    items = [
        _item("gc_mat", 0, "a", "T", "T"),
        _item("gc_mat", 1, "a", "F", "The answer is false."),  # parsed F; exact match fails
        _item("gc_mat", 2, "b", "T", "t"),  # parsed T; exact match fails (case)
        _item("gc_mat", 3, "b", "F", "F"),
        _item("gc_mat", 4, "c", "T", "T"),  # singleton: counts in N, never pair-correct
        _item("gc_mat", 5, "d", "F", "T"),
        _item("gc_mat", 6, "d", "T", "I can't say"),  # "can't" parses as T
    ]
    parsed = gc_pair_counts(_rank_shuffled(items))
    # groups a,b,c,d (N=4). parsed: p ok a,b,c,d=4; n ok a,b=2; both a,b=2
    assert (parsed.correct_pos, parsed.correct_neg, parsed.correct_pairs, parsed.n) == (4, 2, 2, 4)
    exact = gc_pair_counts(_rank_shuffled(items), exact=True)
    # exact: p ok a,c=2 ("t" != "T", "I can't say" != "T"); n ok b=1; both: none
    assert (exact.correct_pos, exact.correct_neg, exact.correct_pairs, exact.n) == (2, 1, 0, 4)
    shuffled = _rank_shuffled(items, seed=2)
    assert hooks.agg_vlm2_score(shuffled) == pytest.approx(50.0)
    assert hooks.agg_gc_exact_pair_acc(shuffled) == 0.0
    assert hooks.agg_gc_exact_pos_acc(shuffled) == pytest.approx(50.0)
    assert hooks.agg_gc_exact_neg_acc(shuffled) == pytest.approx(25.0)


# -- counting --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parsed", "gt", "L", "expected"),
    [
        (2, 2, 2, 100.0),
        (1, 2, 2, 0.0),  # L <= 3: any wrong in-range answer scores 0 (V3)
        (3, 2, 3, 0.0),
        (2, 1, 4, 100 * (1 - (1 / 3) ** 0.1)),  # 10.40
        (3, 4, 4, 100 * (1 - (1 / 3) ** 0.1)),
        (3, 2, 4, 100 * (1 - 0.5**0.1)),  # 6.70
        (3, 1, 4, 100 * (1 - (2 / 3) ** 0.1)),  # 3.97
        (4, 1, 4, 0.0),
        (0, 1, 4, None),  # out of range -> excluded
        (5, 4, 4, None),
        (None, 2, 4, None),
        (2, 1, 1, None),
        (1, 1, 1, 100.0),
    ],
)
def test_count_item_score(parsed, gt: int, L: int, expected) -> None:
    got = count_item_score(parsed, gt, L)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_count_item_score_rounded_values_from_the_spec() -> None:
    assert round(count_item_score(2, 1, 4), 2) == 10.40
    assert round(count_item_score(3, 2, 4), 2) == 6.70
    assert round(count_item_score(3, 1, 4), 2) == 3.97


def test_count_stats_valid_only_strict_and_accuracy() -> None:
    items = [
        _item("oc_cnt", 0, "a", 2, "2", image_len=4),  # 100
        _item("oc_cnt", 1, "b", 1, "two", image_len=4),  # 10.40
        _item("oc_cnt", 2, "c", 3, "2 (two)", image_len=4),  # unparsed
        _item("oc_cnt", 3, "d", 2, "5", image_len=4),  # out of range
        _item("oc_cnt", 4, "e", 2, "0", image_len=2),  # out of range (V5)
        _item("oc_cnt", 5, "f", 2, "1", image_len=2),  # valid, 0
        _item("oc_cnt", 6, "g", None, "1", image_len=2),  # missing gt: in the accuracy denominator only
    ]
    s = count_stats(_rank_shuffled(items))
    ten = 100 * (1 - (1 / 3) ** 0.1)
    assert (s.n, s.n_valid, s.n_unparsed, s.n_out_of_range) == (7, 3, 1, 2)
    assert s.norm_score == pytest.approx((100 + ten + 0) / 3)
    assert s.strict_score == pytest.approx((100 + ten + 0) / 7)
    assert s.accuracy == pytest.approx(100 * 1 / 7)
    shuffled = _rank_shuffled(items, seed=9)
    assert hooks.agg_vlm2_score(shuffled) == pytest.approx((100 + ten) / 3)
    assert hooks.agg_cnt_strict_score(shuffled) == pytest.approx((100 + ten) / 7)
    assert hooks.agg_cnt_acc(shuffled) == pytest.approx(100 / 7)
    assert (hooks.agg_cnt_n_valid(shuffled), hooks.agg_cnt_n_unparsed(shuffled), hooks.agg_cnt_n_out_of_range(shuffled)) == (3, 1, 2)


# -- grouping --------------------------------------------------------------------------------------------------


def test_grouping_accuracy_keeps_wrong_formats_in_the_denominator() -> None:
    items = [
        _item("pc_grp", 0, "a", "(A) 1 and 2", "(A)"),
        _item("pc_grp", 1, "b", "(B) None", "(A) or (B)"),
        _item("pc_grp", 2, "c", "(C) 1, 3 and 4", "Answer: (C)"),
        _item("pc_grp", 3, "d", "(D) 1 and 4", "(D) 1 and 4"),
    ]
    assert hooks.agg_grp_acc(_rank_shuffled(items)) == pytest.approx(50.0)
    assert hooks.agg_grp_n(items) == 4
    assert hooks.agg_vlm2_exact_score(items) == pytest.approx(50.0)  # no exact-match mode for grouping


def test_group_only_metrics_take_the_subtasks_by_name() -> None:
    names = [f"vlm2_bench_{s}" for s in SUBTASKS]
    scores = [10.0 * (i + 1) for i in range(len(names))]  # 10 .. 90, pc_vid last (90)
    stderrs = [1.0] * len(names)
    assert hooks.group_mean(scores, [1] * 9, False, subtasks=names) == pytest.approx(50.0)
    assert hooks.group_overall(scores[::-1], [1] * 9, False, subtasks=names[::-1]) == pytest.approx(50.0)
    assert hooks.group_img8_score(scores, [1] * 9, False, subtasks=names) == pytest.approx(45.0)  # 10..80
    assert hooks.group_gap_to_human(scores, [1] * 9, False, subtasks=names) == pytest.approx(50.0 - 95.16)
    # independent subtasks: sqrt(sum se^2) / k
    assert hooks.group_mean.stderr(stderrs, [1] * 9, False, subtasks=names) == pytest.approx(3.0 / 9)
    assert hooks.group_img8_score.stderr(stderrs, [1] * 9, False, subtasks=names) == pytest.approx(8**0.5 / 8)
    # a missing subtask: logged, not raised (the run's results would be lost)
    assert hooks.group_overall(scores[:8], [1] * 8, False, subtasks=names[:8]) is None
    assert hooks.group_img8_score(scores[1:], [1] * 8, False, subtasks=names[1:]) is None


def test_group_means_add_in_the_tables_order_whatever_order_lmms_eval_hands_them() -> None:
    """A family group lists a tag, which lmms-eval fills in the order it finds the YAML files: the means add in
    the subtask table's order, so the same scores give the same bits on every machine."""
    names = [f"vlm2_bench_{s}" for s in SUBTASKS]
    scores = [52.32, 74.13, 67.14, 6.4, 75.82, 59.11, 30.13, 3.1, 86.55]  # float sums that depend on the order (by name, too)
    stderrs = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    in_order = sum(scores) / len(scores)
    order = [5, 6, 7, 4, 3, 0, 8, 1, 2]
    shuffled = {"values": [scores[i] for i in order], "subtasks": [names[i] for i in order]}
    assert sum(shuffled["values"]) / len(scores) != in_order  # the shuffled sum really differs in its last bits
    assert sum(v for _, v in sorted(zip(names, scores))) / len(scores) != in_order  # and so does the sum in name order
    assert hooks.group_mean.stderr([stderrs[i] for i in order], [1] * 9, False) != hooks.group_mean.stderr(stderrs, [1] * 9, False)
    assert hooks.group_mean(shuffled["values"], [1] * 9, False, subtasks=shuffled["subtasks"]) == in_order
    assert hooks.group_mean.stderr([stderrs[i] for i in order], [1] * 9, False, subtasks=shuffled["subtasks"]) == hooks.group_mean.stderr(
        stderrs, [1] * 9, False, subtasks=names
    )


# -- video -----------------------------------------------------------------------------------------------------


def test_vid_type_is_decided_by_the_id() -> None:
    assert vid_type("UNI_ABA_0001") == "ABA"
    assert vid_type("UNI_AB_0001") == "AB"
    assert vid_type("xABAx") == "ABA"


def test_vid_stats_macro_average_drops_unparsed_and_does_not_clip() -> None:
    scored = [("AB", 1), ("AB", 0), ("AB", None), ("ABA", 2), ("ABA", 1), ("ABA", None), ("ABA", 0)]
    s = vid_stats(scored, n_failed=1)
    assert s.ab_pct == pytest.approx(50.0)  # mean(1, 0) / 1 * 100
    assert s.aba_pct == pytest.approx(50.0)  # mean(2, 1, 0) / 2 * 100
    assert s.score == pytest.approx(50.0)
    assert (s.n_ab, s.n_aba, s.n_unparsed, s.n_failed) == (2, 3, 2, 1)
    unclipped = vid_stats([("AB", 2), ("ABA", 2)])
    assert unclipped.ab_pct == pytest.approx(200.0)
    assert unclipped.score == pytest.approx(150.0)
    only_aba = vid_stats([("ABA", 1)])
    assert only_aba.score == pytest.approx((0 + 50.0) / 2)  # an empty type contributes 0


def test_mixed_subtasks_are_refused() -> None:
    items = [_item("oc_cpr", 0, "1_p", "T", "T"), _item("pc_cpr", 1, "1_n", "F", "F")]
    with pytest.raises(ValueError, match="several subtasks"):
        hooks.agg_tf_pair_acc(items)


# -- issue 43: a GC group is decided by all of its members, in any order ---------------------------------------

# (gt, answer) of each member of one q_id group -> (pos_ok, neg_ok), per the official GC scorer (spec 1.6 "T/F, GC"):
# p_correct iff SOME member with gt "T" answered "T"; n_correct iff SOME member with gt "F" answered "F".
GC_GROUPS = [
    ([("T", "T"), ("T", "F"), ("F", "F")], (True, True)),  # a second T member answered wrong does not undo the first
    ([("T", "F"), ("T", "T"), ("F", "F")], (True, True)),
    ([("F", "F"), ("F", "T"), ("T", "T")], (True, True)),
    ([("F", "T"), ("F", "F"), ("T", "F")], (False, True)),
    ([("T", "T"), ("F", "T"), ("F", "T")], (True, False)),
    ([("T", "F"), ("T", "F"), ("F", "F")], (False, True)),
    ([("T", "T"), ("F", "T")], (True, False)),
    ([("T", "T")], (True, False)),  # a singleton: never pair-correct
]


@pytest.mark.parametrize(("members", "expected"), GC_GROUPS, ids=lambda v: str(v))
def test_a_gc_group_is_decided_by_every_member_in_any_order(members: list[tuple[str, str]], expected: tuple[bool, bool]) -> None:
    import itertools

    from lmms_tasks.utils.vlm2_bench.metrics import gc_pairs

    for order in itertools.permutations(range(len(members))):
        items = [_item("gc_trk", index, "g1", members[m][0], members[m][1]) for index, m in enumerate(order)]
        for exact in (False, True):
            (pair,) = gc_pairs(items, exact=exact)
            assert (pair.pos_ok, pair.neg_ok) == expected, (order, exact)
            assert pair.correct is all(expected)
        counts = gc_pair_counts(_rank_shuffled(items))
        assert (counts.correct_pos, counts.correct_neg, counts.correct_pairs, counts.n) == (expected[0], expected[1], all(expected), 1)


def test_vid_judge_scores_of_two_digits_are_not_read_as_one() -> None:
    # "Score: 10" is 10 (not 1): scores are not clipped (spec 1.6, quirk V11), so it moves the type's percentage
    from lmms_tasks.utils.vlm2_bench.parsers import parse_judge_score

    replies = [("AB", "Score: 10"), ("AB", "Score: 0"), ("ABA", "Reasoning. Score:12"), ("ABA", "Score: 2")]
    stats = vid_stats([(type_, parse_judge_score(reply)) for type_, reply in replies])
    assert (stats.ab_pct, stats.aba_pct) == pytest.approx((500.0, 350.0))
