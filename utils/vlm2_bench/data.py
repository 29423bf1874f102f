"""Locate the official VLM2-Bench release and turn its JSONL files into lmms-eval documents.

The release (HF dataset repository `Sterzhang/vlm2-bench`, a zip with `jsonl/` and `data/`) is used
through `lmms_tasks.utils.data.release_root`: `VLM2_BENCH_DATA` names a local extracted copy, otherwise
the pinned revision is downloaded and extracted once into `$HF_HOME/vlm2_bench`. Documents carry
absolute media paths, never pixels, so a 3,060-document dataset stays small; images are opened only
when a request is built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lmms_tasks.utils.data import DataError, DataSource, read_jsonl, release_root
from lmms_tasks.utils.logging import logger
from lmms_tasks.utils.vlm2_bench import SUBTASKS, task_name

# The HF repository's history contains "delete dataset for updated version" commits, so a commit sha
# should be pinned here; none could be verified offline, so this follows the repository's main branch.
HF_REVISION = "main"
SOURCE = DataSource("vlm2_bench", "Sterzhang/vlm2-bench", HF_REVISION, "VLM2_BENCH_DATA")
CACHE_NAME = "vlm2_bench"

IMAGE_DIRS = {"gc": "data/gc/processed", "oc": "data/oc/original_obj", "pc": "data/pc/image/picks_face"}
VIDEO_DIR = "data/pc/video/UNI"
VIDEO_EXTENSIONS = (".mp4", ".mov", ".avi")  # the official loader takes the first that exists, in this order
# The official video scripts read "vallina"; the README tree implies "vanilla". Both are accepted.
VIDEO_JSONL_CANDIDATES = ("jsonl/pc/vallina/pc_v_open-ended.jsonl", "jsonl/pc/vanilla/pc_v_open-ended.jsonl")
DEFAULT_IMAGE_LEN = 2  # official counting scorer's fallback when a q_id has neither field


def dataset_root() -> Path:
    """The release root (holding `jsonl/` and `data/`); tolerates the early uploads' extra top folder."""
    root = release_root(SOURCE, CACHE_NAME)
    if (root / "jsonl").is_dir():
        return root
    nested = [child for child in root.iterdir() if child.is_dir() and (child / "jsonl").is_dir()] if root.is_dir() else []
    if len(nested) == 1:
        return nested[0]
    raise DataError(f"{SOURCE.describe()}: no jsonl/ directory under {root} (expected the VLM2-Bench release layout)")


def question_file(root: Path, subtask: str) -> Path:
    """The JSONL of one subtask; for pc_vid whichever of the two directory spellings exists."""
    if subtask == "pc_vid":
        candidates = [root / rel for rel in VIDEO_JSONL_CANDIDATES]
        for path in candidates:
            if path.is_file():
                return path
        raise DataError(f"vlm2_bench pc_vid: question file not found; tried {candidates[0]} and {candidates[1]}")
    family = SUBTASKS[subtask][0]
    return root / "jsonl" / family / "vanilla" / f"{subtask}.jsonl"


def find_video(root: Path, vid: str) -> Path | None:
    for ext in VIDEO_EXTENSIONS:
        path = root / VIDEO_DIR / f"{vid}{ext}"
        if path.is_file():
            return path
    return None


def image_lengths(records: list[dict[str, Any]]) -> dict[Any, int]:
    """q_id -> L as the official counting scorer reads it from the question file (last duplicate wins)."""
    lengths: dict[Any, int] = {}
    for record in records:
        q_id = record.get("q_id")
        if q_id is None:
            continue
        if "image_seq_len" in record:
            lengths[q_id] = record["image_seq_len"]
        elif isinstance(record.get("image_seq"), list):
            lengths[q_id] = len(record["image_seq"])
        else:
            lengths[q_id] = DEFAULT_IMAGE_LEN
    return lengths


def _record_name(subtask: str, record: dict[str, Any], line: int) -> str:
    ident = record.get("vid") if subtask == "pc_vid" else record.get("q_id")
    return f"vlm2_bench {subtask} record {ident!r} (line {line})"


def _q_id(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value))


def load_docs(subtask: str, root: Path | None = None) -> list[dict[str, Any]]:
    """The subtask's documents in file order, with absolute media paths checked to exist.

    Image records with fewer than two images are left out, as the official inference scripts skip them.
    """
    if subtask not in SUBTASKS:
        raise DataError(f"unknown VLM2-Bench subtask {subtask!r}; expected one of {sorted(SUBTASKS)}")
    root = root or dataset_root()
    path = question_file(root, subtask)
    records = read_jsonl(path)
    family, kind = SUBTASKS[subtask]
    lengths = image_lengths(records) if kind == "cnt" else {}
    docs: list[dict[str, Any]] = []
    skipped: list[str] = []
    for index, record in enumerate(records):
        name = _record_name(subtask, record, index + 1)
        if "question" not in record:
            raise DataError(f"{name} in {path}: no 'question' field")
        doc: dict[str, Any] = {
            "task": task_name(subtask),
            "subtask": subtask,
            "doc_index": index,
            "q_id": _q_id(record.get("q_id")),
            "question": str(record["question"]),
            "images": [],
            "image_len": 0,
            "vid": "",
            "video_path": "",
        }
        if kind == "vid":
            vid = record.get("vid")
            if not isinstance(vid, str) or not vid:
                raise DataError(f"{name} in {path}: no 'vid' field")
            video = find_video(root, vid)
            if video is None:
                tried = ", ".join(str(root / VIDEO_DIR / f"{vid}{ext}") for ext in VIDEO_EXTENSIONS)
                raise DataError(f"{name}: video not found (tried {tried})")
            doc.update(vid=vid, video_path=str(video), gt=str(record.get("gt_answer", "")))
        else:
            images = record.get("images")
            if not isinstance(images, list):
                raise DataError(f"{name} in {path}: 'images' must be a list of paths")
            if len(images) < 2:
                skipped.append(str(record.get("q_id")))
                continue
            image_paths = [root / IMAGE_DIRS[family] / str(rel) for rel in images]
            for image_path in image_paths:
                if not image_path.is_file():
                    raise DataError(f"{name}: image not found: {image_path}")
            doc["images"] = [str(p) for p in image_paths]
            gt = record.get("gt_answer")
            if kind == "cnt":
                try:
                    doc["gt"] = None if gt is None else int(gt)
                    doc["image_len"] = int(lengths.get(record.get("q_id"), DEFAULT_IMAGE_LEN))
                except (TypeError, ValueError) as exc:
                    raise DataError(f"{name} in {path}: counting gt_answer / image_seq_len must be integers ({exc})") from exc
            else:
                doc["gt"] = "" if gt is None else str(gt)
        docs.append(doc)
    if skipped:
        logger.warning(
            f"vlm2_bench {subtask}: skipped {len(skipped)} record(s) with fewer than 2 images, as the official scripts do: {skipped[:10]}"
        )
    if not docs:
        raise DataError(f"vlm2_bench {subtask}: no usable records in {path}")
    return docs
