"""Requests as the official inference scripts build them (spec section 1.4).

Image subtasks: one user turn holding every image in record order, then the text "\n" + question (the
official `system_prompt + "\n" + question` with an empty system prompt; no system message). Video
(PC-VID): the sampled frames (see `video.py`), then the bare question. Images are opened from their
paths only when a request is built, one document at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PIL import Image

from lmms_tasks.utils.services.data import DataError, MediaError
from lmms_tasks.utils.services.prompts import prompt
from lmms_tasks.utils.vlm2_bench.video import sample_frames

USER_TEXT_KEY = "vlm2bench/official_inference/user_text_template"

Doc = Mapping[str, Any]


def _is_video(doc: Doc) -> bool:
    """Whether the document's subtask is of the video kind (the `kind` its YAML declares, stamped into the document)."""
    return doc.get("kind") == "vid"


def user_text(doc: Doc) -> str:
    """The text part: "\n" + question for images, the question alone for the video subtask."""
    if _is_video(doc):
        return str(doc["question"])
    return prompt(USER_TEXT_KEY).format(question=doc["question"])


def load_image(path: str, doc: Doc) -> Image.Image:
    try:
        image = Image.open(path)
        image.load()  # decode now and release the file handle
        return image if image.mode == "RGB" else image.convert("RGB")
    except (OSError, ValueError) as exc:
        raise MediaError(f"vlm2_bench {doc.get('subtask')} record {doc.get('q_id')!r}: cannot read image {path} ({exc})") from exc


def visuals(doc: Doc) -> list[Image.Image]:
    """The document's images (or sampled video frames) in order, decoded now."""
    if _is_video(doc):
        try:
            return sample_frames(doc["video_path"])
        except DataError as exc:
            raise MediaError(f"vlm2_bench {doc.get('subtask')} record {doc.get('vid')!r}: {exc}") from exc
    return [load_image(path, doc) for path in doc["images"]]


def messages(doc: Doc) -> list[dict[str, Any]]:
    """lmms-eval chat messages: one user turn, visuals first, then the text."""
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in visuals(doc)]
    content.append({"type": "text", "text": user_text(doc)})
    return [{"role": "user", "content": content}]
