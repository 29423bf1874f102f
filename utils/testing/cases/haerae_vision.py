"""HAERAE-Vision reply cases (spec 3.2-3.4, quirks K2, K4, K5, K7) and their official verdicts.

Two tables. `RESPONSE_CASES`: a model reply and the response cell the official judge reads after the API
path's `strip_reasoning` (the text after the last `</think>`, `</thinking>`, `<think>`, `<thinking>`, then
stripped) and the CSV round trip (an empty cell and pandas' missing-value strings become `nan`).
`JUDGE_CASES`: a judge reply and the score `parse_single_score` gives it (None: counted 0 by the
aggregation). Each case is one item whose questions carry the case's tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_tasks.utils.testing.fixtures import FixtureSet
from lmms_tasks.utils.testing.fixtures import haerae_vision as dataset

FIXED_JUDGE_REPLY = "<evidence>\nItem 1:\nevidence: \"…\"\nexplanation: 충족\nmet: 1\n</evidence>\n<score>\n1/1 \n</score>"
EVIDENCE = '<evidence>\nItem 1:\nevidence: "젤다의 전설이라고 명시"\nexplanation: 제목을 정확히 밝힘 (규칙 2)\nmet: 1\n\nItem 2:\nevidence: "…"\nexplanation: 플랫폼 언급 없음\nmet: 0\n</evidence>\n'


@dataclass(frozen=True)
class ResponseCase:
    name: str
    reply: str | None
    response: str  # what process_results keeps (the official strip_reasoning of the reply)
    judged: str  # the response cell in the judge's message (after the CSV round trip)


@dataclass(frozen=True)
class JudgeCase:
    name: str
    judge_reply: str | None
    score: float | None


RESPONSE_CASES = [
    ResponseCase("think_then_answer", "<think>이미지를 보면...</think>정답은 젤다입니다.", "정답은 젤다입니다.", "정답은 젤다입니다."),
    ResponseCase("plain", "정답은 젤다입니다.", "정답은 젤다입니다.", "정답은 젤다입니다."),
    ResponseCase("surrounding_whitespace", "  앞뒤 공백  \n", "앞뒤 공백", "앞뒤 공백"),
    ResponseCase("thinking_tag", "<thinking>고민</thinking>\n답: 무당벌레", "답: 무당벌레", "답: 무당벌레"),
    # text before an opening tag is dropped by the official rule (lmms-eval's own rule would keep it)
    ResponseCase("text_before_think_dropped", "서론 <think>생각</think> 결론", "결론", "결론"),
    ResponseCase("last_closing_tag_counts", "<think>a</think>중간</think>끝", "끝", "끝"),
    ResponseCase("unclosed_think", "답변 시작 <think>생각 중", "생각 중", "생각 중"),
    ResponseCase("bare_closing_tag", "생각만 했다</think>\n\n최종 답", "최종 답", "최종 답"),
    # lmms-eval's <analysis> pair is not an official tag: kept
    ResponseCase("analysis_kept", "<analysis>분석</analysis>답", "<analysis>분석</analysis>답", "<analysis>분석</analysis>답"),
    # K2: empty responses reach the judge as the literal `nan`
    ResponseCase("empty", "", "", "nan"),
    ResponseCase("null_content", None, "", "nan"),
    ResponseCase("only_think", "<think>생각만 했다</think>", "", "nan"),
    ResponseCase("request_failed", "[LMMS_EVAL_REQUEST_FAILED after 5 retries] HTTP 500", "", "nan"),
    # pandas reads its missing-value strings back as NaN
    ResponseCase("na_string", "N/A", "N/A", "nan"),
    ResponseCase("none_string", " None ", "None", "nan"),
    # quotes, commas and newlines survive the CSV round trip
    ResponseCase("multiline_quotes", '첫 줄, 쉼표\n둘째 줄 "인용"', '첫 줄, 쉼표\n둘째 줄 "인용"', '첫 줄, 쉼표\n둘째 줄 "인용"'),
    ResponseCase("emoji", "✅ 무당벌레 🐞", "✅ 무당벌레 🐞", "✅ 무당벌레 🐞"),
]

JUDGE_CASES = [
    # spec 3.4 examples
    JudgeCase("spec_K_over_N", "<score>\n2.5/4 \n</score>", 0.625),
    JudgeCase("spec_prose_inside_tag", "<score>3/5 (0.6)</score>", None),
    JudgeCase("spec_two_blocks", "<score>1/2</score>\n<score>2/2</score>", None),
    # the intended reply shape, Korean evidence
    JudgeCase("korean_evidence", EVIDENCE + "<score>\n1/2 \n</score>", 0.5),
    JudgeCase("repeating_fraction", EVIDENCE + "<score>2/3</score>", 2 / 3),
    JudgeCase("half_credit", "<score>1.5/3</score>", 0.5),
    JudgeCase("spaces_around_slash", "<score> 3 / 4 </score>", 0.75),
    JudgeCase("newlines_inside_tag", "<score>\n\n3\n/\n4\n\n</score>", 0.75),
    JudgeCase("upper_case_tags", "<SCORE>1/4</Score>", 0.25),
    JudgeCase("single_number", "<score>0.8</score>", 0.8),
    JudgeCase("leading_dot", "<score>.5</score>", 0.5),
    JudgeCase("plus_sign", "<score>+1/2</score>", 0.5),
    JudgeCase("limit_denominator", "<score>0.333333333</score>", 1 / 3),
    JudgeCase("fullwidth_digits", "<score>１/２</score>", 0.5),
    # K5: not clipped
    JudgeCase("K5_above_N", "<score>5/4</score>", 1.25),
    JudgeCase("K5_negative", "<score>-1/2</score>", -0.5),
    JudgeCase("K5_number_above_1", "<score>3</score>", 3.0),
    # K4: unparseable -> None (counted 0)
    JudgeCase("K4_korean_prose", "점수: 2/3 입니다.", None),
    JudgeCase("K4_empty", "", None),
    JudgeCase("K4_null_content", None, None),
    JudgeCase("K4_literal_K_N", "<score>\nK/N \n</score>", None),
    JudgeCase("K4_unclosed", "<score>2/3", None),
    JudgeCase("K4_decimal_comma", "<score>1,5/3</score>", None),
    JudgeCase("K4_exponent", "<score>1e0</score>", None),
    JudgeCase("K4_percentage", "<score>60%</score>", None),
    JudgeCase("K4_malformed_then_valid", "<score>없음</score> <score>1/2</score>", 0.5),
    JudgeCase("K4_two_valid", "첫 번째 <score>1/3</score> 수정: <score>2/3</score>", None),
    JudgeCase("K4_zero_denominator", "<score>3/0</score>", None),
    JudgeCase("K4_zero_over_zero", "<score>0/0</score>", None),
    JudgeCase("K4_denominator_reduced_to_zero", "<score>1/0.000001</score>", None),
    JudgeCase("zero_numerator", "<score>0/3</score>", 0.0),
    # a <think> block in the judge's reply is parsed as it is
    JudgeCase("judge_think_then_score", "<think><score>0/1</score> 초안</think>\n<score>1/1</score>", None),
]

FIRST_ID = 9000


def tag(name: str) -> str:
    return f"[hv:{name}]"


def items() -> list[dict[str, Any]]:
    """One HAERAE-Vision item per case (both tables), in the fixture's item shape."""
    names = [c.name for c in RESPONSE_CASES] + [f"judge_{c.name}" for c in JUDGE_CASES]
    return [
        {
            "question_idx": FIRST_ID + index,
            "category": "과학" if index % 2 else "게임",
            "source": "conformance",
            "images": [(index % 7 + 1, "RGB")],
            "question_original": f"이거 뭐예요? {tag(name)}",
            "question_explicit": f"사진 속 물체의 이름을 알려주세요. {tag(name)}",
            "checklist": ["물체의 이름을 밝힌다"],
            "answer": "모름",
        }
        for index, name in enumerate(names)
    ]


def write(root: Path) -> FixtureSet:
    return dataset.write(root, items=items())


def script(server: Any) -> None:
    """Model replies by case tag; judge replies by case tag (the judge message carries the question)."""
    from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL

    for case in RESPONSE_CASES:
        server.script(lambda r, t=tag(case.name): r.model == STAND_IN_MODEL and t in r.text, case.reply)
        server.script(lambda r, t=tag(case.name): r.model == STAND_IN_JUDGE and t in r.text, FIXED_JUDGE_REPLY)
    for case in JUDGE_CASES:
        name = f"judge_{case.name}"
        server.script(lambda r, t=tag(name): r.model == STAND_IN_MODEL and t in r.text, f"응답 {name}")
        server.script(lambda r, t=tag(name): r.model == STAND_IN_JUDGE and t in r.text, case.judge_reply)


def judged_response(judge_message: str) -> str:
    """The response cell of a judge message (between the appended `[Response]` and `[Checklist]` headers)."""
    block = judge_message.rsplit("\n[Response]\n", 1)[1]
    return block.rsplit("\n[Checklist]\n", 1)[0]


def case_name(question: str) -> str:
    """The case name carried by an item's question."""
    return question.rsplit("[hv:", 1)[1].split("]", 1)[0]
