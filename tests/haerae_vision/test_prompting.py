"""The model's messages (system prompt, text first, images in dataset order) and the official reasoning
strip (quirks K6, K7)."""

from __future__ import annotations

import pytest
from PIL import Image

from lmms_tasks.utils.haerae_vision.prompting import build_messages, clean_response, images, question_text, strip_reasoning

SYSTEM = "You are a helpful math assistant. Answer precisely in Korean if the prompt is Korean."


def _doc(*imgs: Image.Image, question: str = "  이거 뭐예요?\n") -> dict:
    return {"question_idx": 7, "question_used": question, "images": list(imgs)}


def test_k6_system_then_text_then_images_in_order() -> None:
    red, green, blue = (Image.new("RGB", (8, 8), c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255)))
    messages = build_messages(_doc(red, green, blue))
    assert messages[0] == {"role": "system", "content": [{"type": "text", "text": SYSTEM}]}
    user = messages[1]
    assert user["role"] == "user"
    assert [part["type"] for part in user["content"]] == ["text", "image", "image", "image"]
    assert user["content"][0]["text"] == "이거 뭐예요?"  # stripped, as the official API path sends it
    assert [part["url"].getpixel((0, 0)) for part in user["content"][1:]] == [(255, 0, 0), (0, 255, 0), (0, 0, 255)]


def test_images_converted_to_rgb_only_for_rgba_la_p() -> None:
    rgba = Image.new("RGBA", (4, 4), (10, 20, 30, 0))
    la = Image.new("LA", (4, 4), (50, 255))
    pal = Image.new("RGB", (4, 4), (200, 100, 0)).convert("P")
    gray = Image.new("L", (4, 4), 128)
    out = images(_doc(rgba, la, pal, gray))
    assert [im.mode for im in out] == ["RGB", "RGB", "RGB", "L"]
    assert out[0].getpixel((0, 0)) == (10, 20, 30)  # alpha dropped, not composited (PIL convert)


def test_missing_image_names_the_item() -> None:
    with pytest.raises(ValueError, match="question_idx=7"):
        images({"question_idx": 7, "images": [None]})


def test_question_text_is_stripped() -> None:
    assert question_text({"question_used": "\n 질문 \t"}) == "질문"


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("<think>이미지를 보면...</think>정답은 젤다입니다.", "정답은 젤다입니다."),
        ("정답은 젤다입니다.", "정답은 젤다입니다."),
        ("  앞뒤 공백  ", "앞뒤 공백"),
        ("<thinking>고민</thinking>\n답: 무당벌레", "답: 무당벌레"),
        # text before an opening tag is dropped by the official rule (lmms-eval's rule would keep it)
        ("서론 <think>생각</think> 결론", "결론"),
        # only the last occurrence counts
        ("<think>a</think>중간</think>끝", "끝"),
        # an unclosed opening tag: everything after it is kept
        ("답변 시작 <think>생각 중", "생각 중"),
        # a bare closing tag (prefilled <think> in the chat template)
        ("생각만 했다</think>\n\n최종 답", "최종 답"),
        # lmms-eval's <analysis> pair is not an official tag: kept
        ("<analysis>분석</analysis>답", "<analysis>분석</analysis>답"),
        ("", ""),
        (None, ""),
    ],
)
def test_k7_strip_reasoning_official_rule(raw: object, expected: str) -> None:
    assert strip_reasoning(raw) == expected


def test_failed_request_becomes_empty_like_the_official_retry_exhaustion() -> None:
    assert clean_response("[LMMS_EVAL_REQUEST_FAILED after 5 retries] HTTP 500") == ""
    assert clean_response("<think>x</think>답") == "답"
