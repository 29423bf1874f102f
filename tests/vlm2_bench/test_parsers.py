"""The official VLM2-Bench answer parsers, table-driven from spec section 1.5 and quirks V4-V7."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("T", "T"),
        ("F", "F"),
        ("t", "T"),
        ("true", "T"),
        ("False.", "F"),
        ("The answer is True", "T"),
        ("TRUE", "T"),
        # V6: agreeing repeats are still "multiple answers"
        ("True. The statement is true.", None),
        ("T, T", None),
        ("T or F?", None),
        # V6: "can't" / "isn't" yield a standalone t at a word boundary
        ("I can't tell", "T"),
        ("It isn't the same, false", None),
        ("They aren't the same", "T"),
        # no token at all
        ("", None),
        ("Yes, they are the same object.", None),
        ("Tr", None),
        ("fTrue", None),
    ],
)
def test_parse_tf(answer: str, expected: str | None) -> None:
    assert parse_tf(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("3", 3),
        ("three", 3),
        ("There are 3 people.", 3),
        ("2 (two)", None),
        ("Image 1 and image 3 show the same person, so 2", None),
        ("two people, one on the left", 3),  # V4: all number words form one number
        ("the one in the first image", 1),
        ("zero", None),  # V5: words_to_num never returns 0
        ("0", 0),  # V5: the digit parses (then falls out of range)
        ("twenty one", 21),
        ("Twenty-One objects", 21),
        ("one hundred", 100),
        ("no number here", None),
        ("4 and four", None),
        ("thousand", None),  # official quirk: "and" is deleted inside "thousand", leaving "thous"
    ],
)
def test_parse_count(answer: str, expected: int | None) -> None:
    assert parse_count(answer) == expected


def test_words_to_num_units_tens_and_scales() -> None:
    assert words_to_num("two one") == 3
    assert words_to_num("three hundred five") == 305
    assert words_to_num("hundred") == 100
    assert words_to_num("zero") is None
    assert words_to_num("two cats") is None
    assert extract_numbers("5 and 7 and seven") == [5, 7, 7]


@pytest.mark.parametrize(
    ("answer", "gt", "expected"),
    [
        ("(C)", "(C) 1, 3 and 4", True),
        ("(C) 1, 3 and 4", "(C) 1, 3 and 4", True),
        ("(C) something else entirely", "(C) 1, 3 and 4", True),
        ("C", "(C) 1, 3 and 4", False),
        ("C)", "(C) 1, 3 and 4", False),
        ("Answer: (C)", "(C) 1, 3 and 4", False),  # V7: raw prefix comparison
        ("The answer is (C)", "(C) 1, 3 and 4", False),
        ("(c)", "(C) 1, 3 and 4", False),  # case-sensitive
        ("(A) or (C)", "(C) 1, 3 and 4", False),  # multi-choice
        ("(A) 1 and 2, not (B)", "(A) 1 and 2", False),
        (" (A)", "(A) 1 and 2", True),  # the cleaned prefix is stripped
        ("(B) None", "(B) None", True),
        ("None", "None", True),  # no ")" at all: whole stripped strings compared
    ],
)
def test_grouping_rule(answer: str, gt: str, expected: bool) -> None:
    assert grp_correct(answer, gt) is expected


def test_grouping_helpers() -> None:
    assert grp_clean("(C) 1, 3 and 4") == "(C"
    assert count_options("(A) and (B) and (c)") == 2


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Score: 1", 1),
        ("Score:2", 2),
        ("Reasoning... Score:   0\nScore: 2", 0),  # first match wins
        ("score: 1", None),  # case-sensitive
        ("Score: two", None),
        ("", None),
        (None, None),
        ("Score: 7", 7),  # no clipping
    ],
)
def test_parse_judge_score(reply: str | None, expected: int | None) -> None:
    assert parse_judge_score(reply) == expected
