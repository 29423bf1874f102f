"""The judge score parser against the official `parse_single_score` semantics (spec 3.4, quirks K4, K5).

Expected values are written by hand from the official rules: exactly one `<score>` tag (case-insensitive,
across lines), `num/den` or one number, each reduced with `limit_denominator(100000)`, no clipping; zero
or several tags, a zero denominator and anything else unparseable give None (which counts 0 later).
"""

from __future__ import annotations

import pytest

from lmms_tasks.utils.haerae_vision.judging import parse_score
from lmms_tasks.utils.testing.cases import haerae_vision as cases


# The judge-reply table is shared with tests/conformance, which replays it through the lmms-eval CLI.
@pytest.mark.parametrize("text,expected", [pytest.param(c.judge_reply, c.score, id=c.name) for c in cases.JUDGE_CASES])
def test_parse_score(text: str | None, expected: float | None) -> None:
    got = parse_score(text)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-12)
        assert isinstance(got, float)


def test_single_number_is_reduced_exactly_as_the_official_fraction() -> None:
    # 0.333333333 -> Fraction(...).limit_denominator(100000) == 1/3, so the float is 1/3, not 0.333333333
    assert parse_score("<score>0.333333333</score>") == 1 / 3
    assert parse_score("<score>0.333333333</score>") != 0.333333333


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<score>10/12</score>", 10 / 12),  # every digit of numerator and denominator (issue 43)
        ("<score>7/10</score>", 0.7),
        ("<score>15/20</score>", 0.75),
        ("<score>12</score>", 12.0),
        ("<score>100/100</score>", 1.0),
        ("<score>10.5/21</score>", 0.5),
    ],
)
def test_scores_of_several_digits(text: str, expected: float) -> None:
    assert parse_score(text) == pytest.approx(expected, abs=1e-12)
