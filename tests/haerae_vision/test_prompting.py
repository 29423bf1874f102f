"""The model's messages (system prompt, text first, images in dataset order) and the official reasoning
strip (quirks K6, K7)."""

from __future__ import annotations

import pytest
from PIL import Image

from lmms_tasks.utils.haerae_vision.prompting import build_messages, clean_response, images, question_text, strip_reasoning
from lmms_tasks.utils.testing.cases import haerae_vision as cases

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


@pytest.mark.parametrize("case", cases.RESPONSE_CASES, ids=lambda c: c.name)
def test_k7_strip_reasoning_official_rule(case: cases.ResponseCase) -> None:
    # the reply table is shared with tests/conformance, which replays it through the lmms-eval CLI
    assert clean_response(case.reply) == case.response
    if not case.reply or not case.reply.startswith("[LMMS_EVAL_REQUEST_FAILED"):
        assert strip_reasoning(case.reply) == case.response


def test_failed_request_becomes_empty_like_the_official_retry_exhaustion() -> None:
    assert clean_response("[LMMS_EVAL_REQUEST_FAILED after 5 retries] HTTP 500") == ""
    assert clean_response("<think>x</think>답") == "답"
