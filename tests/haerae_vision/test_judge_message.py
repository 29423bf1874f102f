"""Golden tests of the judge message: the template's sha256, the byte layout of the appended block, and
whole messages written out by hand (quirks K1, K2, K3, K10)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from lmms_tasks.utils.haerae_vision.judging import judge_message, judge_messages, template, template_sha256
from lmms_tasks.utils.haerae_vision.render import render_checklist

TEMPLATE_SHA256 = "2151c923be1ba0e6b63a5ace597cac347c95f9d89d4c8ddbf5ca73118859b134"  # official utils/evaluate.py
REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "prompts_exact.json"


def _reference_template() -> str:
    """The template straight from the shared reference file (not through the code under test)."""
    if REFERENCE.is_file():
        return json.loads(REFERENCE.read_text(encoding="utf-8"))["haerae/judge/prompt_template"]["text"]
    return template()


def test_template_is_the_official_one() -> None:
    text = template()
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == TEMPLATE_SHA256 == template_sha256()
    assert text == _reference_template()
    assert len(text) == 2465
    assert text.endswith("\n* Output **only** the two tags above; no code fences, no extra text.")
    assert "K/N \n</score>" in text  # trailing space kept


def test_k1_placeholders_stay_literal_and_block_is_appended_without_newline() -> None:
    message = judge_message("이거 무슨 게임이에요?", "젤다입니다.", "['제목을 밝힌다']")
    assert message.count("{{QUESTION}}") == message.count("{{RESPONSE}}") == message.count("{{CHECKLIST}}") == 1
    assert "no extra text.[INPUT]\n이거 무슨 게임이에요?\n[Response]\n" in message
    assert "[Question]\n이거" not in message  # the appended block has no [Question] header


def test_whole_message_by_hand_list_checklist() -> None:
    expected = (
        _reference_template()
        + "[INPUT]\n이거 무슨 게임이에요?\n"
        + "[Response]\n정답은 젤다의 전설입니다.\n"
        + "[Checklist]\n['게임 제목을 정확히 밝힌다' '출시 플랫폼을 언급한다']\n"
    )
    checklist = render_checklist(["게임 제목을 정확히 밝힌다", "출시 플랫폼을 언급한다"])
    assert judge_message("이거 무슨 게임이에요?", "정답은 젤다의 전설입니다.", checklist) == expected
    assert judge_messages("이거 무슨 게임이에요?", "정답은 젤다의 전설입니다.", checklist) == [{"role": "user", "content": expected}]


def test_whole_message_by_hand_wrapped_checklist_and_unstripped_question() -> None:
    items = ["a" * 30 + " 확인", "b" * 30 + " 확인", "c" * 30 + " 확인"]
    expected = (
        _reference_template()
        + "[INPUT]\n  여기서 어떻게 깨요?\n\n"  # K10: question_used as in the data, not stripped
        + "[Response]\n상자를 민다.\n"
        + "[Checklist]\n['"
        + "a" * 30
        + " 확인' '"
        + "b" * 30
        + " 확인'\n '"
        + "c" * 30
        + " 확인']\n"
    )
    assert judge_message("  여기서 어떻게 깨요?\n", "상자를 민다.", render_checklist(items)) == expected


def test_k2_empty_response_is_sent_as_nan() -> None:
    expected = _reference_template() + "[INPUT]\n질문\n[Response]\nnan\n[Checklist]\n['항목']\n"
    assert judge_message("질문", "", render_checklist(["항목"])) == expected
    assert judge_message("질문", "None", render_checklist(["항목"])) == expected


def test_k3_string_checklist_is_sent_as_stored() -> None:
    checklist = "1. 제목을 밝힌다\n2. 플랫폼을 언급한다"
    expected = _reference_template() + "[INPUT]\n질문\n[Response]\n답\n[Checklist]\n1. 제목을 밝힌다\n2. 플랫폼을 언급한다\n"
    assert judge_message("질문", "답", render_checklist(checklist)) == expected


def test_batch_rendering_equals_one_message_at_a_time() -> None:
    from lmms_tasks.utils.haerae_vision.judging import judge_message_batch

    rows = [
        ("이거 뭐예요?", "", "['항목']"),
        ("  둘째 질문\n", "None", "1. 문자열 체크리스트"),
        ("셋째", "42", "['a' 'b']"),
        ("넷째", '줄 하나\r\n"인용", 쉼표', "['곤충의 종 이름(예: \\'무당벌레\\')']"),
    ]
    assert judge_message_batch(rows) == [judge_message(*row) for row in rows]
    assert judge_message_batch([]) == []
