"""Per-unit scores and standard errors, by hand: a T/F score's unit is the pair (its score goes to the
pair's first question), counting's the valid answer, grouping's the question. The standard error is the
sample standard deviation (ddof=1) of the per-unit scores over sqrt(n), on the 0-100 scale; the batch
function writes each unit's score where lmms-eval's CLT stderr (`<metric>_stderr_clt`, the one standard-error
route: every metric with a standard error gets its units' scores in its own items), clustered stderr and
--baseline read it."""

from __future__ import annotations

import json
import math
import random

import pytest

from lmms_tasks.utils.vlm2_bench import hooks

KIND = {"gc_mat": "tf_gc", "oc_cnt": "cnt", "oc_grp": "grp", "pc_cpr": "tf_cpr"}  # as their YAMLs declare (dataset_kwargs.kind)


def _item(subtask: str, index: int, q_id: str, gt, response: str, **extra) -> dict:
    """An item as `process_results` makes it: with the kind (and PC-Cpr's q_id rule, strip_tf_prefix) its YAML declares."""
    rule = {"strip_tf_prefix": subtask == "pc_cpr"} if KIND[subtask] == "tf_cpr" else {}
    return {"task": f"vlm2_bench_{subtask}", "subtask": subtask, "kind": KIND[subtask], **rule, "doc_index": index, "q_id": q_id, "gt": gt, "response": response, **extra}


def _se(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) / math.sqrt(len(values))


def _documents(items: list[dict]) -> list[dict]:
    """What lmms-eval hands the batch function: one dict per document, the item under every metric, from
    shuffled ranks and after a JSON round trip."""
    documents = [{name: json.loads(json.dumps(item)) for name in ("vlm2_score", "vlm2_exact_score", "tf_pair_acc")} for item in items]
    random.Random(3).shuffle(documents)
    return documents


def _clt(items: list[dict], metric: str) -> float | str:
    """lmms-eval 0.7.3's `<metric>_stderr_clt` after the batch step: SD (ddof=1) / sqrt(n) over the metric's
    items that carry the task's score_key (`vlm2_score`); "N/A" for fewer than two."""
    names = hooks.metric_names(items[0]["kind"])
    documents = hooks.score_batch([{name: json.loads(json.dumps(item)) for name in names} for item in items])
    scores = [d[metric]["vlm2_score"] for d in documents if "vlm2_score" in d[metric]]
    return _se(scores) if len(scores) > 1 else "N/A"


def _scored(documents: list[dict]) -> dict[int, dict]:
    """doc_index -> the vlm2_score item of each document the batch function gave a score."""
    return {d["vlm2_score"]["doc_index"]: d["vlm2_score"] for d in documents if "score" in d["vlm2_score"]}


GC = [
    _item("gc_mat", 0, "a", "T", "T"),
    _item("gc_mat", 1, "a", "F", "The answer is false."),  # pair a: correct (parsed), not in exact mode
    _item("gc_mat", 2, "b", "T", "T"),
    _item("gc_mat", 3, "b", "F", "T"),  # pair b: wrong
    _item("gc_mat", 4, "c", "T", "T"),  # singleton: a unit that can never be correct
    _item("gc_mat", 5, "d", "F", "F"),
    _item("gc_mat", 6, "d", "T", "T"),  # pair d: correct
]


def test_gc_pairs_are_the_units_and_the_first_question_carries_the_score() -> None:
    pairs = [100.0, 0.0, 0.0, 100.0]  # a, b, c, d
    assert hooks.agg_vlm2_score(GC) == pytest.approx(50.0)
    assert _clt(GC, "vlm2_score") == pytest.approx(_se(pairs))  # over 4 pairs, not 7 questions
    assert _clt(GC, "tf_pair_acc") == pytest.approx(_se(pairs))
    assert _clt(GC, "tf_pos_acc") == pytest.approx(_se([100.0, 100.0, 100.0, 100.0]))  # 0
    assert _clt(GC, "tf_neg_acc") == pytest.approx(_se([100.0, 0.0, 0.0, 100.0]))
    exact_pairs = [0.0, 0.0, 0.0, 100.0]  # "The answer is false." is not exactly "F"
    assert _clt(GC, "vlm2_exact_score") == pytest.approx(_se(exact_pairs))
    assert _clt(GC, "gc_exact_pair_acc") == pytest.approx(_se(exact_pairs))

    documents = hooks.score_batch(_documents(GC))
    scored = _scored(documents)
    assert sorted(scored) == [0, 2, 4, 5]  # each pair's first question in file order
    assert {i: (s["vlm2_score"], s["score"], s["pair_id"]) for i, s in scored.items()} == {
        0: (100.0, 1.0, "a"),
        2: (0.0, 0.0, "b"),
        4: (0.0, 0.0, "c"),
        5: (100.0, 1.0, "d"),
    }
    # the sample-level field lmms-eval's --baseline loader reads; other metrics' items stay unscored
    assert sorted((d["vlm2_score"]["doc_index"], d["unit_score"]) for d in documents if "unit_score" in d) == [(0, 1.0), (2, 0.0), (4, 0.0), (5, 1.0)]
    assert not any("score" in d["tf_pair_acc"] or "score" in d["vlm2_exact_score"] for d in documents)
    # ...but every metric with a standard error carries its own units' scores under the score_key
    assert sorted((d["tf_pair_acc"]["doc_index"], d["tf_pair_acc"]["vlm2_score"]) for d in documents if "vlm2_score" in d["tf_pair_acc"]) == [(0, 100.0), (2, 0.0), (4, 0.0), (5, 100.0)]
    assert sorted(d["vlm2_exact_score"]["vlm2_score"] for d in documents if "vlm2_score" in d["vlm2_exact_score"]) == [0.0, 0.0, 0.0, 100.0]
    # what lmms-eval's CLT reads (item[score_key] of the items that have it) gives the same standard error
    clt = [d["vlm2_score"]["vlm2_score"] for d in documents if "vlm2_score" in d["vlm2_score"]]
    assert _se(clt) == pytest.approx(_clt(GC, "vlm2_score"))
    # the aggregations ignore the added fields: same score after batch scoring
    assert hooks.agg_vlm2_score([d["vlm2_score"] for d in documents]) == pytest.approx(50.0)


def test_cpr_pairs_leave_out_incomplete_and_overwritten_questions() -> None:
    items = [
        _item("pc_cpr", 0, "tf_1_p", "T", "T"),
        _item("pc_cpr", 1, "1_n", "F", "F"),  # pair 1 (prefix stripped): correct
        _item("pc_cpr", 2, "2_p", "T", "F"),  # overwritten by doc 5
        _item("pc_cpr", 3, "2_n", "F", "F"),
        _item("pc_cpr", 4, "3_p", "T", "T"),  # incomplete: no unit
        _item("pc_cpr", 5, "2_p", "T", "T"),  # pair 2: correct -> its first member is now doc 3
        _item("pc_cpr", 6, "4_n", "F", "T"),
        _item("pc_cpr", 7, "4_p", "T", "T"),  # pair 4: wrong
    ]
    assert hooks.agg_vlm2_score(items) == pytest.approx(200 / 3)
    assert _clt(items, "vlm2_score") == pytest.approx(_se([100.0, 100.0, 0.0]))
    scored = _scored(hooks.score_batch(_documents(items)))
    assert {i: (s["vlm2_score"], s["pair_id"]) for i, s in scored.items()} == {0: (100.0, "1"), 3: (100.0, "2"), 6: (0.0, "4")}


def test_counting_units_are_the_valid_answers() -> None:
    items = [
        _item("oc_cnt", 0, "a", 2, "2", image_len=4),  # 100
        _item("oc_cnt", 1, "b", 1, "two", image_len=4),  # 10.40 (one off)
        _item("oc_cnt", 2, "c", 3, "no idea", image_len=4),  # unparsed: excluded officially, no score
        _item("oc_cnt", 3, "d", 2, "5", image_len=4),  # out of range: excluded, no score
        _item("oc_cnt", 4, "e", 2, "1", image_len=2),  # valid, 0
    ]
    ten = 100 * (1 - (1 / 3) ** 0.1)
    valid = [100.0, ten, 0.0]
    assert hooks.agg_vlm2_score(items) == pytest.approx(sum(valid) / 3)
    assert _clt(items, "vlm2_score") == pytest.approx(_se(valid))
    assert _clt(items, "cnt_norm_score") == pytest.approx(_se(valid))
    assert _clt(items, "cnt_strict_score") == pytest.approx(_se([100.0, ten, 0.0, 0.0, 0.0]))
    assert _clt(items, "cnt_acc") == pytest.approx(_se([100.0, 0.0, 0.0, 0.0, 0.0]))
    scored = _scored(hooks.score_batch(_documents(items)))
    assert {i: s["vlm2_score"] for i, s in scored.items()} == pytest.approx({0: 100.0, 1: ten, 4: 0.0})


def test_grouping_units_are_the_questions_and_one_unit_has_no_stderr() -> None:
    items = [_item("oc_grp", 0, "a", "(A) 1 and 2", "(A)"), _item("oc_grp", 1, "b", "(B) None", "(A) or (B)"), _item("oc_grp", 2, "c", "(B) None", "B")]
    assert _clt(items, "grp_acc") == pytest.approx(_se([100.0, 0.0, 100.0]))
    assert _clt(items, "vlm2_score") == pytest.approx(_se([100.0, 0.0, 100.0]))
    assert sorted(_scored(hooks.score_batch(_documents(items)))) == [0, 1, 2]
    assert _clt(items[:1], "vlm2_score") == "N/A"


def test_k_samples_responses_are_scored_as_fractions_per_unit() -> None:
    documents = hooks.score_batch(_documents(GC), repeat=2)
    scored = _scored(documents)
    assert {i: (s["vlm2_score"], s["score"]) for i, s in scored.items()} == {0: (1.0, 1.0), 2: (0.0, 0.0), 4: (0.0, 0.0), 5: (1.0, 1.0)}
    assert not any("unit_score" in d for d in documents)


def test_group_stderr_combines_the_subtasks_as_independent_samples() -> None:
    from lmms_tasks.utils.vlm2_bench import SUBTASKS

    names = [f"vlm2_bench_{s}" for s in SUBTASKS]
    stderrs = [1.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0]
    expected = math.sqrt(sum(s**2 for s in stderrs)) / 9
    assert hooks.group_mean.stderr(stderrs, [1] * 9, False, subtasks=names) == pytest.approx(expected)
    assert hooks.group_gap_to_human.stderr(stderrs, [1] * 9, False, subtasks=names) == pytest.approx(expected)


def test_vid_units_have_the_score_as_mean_and_the_two_type_standard_error_as_clt() -> None:
    from lmms_tasks.utils.vlm2_bench.metrics import vid_se_unit_scores, vid_stats

    def check(judged: list[tuple[str, int]]) -> None:
        units = vid_se_unit_scores(judged)
        score = vid_stats(judged).score
        by_type = {t: [s * (100 if t == "AB" else 50) for type_, s in judged if type_ == t] for t in ("AB", "ABA")}
        expected = math.sqrt(sum(_se(v) ** 2 for v in by_type.values() if v)) / 2  # an empty type's percentage is the constant 0
        assert sum(units) / len(units) == pytest.approx(score)
        assert _se(units) == pytest.approx(expected)

    check([("AB", 1), ("AB", 0), ("AB", 1), ("ABA", 2), ("ABA", 0)])  # n_type 3 and 2
    check([("AB", 1), ("AB", 0), ("AB", 0), ("AB", 1), ("ABA", 1), ("ABA", 2), ("ABA", 2)])
    check([("AB", 1), ("AB", 0), ("AB", 0)])  # no ABA video judged
    # one video of a type: no variance estimate for it, the types pooled (the weighted units)
    assert vid_se_unit_scores([("AB", 1), ("AB", 0), ("ABA", 2)]) == pytest.approx([100 * 3 / 4, 0.0, 100 * 3 / 2])


@pytest.mark.parametrize("missing", range(9))
def test_a_group_stderr_is_na_when_any_subtask_has_none(missing: int) -> None:
    """Every member decides, whichever position lmms-eval hands it in (issue 43): one subtask without a standard
    error makes the 9-subtask mean's N/A; the 8-image mean ignores PC-VID's only."""
    from lmms_tasks.utils.vlm2_bench import SUBTASKS

    names = [f"vlm2_bench_{s}" for s in SUBTASKS]
    for order in (names, names[::-1]):
        stderrs = {name: 2.0 for name in order}
        stderrs[names[missing]] = "N/A"
        values = [stderrs[name] for name in order]
        assert hooks.group_mean.stderr(values, [1] * 9, False, subtasks=order) == "N/A"
        assert hooks.group_overall.stderr(values, [1] * 9, False, subtasks=order) == "N/A"
        img8 = hooks.group_img8_score.stderr(values, [1] * 9, False, subtasks=order)
        if names[missing] == "vlm2_bench_pc_vid":
            assert img8 == pytest.approx(math.sqrt(8 * 2.0**2) / 8)
        else:
            assert img8 == "N/A"
