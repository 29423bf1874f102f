"""The judge score parser against the official `parse_single_score` semantics (spec 3.4, quirks K4, K5).

Expected values are written by hand from the official rules: exactly one `<score>` tag (case-insensitive,
across lines), `num/den` or one number, each reduced with `limit_denominator(100000)`, no clipping; zero
or several tags, a zero denominator and anything else unparseable give None (which counts 0 later).
"""

from __future__ import annotations

import pytest

from lmms_tasks.utils.haerae_vision.judging import parse_score

EVIDENCE = '<evidence>\nItem 1:\nevidence: "젤다의 전설이라고 명시"\nexplanation: 제목을 정확히 밝힘 (규칙 2)\nmet: 1\n\nItem 2:\nevidence: "…"\nexplanation: 플랫폼 언급 없음\nmet: 0\n</evidence>\n'

CASES = [
    # spec 3.4 examples
    ("spec: K/N with spaces and newlines", "<score>\n2.5/4 \n</score>", 0.625),
    ("spec: prose inside the tag", "<score>3/5 (0.6)</score>", None),
    ("spec: two score blocks", "<score>1/2</score>\n<score>2/2</score>", None),
    # the intended reply shape, Korean evidence
    ("Korean evidence block then K/N", EVIDENCE + "<score>\n1/2 \n</score>", 0.5),
    ("K/N as a repeating fraction", EVIDENCE + "<score>2/3</score>", 2 / 3),
    ("half credit items", "<score>1.5/3</score>", 0.5),
    ("spaces around the slash", "<score> 3 / 4 </score>", 0.75),
    ("newlines inside the tag (DOTALL)", "<score>\n\n3\n/\n4\n\n</score>", 0.75),
    ("upper-case tags (IGNORECASE)", "<SCORE>1/4</Score>", 0.25),
    ("a single number", "<score>0.8</score>", 0.8),
    ("a leading-dot number", "<score>.5</score>", 0.5),
    ("explicit plus sign", "<score>+1/2</score>", 0.5),
    ("a single number is reduced by limit_denominator", "<score>0.333333333</score>", 1 / 3),
    ("full-width digits match \\d as in the official regex", "<score>１/２</score>", 0.5),
    # K5: not clipped
    ("K5: K greater than N passes through", "<score>5/4</score>", 1.25),
    ("K5: negative passes through", "<score>-1/2</score>", -0.5),
    ("K5: number above 1 passes through", "<score>3</score>", 3.0),
    # K4: unparseable -> None
    ("K4: no tag, Korean prose only", "점수: 2/3 입니다.", None),
    ("K4: empty reply", "", None),
    ("K4: no reply content at all", None, None),
    ("K4: the template's literal K/N", "<score>\nK/N \n</score>", None),
    ("K4: unclosed tag", "<score>2/3", None),
    ("K4: decimal comma", "<score>1,5/3</score>", None),
    ("K4: exponent notation", "<score>1e0</score>", None),
    ("K4: a percentage", "<score>60%</score>", None),
    ("K4: two tags, one malformed one valid", "<score>없음</score> <score>1/2</score>", 0.5),
    ("K4: two valid tags in Korean reply", "첫 번째 <score>1/3</score> 수정: <score>2/3</score>", None),
    ("K4: zero denominator", "<score>3/0</score>", None),
    ("K4: 0/0", "<score>0/0</score>", None),
    ("K4: denominator that limit_denominator reduces to zero", "<score>1/0.000001</score>", None),
    ("zero numerator is a score", "<score>0/3</score>", 0.0),
]


@pytest.mark.parametrize("text,expected", [pytest.param(t, e, id=name) for name, t, e in CASES])
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
