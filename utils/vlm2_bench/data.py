"""Locate the official VLM2-Bench release and turn its JSONL files into lmms-eval documents.

The release (HF dataset repository `Sterzhang/vlm2-bench`, a zip with `jsonl/` and `data/`) is used
through `lmms_tasks.utils.services.data.release_root`: `VLM2_BENCH_DATA` names a local extracted copy, otherwise
the pinned revision is downloaded and extracted once into `$HF_HOME/vlm2_bench`. Documents carry
absolute media paths, never pixels, so a 3,060-document dataset stays small; images are opened only
when a request is built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lmms_tasks.utils.services import schema
from lmms_tasks.utils.services.data import DataError, DataSource, iter_jsonl, release_root
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.vlm2_bench import KINDS, SUBTASKS, task_name

# The HF repository's history contains "delete dataset for updated version" commits, so a commit sha
# should be pinned here; none could be verified offline, so this follows the repository's main branch
# unless VLM2_BENCH_REVISION names a commit. The commit actually loaded is recorded with every run.
HF_REVISION = "main"
# a local copy's provenance hashes its question files (the images and videos are checked by content, not hashed)
SOURCE = DataSource("vlm2_bench", "Sterzhang/vlm2-bench", HF_REVISION, "VLM2_BENCH_DATA", "VLM2_BENCH_REVISION", local_files=("jsonl/**/*.jsonl",))
CACHE_NAME = "vlm2_bench"

IMAGE_DIRS = {"gc": "data/gc/processed", "oc": "data/oc/original_obj", "pc": "data/pc/image/picks_face"}
VIDEO_DIR = "data/pc/video/UNI"
VIDEO_EXTENSIONS = (".mp4", ".mov", ".avi")  # the official loader takes the first that exists, in this order
# The official video scripts read "vallina"; the README tree implies "vanilla". Both are accepted.
VIDEO_JSONL_CANDIDATES = ("jsonl/pc/vallina/pc_v_open-ended.jsonl", "jsonl/pc/vanilla/pc_v_open-ended.jsonl")
DEFAULT_IMAGE_LEN = 2  # official counting scorer's fallback when a q_id has neither field


def dataset_root(source: DataSource = SOURCE) -> Path:
    """The release root (holding `jsonl/` and `data/`) of `source` (default: the benchmark's, as the
    environment names it); tolerates the early uploads' extra top folder."""
    root = release_root(source, CACHE_NAME)
    if (root / "jsonl").is_dir():
        return root
    nested = [child for child in root.iterdir() if child.is_dir() and (child / "jsonl").is_dir()] if root.is_dir() else []
    if len(nested) == 1:
        return nested[0]
    raise DataError(f"{source.describe()}: no jsonl/ directory under {root} (expected the VLM2-Bench release layout)")


def question_file(root: Path, subtask: str, kind: str) -> Path:
    """The JSONL of one subtask; for the video kind (pc_vid) whichever of the two directory spellings exists."""
    if kind == "vid":
        candidates = [root / rel for rel in VIDEO_JSONL_CANDIDATES]
        for path in candidates:
            if path.is_file():
                return path
        raise DataError(f"vlm2_bench pc_vid: question file not found; tried {candidates[0]} and {candidates[1]}")
    return root / "jsonl" / SUBTASKS[subtask] / "vanilla" / f"{subtask}.jsonl"


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


def _q_id(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value))


def _is_list(value: Any) -> str | None:
    return None if isinstance(value, list) else f"must be a list, got {type(value).__name__} {value!r:.60}"


_TF = schema.one_of("T", "F", normalise=lambda v: v.strip().upper())  # the cpr scorer strips and upper-cases
_GT = {"tf_gc": _TF, "tf_cpr": _TF, "cnt": schema.integer, "grp": schema.text()}


def fields(kind: str) -> list[schema.Field]:
    """What the official scorer of `kind` reads from a record (spec 1.2)."""
    if kind == "vid":
        return [
            schema.Field("vid", schema.text()),
            schema.Field("question", schema.text()),
            schema.Field("gt_answer", schema.optional_text, required=False),
        ]
    found = [
        schema.Field("q_id", schema.identifier),
        schema.Field("question", schema.text()),
        schema.Field("gt_answer", _GT[kind]),
        schema.Field("images", schema.string_list(nonempty=False)),
    ]
    if kind == "cnt":
        found += [schema.Field("image_seq_len", schema.integer, required=False), schema.Field("image_seq", _is_list, required=False)]
    return found


def load_docs(subtask: str, root: Path | None = None, check_media: bool = True, *, kind: str, strip_tf_prefix: bool = False) -> list[dict[str, Any]]:
    """The subtask's documents in file order, every record checked (fields, types, media present and
    readable) before any request; errors name the file, line, record and field.

    Image records with fewer than two images are left out, as the official inference scripts skip them.
    `check_media=False` (scoring saved answers, which needs no pixels: `score --from-official`) skips the
    image checks and accepts a missing video (its `video_path` is then "").
    `kind` and `strip_tf_prefix`: as the subtask's YAML declares them (`dataset_kwargs`), stamped into every
    document for the hooks.
    """
    if subtask not in SUBTASKS:
        raise DataError(f"unknown VLM2-Bench subtask {subtask!r}; expected one of {sorted(SUBTASKS)}")
    if kind not in KINDS:
        raise DataError(f"vlm2_bench {subtask}: dataset_kwargs.kind is {kind!r}; expected one of {list(KINDS)}")
    root = root or dataset_root()
    path = question_file(root, subtask, kind)
    numbered = list(iter_jsonl(path))
    records = [record for _, record in numbered]
    family = SUBTASKS[subtask]
    id_field = "vid" if kind == "vid" else "q_id"
    benchmark = f"vlm2_bench {subtask}"
    try:
        schema.check_records(benchmark, (schema.Record(f"{path}:{line}", r) for line, r in numbered), fields(kind), id_field, unique_ids=False)
    except schema.SchemaError as exc:
        raise DataError(str(exc)) from exc
    lengths = image_lengths(records) if kind == "cnt" else {}
    docs: list[dict[str, Any]] = []
    skipped: list[str] = []
    images_to_check: list[tuple[str, str, Any]] = []
    for index, (line, record) in enumerate(numbered):
        where = f"{benchmark}: {path}:{line} ({id_field}={record.get(id_field)!r})"
        doc: dict[str, Any] = {
            "task": task_name(subtask),
            "subtask": subtask,
            "kind": kind,  # declared in the subtask's YAML: the hooks read it here
            "strip_tf_prefix": bool(strip_tf_prefix),
            "doc_index": index,
            "q_id": _q_id(record.get("q_id")),
            "question": str(record["question"]),
            "images": [],
            "image_len": 0,
            "vid": "",
            "video_path": "",
        }
        if kind == "vid":
            vid = record["vid"]
            video = find_video(root, vid)
            if video is None and check_media:
                tried = ", ".join(str(root / VIDEO_DIR / f"{vid}{ext}") for ext in VIDEO_EXTENSIONS)
                raise DataError(f"{where}: field 'vid': video not found (tried {tried})")
            doc.update(vid=vid, video_path=str(video or ""), gt=str(record.get("gt_answer") or ""))
        else:
            images = record["images"]
            if len(images) < 2:
                skipped.append(str(record.get("q_id")))
                continue
            image_paths = [str(root / IMAGE_DIRS[family] / str(rel)) for rel in images]
            images_to_check.append((f"{path}:{line}", record.get("q_id"), image_paths))
            doc["images"] = image_paths
            if kind == "cnt":
                doc["gt"] = record["gt_answer"]
                doc["image_len"] = lengths.get(record.get("q_id"), DEFAULT_IMAGE_LEN)
                if not isinstance(doc["image_len"], int) or doc["image_len"] < 1:
                    raise DataError(f"{where}: field 'image_seq_len' gives L={doc['image_len']!r}; the counting scorer needs an integer >= 1")
            else:
                doc["gt"] = str(record["gt_answer"])
        docs.append(doc)
    try:
        if check_media:
            schema.check_images(benchmark, images_to_check, "images", "q_id")
    except schema.SchemaError as exc:
        raise DataError(str(exc)) from exc
    if skipped:
        logger.warning(
            f"vlm2_bench {subtask}: skipped {len(skipped)} record(s) with fewer than 2 images, as the official scripts do: {skipped[:10]}"
        )
    if not docs:
        raise DataError(f"vlm2_bench {subtask}: no usable records in {path}")
    return docs
