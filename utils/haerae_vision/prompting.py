"""What the model under test is shown, as the official `main.py` shows it, and how its reply is cleaned.

Official messages: `[system: SYSTEM, user: [text, image_1, ..., image_n]]` with the question text BEFORE
the images and the images in dataset order (quirk K6). The API path sends `question.strip()`; each image is
converted to RGB when its mode is RGBA/LA/P (then JPEG-encoded by the official code; lmms-eval's backend
does its own encoding). The reply is cleaned with the official `strip_reasoning` rule (API path).
"""

from __future__ import annotations

from typing import Any

from lmms_tasks.utils.services.prompts import prompt

SYSTEM_PROMPT_KEY = "haerae/inference/default_system_prompt"
REASONING_TAGS = ("</think>", "</thinking>", "<think>", "<thinking>")  # official order
REQUEST_FAILED_PREFIX = "[LMMS_EVAL_REQUEST_FAILED"  # lmms-eval's API backends' text for a failed call
_CONVERT_MODES = ("RGBA", "LA", "P")


def system_prompt() -> str:
    return prompt(SYSTEM_PROMPT_KEY)


def question_text(doc: dict[str, Any]) -> str:
    """The question variant of this task, stripped as the official API path strips it."""
    return str(doc["question_used"]).strip()


def images(doc: dict[str, Any]) -> list[Any]:
    """The item's images in dataset order; RGBA/LA/P converted to RGB as the official encoder does."""
    out = []
    for index, image in enumerate(doc.get("images") or []):
        if image is None:
            raise ValueError(f"HAERAE-Vision question_idx={doc.get('question_idx')!r}: image {index} is missing")
        out.append(image.convert("RGB") if getattr(image, "mode", None) in _CONVERT_MODES else image)
    return out


def build_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """lmms-eval chat messages: system prompt, then one user turn with the text first, then the images."""
    content: list[dict[str, Any]] = [{"type": "text", "text": question_text(doc)}]
    content += [{"type": "image", "url": image} for image in images(doc)]
    return [
        {"role": "system", "content": [{"type": "text", "text": system_prompt()}]},
        {"role": "user", "content": content},
    ]


def strip_reasoning(text: Any) -> str:
    """The official rule: for each tag in order, keep only the text after its last occurrence; strip."""
    if not isinstance(text, str):
        return ""
    for tag in REASONING_TAGS:
        if tag in text:
            text = text.split(tag)[-1].strip()
    return text.strip()


def clean_response(raw: Any) -> str:
    """The response the official pipeline would have judged: failed calls become "" (as after its
    retries), everything else goes through `strip_reasoning`."""
    if isinstance(raw, str) and raw.startswith(REQUEST_FAILED_PREFIX):
        return ""
    return strip_reasoning(raw)
