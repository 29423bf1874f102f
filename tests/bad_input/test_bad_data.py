"""Bad data, table-driven, for all three benchmarks: each case damages a freshly generated fixture in its
real format and expects the task's `process_docs` (what lmms-eval calls before any model request) to
stop the run with one line naming the benchmark, the file, the row or line, the record id and the field;
or, where the official pipeline accepts the data, to load it."""

from __future__ import annotations

import importlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.services.data import DataError
from lmms_tasks.utils.services.taskconfig import task_config
from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture
from lmms_tasks.utils.testing.fixtures import humaneval_v as hev_fixture
from lmms_tasks.utils.testing.fixtures import vlm2_bench as vlm2_fixture

# -- damaging the real formats ----------------------------------------------------------------------------


def rewrite_parquet(path: Path, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    """Rewrite a parquet shard row by row, keeping its schema (and the HF features in its metadata)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    rows = change(table.to_pylist())
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def set_cell(column: str, row: int, value: Any) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def change(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows[row][column] = value(rows[row][column]) if callable(value) else value
        return rows

    return change


def png(index: int) -> bytes:
    import io

    from lmms_tasks.utils.testing.media import make_image

    buffer = io.BytesIO()
    make_image(index, (64, 48)).save(buffer, "PNG")
    return buffer.getvalue()


def jpeg(seed: int) -> bytes:
    """A photo-like JPEG big enough that its headers are a small part of the file."""
    import io

    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (192, 256, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def corrupt_middle(data: bytes) -> bytes:
    """Flip bytes inside the image data, keeping the header and the file's end intact."""
    damaged = bytearray(data)
    for k in range(len(damaged) // 3, len(damaged) // 3 + 24):
        damaged[k] ^= 0x5A
    return bytes(damaged)


def damaged_pixels_png(index: int) -> bytes:
    """A PNG whose container is valid (every chunk's CRC recomputed, IEND present) but whose compressed
    pixel data is damaged: with PIL's LOAD_TRUNCATED_IMAGES on (lmms-eval's setting) it decodes silently."""
    import struct
    import zlib

    data = png(index)
    at = data.index(b"IDAT")
    length = struct.unpack(">I", data[at - 4 : at])[0]
    body = bytearray(data[at + 4 : at + 4 + length])
    for k in range(len(body) // 3, len(body) // 3 + 16):
        body[k] ^= 0x5A
    crc = struct.pack(">I", zlib.crc32(b"IDAT" + bytes(body)) & 0xFFFFFFFF)
    return data[: at + 4] + bytes(body) + crc + data[at + 8 + length :]


def damaged_scan_jpeg(seed: int) -> bytes:
    """A JPEG with an invalid marker inside its scan data and its end-of-image marker intact."""
    data = jpeg(seed)
    middle = len(data) // 2
    return data[:middle] + b"\xff\xc8" + data[middle + 2 :]


@dataclass(frozen=True)
class Case:
    name: str
    benchmark: str  # humaneval_v | haerae_vision | vlm2_bench
    damage: Callable[[Path], None]  # gets the fixture root
    error: str | None  # regex the one-line error must match (after the task name); None: loads fine
    task: str = ""


HEV_SHARD = "data/test-00000-of-00001.parquet"
HV_SHARD = "data/train-00000-of-00001.parquet"


def in_shard(shard: str, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Callable[[Path], None]:
    return lambda root: rewrite_parquet(root / shard, change)


def truncate(shard: str, keep: float = 0.5) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        path = root / shard
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])

    return damage


def empty_rows(shard: str) -> Callable[[Path], None]:
    return in_shard(shard, lambda rows: [])


def in_jsonl(rel: str, line: int, change: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        path = root / rel
        lines = path.read_text(encoding="utf-8").splitlines()
        record = json.loads(lines[line - 1])
        changed = change(record)
        lines[line - 1] = changed if isinstance(changed, str) else json.dumps(record, ensure_ascii=False)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    return damage


def vlm2_image(subtask: str, index: int, data: Callable[[bytes], bytes] | bytes | None) -> Callable[[Path], None]:
    """Replace (or delete, data=None) one image file of a VLM2-Bench record."""

    def damage(root: Path) -> None:
        record = json.loads((root / f"jsonl/oc/vanilla/{subtask}.jsonl").read_text(encoding="utf-8").splitlines()[0])
        path = root / vlm2_fixture.IMAGE_DIRS["oc"] / record["images"][index]
        if data is None:
            path.unlink()
        else:
            path.write_bytes(data(path.read_bytes()) if callable(data) else data)

    return damage


def vlm2_jpeg_truncated(original: bytes) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.open(io.BytesIO(original)).convert("RGB").save(buffer, "JPEG")
    return buffer.getvalue()[: len(buffer.getvalue()) // 2]


def parquet_where(shard: str, row: int) -> str:
    return re.escape(f"{shard.split('/')[-1]} row {row}")


CASES = [
    # -- HumanEval-V (parquet, HF Image features) --
    Case("qid_null", "humaneval_v", in_shard(HEV_SHARD, set_cell("qid", 1, None)), parquet_where(HEV_SHARD, 1) + r" \(qid=None\): field 'qid' must be a string, got NoneType"),
    Case("qid_duplicate", "humaneval_v", in_shard(HEV_SHARD, set_cell("qid", 2, "q1")), parquet_where(HEV_SHARD, 2) + r" \(qid='q1'\): field 'qid' repeats the id of .*row 0"),
    Case("signature_empty", "humaneval_v", in_shard(HEV_SHARD, set_cell("function_signature", 0, "  ")), parquet_where(HEV_SHARD, 0) + r" \(qid='q1'\): field 'function_signature' is empty"),
    Case("tests_not_text", "humaneval_v", in_shard(HEV_SHARD, set_cell("test_script", 3, None)), parquet_where(HEV_SHARD, 3) + r" \(qid='q3'\): field 'test_script' must be a string"),
    Case("diagram_not_an_image", "humaneval_v", in_shard(HEV_SHARD, set_cell("diagram", 1, {"bytes": b"<html>not found</html>", "path": None})), parquet_where(HEV_SHARD, 1) + r" \(qid='q2'\): field 'diagram' is not an image PIL can identify"),
    Case("diagram_truncated", "humaneval_v", in_shard(HEV_SHARD, set_cell("diagram", 2, lambda c: {"bytes": c["bytes"][: len(c["bytes"]) // 2], "path": None})), parquet_where(HEV_SHARD, 2) + r" \(qid='q2-2'\): field 'diagram' (is a truncated PNG|cannot be decoded)"),
    Case("diagram_corrupt", "humaneval_v", in_shard(HEV_SHARD, set_cell("diagram", 0, lambda c: {"bytes": corrupt_middle(png(5)), "path": None})), parquet_where(HEV_SHARD, 0) + r" \(qid='q1'\): field 'diagram' cannot be decoded"),
    Case("diagram_pixels_damaged", "humaneval_v", in_shard(HEV_SHARD, set_cell("diagram", 1, {"bytes": damaged_pixels_png(4), "path": None})), parquet_where(HEV_SHARD, 1) + r" \(qid='q2'\): field 'diagram' cannot be decoded \(OSError: "),
    Case("diagram_null", "humaneval_v", in_shard(HEV_SHARD, set_cell("diagram", 3, None)), parquet_where(HEV_SHARD, 3) + r" \(qid='q3'\): field 'diagram' is null"),
    Case("no_rows", "humaneval_v", empty_rows(HEV_SHARD), re.escape(HEV_SHARD.split("/")[-1]) + r": the file holds no rows"),
    Case("file_truncated", "humaneval_v", truncate(HEV_SHARD), re.escape(HEV_SHARD.split("/")[-1]) + r": not a readable parquet file, probably truncated"),
    Case("file_zero_bytes", "humaneval_v", truncate(HEV_SHARD, 0.0), re.escape(HEV_SHARD.split("/")[-1]) + r": the file is empty \(0 bytes\)"),
    # -- HAERAE-Vision (parquet, Sequence(Image)) --
    Case("images_null", "haerae_vision", in_shard(HV_SHARD, set_cell("images", 1, None)), parquet_where(HV_SHARD, 1) + r" \(question_idx=102\): field 'images' is null"),
    Case("images_empty", "haerae_vision", in_shard(HV_SHARD, set_cell("images", 0, [])), parquet_where(HV_SHARD, 0) + r" \(question_idx=101\): field 'images' is an empty list"),
    Case("image_not_an_image", "haerae_vision", in_shard(HV_SHARD, set_cell("images", 2, lambda cells: [cells[0], {"bytes": b"GIF87a-oops", "path": None}])), parquet_where(HV_SHARD, 2) + r" \(question_idx=103\): field 'images' \[1\] (is not an image|cannot be decoded)"),
    Case("image_corrupt_png", "haerae_vision", in_shard(HV_SHARD, set_cell("images", 3, lambda cells: [{"bytes": corrupt_middle(png(7)), "path": None}])), parquet_where(HV_SHARD, 3) + r" \(question_idx=104\): field 'images' \[0\] cannot be decoded"),
    Case("question_idx_null", "haerae_vision", in_shard(HV_SHARD, set_cell("question_idx", 4, None)), parquet_where(HV_SHARD, 4) + r" \(question_idx=None\): field 'question_idx' must be a non-empty string or an integer"),
    Case("question_idx_duplicate", "haerae_vision", in_shard(HV_SHARD, set_cell("question_idx", 1, 101)), parquet_where(HV_SHARD, 1) + r" \(question_idx=101\): field 'question_idx' repeats"),
    Case("checklist_null", "haerae_vision", in_shard(HV_SHARD, set_cell("checklist", 0, None)), parquet_where(HV_SHARD, 0) + r" \(question_idx=101\): field 'checklist' must be a string"),
    Case("question_empty", "haerae_vision", in_shard(HV_SHARD, set_cell("question_original", 2, "")), parquet_where(HV_SHARD, 2) + r" \(question_idx=103\): field 'question_original' is empty"),
    Case("no_rows", "haerae_vision", empty_rows(HV_SHARD), r"train-00000-of-00001\.parquet: the file holds no rows"),
    Case("file_truncated", "haerae_vision", truncate(HV_SHARD, 0.8), r"train-00000-of-00001\.parquet: not a readable parquet file, probably truncated"),
    Case("image_pixels_damaged", "haerae_vision", in_shard(HV_SHARD, set_cell("images", 2, lambda cells: [{"bytes": damaged_pixels_png(6), "path": None}])), parquet_where(HV_SHARD, 2) + r" \(question_idx=103\): field 'images' \[0\] cannot be decoded"),
    # the official current pipeline loads images with LOAD_TRUNCATED_IMAGES: a truncated JPEG is accepted
    Case("image_truncated_jpeg_accepted", "haerae_vision", in_shard(HV_SHARD, set_cell("images", 1, lambda cells: [{"bytes": jpeg(3)[: len(jpeg(3)) // 2], "path": None}])), None),
    # -- VLM2-Bench (JSONL + image files) --
    Case("tf_gt_is_a_list", "vlm2_bench", in_jsonl("jsonl/oc/vanilla/oc_cpr.jsonl", 2, lambda r: r.update(gt_answer=["T"])), r"oc_cpr\.jsonl:2 \(q_id='1_n'\): field 'gt_answer' must be one of \['T', 'F'\], got list", "oc_cpr"),
    Case("tf_gt_is_yes", "vlm2_bench", in_jsonl("jsonl/gc/vanilla/gc_mat.jsonl", 1, lambda r: r.update(gt_answer="yes")), r"gc_mat\.jsonl:1 \(q_id='gcm1'\): field 'gt_answer' must be one of", "gc_mat"),
    Case("question_is_a_number", "vlm2_bench", in_jsonl("jsonl/oc/vanilla/oc_cpr.jsonl", 1, lambda r: r.update(question=12)), r"oc_cpr\.jsonl:1 \(q_id='1_p'\): field 'question' must be a string, got int 12", "oc_cpr"),
    Case("q_id_null", "vlm2_bench", in_jsonl("jsonl/oc/vanilla/oc_grp.jsonl", 2, lambda r: r.update(q_id=None)), r"oc_grp\.jsonl:2 \(q_id=None\): field 'q_id' must be a non-empty string or an integer", "oc_grp"),
    Case("count_gt_is_text", "vlm2_bench", in_jsonl("jsonl/oc/vanilla/oc_cnt.jsonl", 3, lambda r: r.update(gt_answer="3")), r"oc_cnt\.jsonl:3 \(q_id='cnt3'\): field 'gt_answer' must be an integer, got str '3'", "oc_cnt"),
    Case("image_seq_len_is_text", "vlm2_bench", in_jsonl("jsonl/oc/vanilla/oc_cnt.jsonl", 1, lambda r: r.update(image_seq_len="4")), r"oc_cnt\.jsonl:1 \(q_id='cnt1'\): field 'image_seq_len' must be an integer", "oc_cnt"),
    Case("images_not_a_list", "vlm2_bench", in_jsonl("jsonl/oc/vanilla/oc_grp.jsonl", 1, lambda r: r.update(images="a.png")), r"oc_grp\.jsonl:1 \(q_id='grp1'\): field 'images' must be a list of strings", "oc_grp"),
    Case("malformed_line", "vlm2_bench", in_jsonl("jsonl/oc/vanilla/oc_cpr.jsonl", 2, lambda r: '{"q_id": "1_n", "question": '), r"oc_cpr\.jsonl:2: not valid JSON", "oc_cpr"),
    Case("image_pixels_damaged_png", "vlm2_bench", vlm2_image("oc_cpr", 0, damaged_pixels_png(2)), r"oc_cpr\.jsonl:1 \(q_id='1_p'\): field 'images' \[0\] cannot be decoded \(OSError", "oc_cpr"),
    Case("image_scan_damaged_jpeg", "vlm2_bench", vlm2_image("oc_grp", 1, damaged_scan_jpeg(8)), r"oc_grp\.jsonl:1 \(q_id='grp1'\): field 'images' \[1\] cannot be decoded \(OSError: broken data stream", "oc_grp"),
    Case("image_missing", "vlm2_bench", vlm2_image("oc_cpr", 1, None), r"oc_cpr\.jsonl:1 \(q_id='1_p'\): field 'images' \[1\] image file not found", "oc_cpr"),
    Case("image_not_an_image", "vlm2_bench", vlm2_image("oc_cpr", 0, b"Access denied"), r"oc_cpr\.jsonl:1 \(q_id='1_p'\): field 'images' \[0\] is not an image PIL can identify", "oc_cpr"),
    Case("image_truncated_jpeg", "vlm2_bench", vlm2_image("oc_grp", 2, vlm2_jpeg_truncated), r"oc_grp\.jsonl:1 \(q_id='grp1'\): field 'images' \[2\] is a truncated JPEG", "oc_grp"),
    Case("image_corrupt_png", "vlm2_bench", vlm2_image("oc_cnt", 0, corrupt_middle), r"oc_cnt\.jsonl:1 \(q_id='cnt1'\): field 'images' \[0\] cannot be decoded", "oc_cnt"),
]

TASK_OF = {"humaneval_v": "humaneval_v_v2c", "haerae_vision": "haerae_vision_original"}


def load_docs(benchmark: str, task: str) -> Any:
    """The task's own `custom_dataset` loader, as lmms-eval calls it before any model request."""
    module = importlib.import_module(f"lmms_tasks.utils.{benchmark}.hooks")
    name = f"vlm2_bench_{task}" if benchmark == "vlm2_bench" else TASK_OF[benchmark]
    return module.load_subtask(**task_config(name)["dataset_kwargs"])["test"]  # as lmms-eval calls it, with the YAML's dataset_kwargs


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.benchmark}-{c.name}")
def test_bad_data_is_named_before_any_request(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writers = {"humaneval_v": hev_fixture.write, "haerae_vision": hv_fixture.write, "vlm2_bench": vlm2_fixture.write}
    fixtures = writers[case.benchmark](tmp_path / "data")
    for key, value in fixtures.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "EMPTY")
    monkeypatch.setenv("LMMS_TASKS_MEDIA_CACHE_DIR", str(tmp_path / "media_cache"))
    from PIL import ImageFile

    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)  # as lmms-eval sets it when imported
    case.damage(fixtures.root)
    if case.error is None:
        # good data goes on to the judge's preflight, and this test has no judge (the damaged cases above are
        # named before it: the data check comes first)
        monkeypatch.setenv("LMMS_TASKS_JUDGE_PREFLIGHT", "0")
        assert len(load_docs(case.benchmark, case.task)) == len(next(iter(fixtures.records.values())))
        return
    with pytest.raises(DataError) as stopped:
        load_docs(case.benchmark, case.task)
    message = str(stopped.value)
    assert "\n" not in message, message  # one line
    task = f"vlm2_bench_{case.task}" if case.benchmark == "vlm2_bench" else TASK_OF[case.benchmark]
    assert message.startswith(f"{task}: "), message  # the task, hence benchmark and subtask
    assert re.search(case.error, message), message
    assert str(fixtures.root) in message  # the file at fault is named with its path


def test_a_decoded_image_is_remembered_by_content_and_a_damaged_one_never(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each distinct image is decoded once (a file shared by records, subtasks, ranks or runs is not decoded
    again): the verdict is kept by the sha256 of its bytes, in this process and in the media cache."""
    from PIL import Image

    from lmms_tasks.utils.services import schema

    monkeypatch.setenv("LMMS_TASKS_MEDIA_CACHE_DIR", str(tmp_path / "media"))
    monkeypatch.setattr(schema, "_verified", set())  # a fresh process: an earlier test of this worker may have checked the same bytes
    monkeypatch.setattr(schema, "_indexed", set())
    good, bad = tmp_path / "good.png", tmp_path / "bad.png"
    good.write_bytes(png(3))
    bad.write_bytes(damaged_pixels_png(3))
    opened: list[Any] = []
    real_open = Image.open
    monkeypatch.setattr(Image, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    assert schema.image_bytes_problem(None, str(good)) is None
    decodes = len(opened)
    assert decodes >= 1
    copy = tmp_path / "copy.png"
    copy.write_bytes(good.read_bytes())
    assert schema.image_bytes_problem(None, str(copy)) is None and len(opened) == decodes  # same bytes: not decoded again
    monkeypatch.setattr(schema, "_verified", set())  # another process: only the media cache remembers
    monkeypatch.setattr(schema, "_indexed", set())
    assert schema.image_bytes_problem(good.read_bytes()) is None and len(opened) == decodes
    assert len(list((tmp_path / "media").rglob("*"))) == 2  # one folder, one marker
    for _ in range(2):  # a damaged image is decoded (and refused) every time, never remembered
        assert "cannot be decoded" in (schema.image_bytes_problem(None, str(bad)) or "")
    assert len(list((tmp_path / "media").rglob("*"))) == 2
    # the strict and the truncation-tolerant verdicts are kept apart
    assert schema._verdict_key(png(3), False) != schema._verdict_key(png(3), True)


def test_a_release_check_keeps_its_verdicts_in_one_file_and_a_bad_image_loses_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check_images` over a release remembers every decoded image in one verdict file (not a file per image),
    also when a damaged image stops the load; the next process decodes only what it has not seen."""
    from PIL import Image

    from lmms_tasks.utils.services import schema

    monkeypatch.setenv("LMMS_TASKS_MEDIA_CACHE_DIR", str(tmp_path / "media"))
    cells = [(f"row {n}", f"id{n}", {"bytes": jpeg(n), "path": None}) for n in range(12)]
    damaged = ("row 12", "id12", [{"bytes": jpeg(12), "path": None}, {"bytes": damaged_scan_jpeg(13), "path": None}])
    with pytest.raises(schema.SchemaError, match=r"bench: row 12 \(q_id='id12'\): field 'images' \[1\] cannot be decoded"):
        schema.check_images("bench", [*cells, damaged], "images", "q_id")
    assert [p.suffix for p in (tmp_path / "media").rglob("*") if p.is_file()] == [".good"]  # 13 good images, one file
    opened: list[Any] = []
    real_open = Image.open
    monkeypatch.setattr(Image, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    monkeypatch.setattr(schema, "_verified", set())  # another process
    monkeypatch.setattr(schema, "_indexed", set())
    schema.check_images("bench", [*cells, ("row 12", "id12", damaged[2][:1])], "images", "q_id")
    assert opened == []  # all 13 known from the media cache


def _damaged_jpegs(count: int) -> list[bytes]:
    """Deterministic damage to baseline, progressive and greyscale JPEGs: flipped bytes in the scan, a cut
    with the end-of-image marker put back, stray markers, a zeroed run."""
    import random

    from PIL import Image

    rng = random.Random(20)
    bases = [jpeg(seed) for seed in range(3)]
    for seed in range(2):
        for options in ({"progressive": True, "quality": 85}, {}):
            buffer = io.BytesIO()
            image = Image.open(io.BytesIO(bases[seed]))
            (image if options else image.convert("L")).save(buffer, "JPEG", **options)
            bases.append(buffer.getvalue())
    out = []
    for n in range(count):
        data = bytearray(bases[n % len(bases)])
        kind, start = n % 4, len(data) // 4
        if kind == 0:
            for _ in range(rng.randint(1, 30)):
                data[rng.randrange(start, len(data) - 2)] ^= rng.randrange(1, 256)
        elif kind == 1:
            data = data[: rng.randrange(start, len(data) - 10)] + data[-2:]
        elif kind == 2:
            at = rng.randrange(start, len(data) - 10)
            data[at : at + 2] = bytes([0xFF, rng.choice([0xD0, 0xD9, 0xC4, 0x01, 0xE1])])
        else:
            at = rng.randrange(start, len(data) - 40)
            data[at : at + 32] = bytes(32)
        out.append(bytes(data))
    return out


def test_the_fast_jpeg_check_gives_a_full_decodes_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The load-time check decodes JPEGs at 1/8 scale (every byte of the scan still entropy-decoded): on
    damaged JPEGs it accepts exactly those that PIL decodes in full with LOAD_TRUNCATED_IMAGES off."""
    from PIL import Image, ImageFile

    from lmms_tasks.utils.services import schema

    monkeypatch.setenv("LMMS_TASKS_MEDIA_CACHE_DIR", str(tmp_path / "media"))
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", False)

    def full_decode_ok(data: bytes) -> bool:
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
            return True
        except Exception:  # noqa: BLE001 - any refusal counts as "does not decode"
            return False

    samples = _damaged_jpegs(400)
    verdicts = [(full_decode_ok(data), schema.image_bytes_problem(data) is None) for data in samples]
    refused = sum(1 for full, _ in verdicts if not full)
    assert 20 <= refused < len(samples)  # the damage really breaks some and spares others
    assert [n for n, (full, fast) in enumerate(verdicts) if full != fast] == []
