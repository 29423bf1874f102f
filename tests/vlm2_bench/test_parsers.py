"""The official VLM2-Bench answer parsers, table-driven from spec section 1.5 and quirks V4-V7."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.testing.cases import vlm2_bench as cases
from lmms_tasks.utils.vlm2_bench.parsers import (
    count_options,
    extract_numbers,
    grp_clean,
    grp_correct,
    parse_count,
    parse_judge_score,
    parse_tf,
    words_to_num,
)

# The reply tables are shared with tests/conformance, which replays them through the lmms-eval CLI.


def _reply(case: cases.Case) -> str:
    return (case.reply or "").strip()  # as the hook gets it: lmms-eval gives "" for null, official inference strips


@pytest.mark.parametrize("case", cases.TF_CASES + cases.GC_CASES, ids=lambda c: f"{c.subtask}-{c.name}")
def test_parse_tf(case: cases.Case) -> None:
    assert parse_tf(_reply(case)) == case.verdict["parsed"]


@pytest.mark.parametrize("case", cases.COUNT_CASES, ids=lambda c: c.name)
def test_parse_count(case: cases.Case) -> None:
    assert parse_count(_reply(case)) == case.verdict["parsed"]


def test_words_to_num_units_tens_and_scales() -> None:
    assert words_to_num("two one") == 3
    assert words_to_num("three hundred five") == 305
    assert words_to_num("hundred") == 100
    assert words_to_num("zero") is None
    assert words_to_num("two cats") is None
    assert extract_numbers("5 and 7 and seven") == [5, 7, 7]


@pytest.mark.parametrize("case", cases.GRP_CASES, ids=lambda c: c.name)
def test_grouping_rule(case: cases.Case) -> None:
    assert grp_correct(_reply(case), case.gt) is case.verdict["correct"]


def test_grouping_helpers() -> None:
    assert grp_clean("(C) 1, 3 and 4") == "(C"
    assert count_options("(A) and (B) and (c)") == 2


@pytest.mark.parametrize("case", cases.VID_CASES, ids=lambda c: c.name)
def test_parse_judge_score(case: cases.VidCase) -> None:
    assert parse_judge_score(case.judge_reply) == case.score


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Score: 10", 10),  # every digit of the first number (spec 1.5 (e): `Score:\s*(\d+)`, cast to int)
        ("Score:12", 12),
        ("Score: 100 out of 2", 100),
        ("Score: 01", 1),
        ("Score: 2.5", 2),
        ("Score: 1 0", 1),
        ("Score:\n\n 20", 20),
        ("Score: 11\nScore: 2", 11),
    ],
)
def test_parse_judge_score_reads_the_whole_number(reply: str, score: int) -> None:
    assert parse_judge_score(reply) == score
