"""Loading the official release layout, request building (images in record order, the exact text), video
frame sampling, and errors that name the record at fault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmms_tasks.utils.commands.tasks import vlm2_kinds
from lmms_tasks.utils.services.data import DataError, MediaError
from lmms_tasks.utils.testing.fixtures import vlm2_bench as fixture
from lmms_tasks.utils.testing.media import colour_for
from lmms_tasks.utils.vlm2_bench import hooks, video
from lmms_tasks.utils.vlm2_bench.data import load_docs
from lmms_tasks.utils.vlm2_bench.messages import messages, user_text

KINDS = vlm2_kinds()  # each subtask's kind, as its YAML declares it


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> fixture.FixtureSet:
    fs = fixture.write(tmp_path / "vlm2")
    for key, value in fs.env.items():
        monkeypatch.setenv(key, value)
    return fs


def _close(rgb, colour_index: int, tol: int = 24) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(rgb, colour_for(colour_index)))


def _mean(image) -> tuple[int, int, int]:
    return image.resize((1, 1)).getpixel((0, 0))


def test_documents_carry_ids_gt_and_absolute_image_paths(release) -> None:
    docs = load_docs("oc_cnt", kind=KINDS["oc_cnt"])
    assert [d["q_id"] for d in docs] == ["cnt1", "cnt2", "cnt3", "cnt4", "cnt5"]
    # L: image_seq_len, else len(image_seq), else 2 (official counting scorer)
    assert [d["image_len"] for d in docs] == [4, 3, 4, 2, 2]
    assert [d["gt"] for d in docs] == [1, 2, 3, 2, 2]
    assert all(Path(p).is_absolute() and Path(p).is_file() for d in docs for p in d["images"])
    assert [d["doc_index"] for d in docs] == list(range(5))
    assert {d["task"] for d in docs} == {"vlm2_bench_oc_cnt"}


def test_messages_hold_the_images_in_record_order_then_the_newline_question(release) -> None:
    for subtask in ("gc_mat", "oc_grp", "pc_cpr"):
        for doc, record in zip(load_docs(subtask, kind=KINDS[subtask]), release.records[subtask]):
            content = messages(doc)[0]["content"]
            assert [part["type"] for part in content] == ["image"] * len(record["images"]) + ["text"]
            assert content[-1]["text"] == "\n" + record["question"]
            assert all(_close(_mean(part["url"]), c) for part, c in zip(content, record["_colours"]))
            assert hooks.doc_to_text(doc) == "\n" + record["question"]
            assert len(hooks.doc_to_visual(doc)) == len(record["images"])


def test_video_prompt_has_no_leading_newline_and_carries_the_sampled_frames(release) -> None:
    docs = {d["vid"]: d for d in load_docs("pc_vid", kind=KINDS["pc_vid"])}
    aba = docs["UNI_ABA_0002"]
    assert user_text(aba) == release.records["pc_vid"][1]["question"]
    content = messages(aba)[0]["content"]
    frames = [part["url"] for part in content[:-1]]
    # 12 frames at 4 fps -> 3 s at 1 fps -> clamped to 4 frames: indices 0, 4, 7, 11 -> A, B, B, A
    a, b = fixture.VIDEOS["UNI_ABA_0002"][:2]
    assert [_close(_mean(f), c) for f, c in zip(frames, [a, b, b, a])] == [True] * 4
    assert {f.size for f in frames} == {(392, 280)}


@pytest.mark.parametrize(
    ("total", "fps", "expected"),
    [(8, 4, 4), (12, 4, 4), (300, 30, 10), (301, 30, 10), (90, 30, 4), (5, 4, 4), (3, 30, 2), (2000, 1, 768), (110, 10, 10)],
)
def test_frame_count_follows_qwen_vl_utils(total: int, fps: float, expected: int) -> None:
    assert video.frame_count(total, fps) == expected


def test_frame_indices_and_resize() -> None:
    assert video.frame_indices(12, 4) == [0, 4, 7, 11]
    assert video.frame_indices(8, 4) == [0, 2, 5, 7]
    h, w = video.smart_resize(720, 1280, max_pixels=video.MAX_PIXELS)
    assert (
        h % 28 == 0 and w % 28 == 0 and h * w <= 360 * 420 and (h, w) == (280, 504)
    )  # beta = sqrt(720*1280/151200): 291.6 -> 280, 518.4 -> 504
    assert video.smart_resize(64, 96) == (280, 392)  # upscaled to the 128*28*28 minimum


def test_video_jsonl_spelling_vanilla_is_accepted_and_neither_is_an_error(release) -> None:
    root = release.root
    (root / "jsonl/pc/vallina/pc_v_open-ended.jsonl").rename(root / "jsonl/pc/vanilla/pc_v_open-ended.jsonl")
    assert [d["vid"] for d in load_docs("pc_vid", kind=KINDS["pc_vid"])] == list(fixture.VIDEOS)
    (root / "jsonl/pc/vanilla/pc_v_open-ended.jsonl").unlink()
    with pytest.raises(DataError, match="vallina.*vanilla"):
        load_docs("pc_vid", kind=KINDS["pc_vid"])


def test_missing_image_names_the_record(release) -> None:
    record = release.records["oc_cpr"][2]
    (release.root / "data/oc/original_obj" / record["images"][1]).unlink()
    with pytest.raises(DataError, match=r"vlm2_bench oc_cpr: .*oc_cpr\.jsonl:3 \(q_id='2_p'\): field 'images' \[1\] image file not found"):
        load_docs("oc_cpr", kind=KINDS["oc_cpr"])


def test_missing_video_names_the_vid(release) -> None:
    (release.root / "data/pc/video/UNI/UNI_AB_0001.mp4").unlink()
    with pytest.raises(DataError, match=r"vlm2_bench pc_vid: .*pc_v_open-ended\.jsonl:1 \(vid='UNI_AB_0001'\): field 'vid': video not found"):
        load_docs("pc_vid", kind=KINDS["pc_vid"])


def test_video_found_with_a_later_extension(release) -> None:
    src = release.root / "data/pc/video/UNI/UNI_AB_0001.mp4"
    src.rename(src.with_suffix(".mov"))
    doc = next(d for d in load_docs("pc_vid", kind=KINDS["pc_vid"]) if d["vid"] == "UNI_AB_0001")
    assert doc["video_path"].endswith(".mov")
    assert len(messages(doc)[0]["content"]) == 5


def test_records_with_fewer_than_two_images_are_skipped_as_officially(release) -> None:
    path = release.root / "jsonl/gc/vanilla/gc_trk.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["images"] = rows[0]["images"][:1]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [d["doc_index"] for d in load_docs("gc_trk", kind=KINDS["gc_trk"])] == [1, 2, 3]


def test_malformed_jsonl_names_file_and_line(release) -> None:
    path = release.root / "jsonl/pc/vanilla/pc_grp.jsonl"
    path.write_text(path.read_text() + "{broken\n")
    with pytest.raises(DataError, match=r"pc_grp.jsonl:3"):
        load_docs("pc_grp", kind=KINDS["pc_grp"])


def test_unset_and_bad_data_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLM2_BENCH_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match="VLM2_BENCH_DATA"):
        load_docs("gc_mat", kind=KINDS["gc_mat"])
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("VLM2_BENCH_DATA", str(tmp_path / "empty"))
    with pytest.raises(DataError, match="no jsonl/ directory"):
        load_docs("gc_mat", kind=KINDS["gc_mat"])


def test_release_wrapped_in_one_extra_folder_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixture.write(tmp_path / "outer" / "vlm2-bench")
    monkeypatch.setenv("VLM2_BENCH_DATA", str(tmp_path / "outer"))
    assert len(load_docs("pc_grp", kind=KINDS["pc_grp"])) == 2


def test_process_results_items_are_json_friendly_and_carry_what_aggregation_needs(release) -> None:
    doc = load_docs("pc_cnt", kind=KINDS["pc_cnt"])[0]
    out = hooks.process_results(doc, ["  two, one  "])
    assert set(out) == set(hooks.metric_names("cnt")) and "vlm2_score" in out
    item = out["vlm2_score"]
    assert json.loads(json.dumps(item)) == item
    assert item == {
        "task": "vlm2_bench_pc_cnt", "subtask": "pc_cnt", "kind": "cnt", "doc_index": 0, "q_id": "pcnt1", "gt": 2,
        "response": "two, one", "image_len": 4, "parsed": 3,
    }  # fmt: skip
    vid = hooks.process_results(load_docs("pc_vid", kind=KINDS["pc_vid"])[1], ["desc"])["vlm2_score"]
    assert (vid["vid"], vid["type"], vid["response"]) == ("UNI_ABA_0002", "ABA", "desc")
    assert "vlm2_img8_score" not in hooks.process_results(load_docs("pc_vid", kind=KINDS["pc_vid"])[0], ["x"])


def test_non_integer_count_gt_names_the_record(release) -> None:
    path = release.root / "jsonl/oc/vanilla/oc_cnt.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["gt_answer"] = "three"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=r"vlm2_bench oc_cnt: .*oc_cnt\.jsonl:2 \(q_id='cnt2'\): field 'gt_answer' must be an integer"):
        load_docs("oc_cnt", kind=KINDS["oc_cnt"])


def test_unreadable_image_names_the_record(release) -> None:
    from lmms_tasks.utils.vlm2_bench.messages import visuals

    doc = load_docs("pc_grp", kind=KINDS["pc_grp"])[0]
    Path(doc["images"][0]).write_bytes(b"not an image")
    with pytest.raises(MediaError, match=r"pc_grp record 'pgrp1': cannot read image"):
        visuals(doc)  # after the load-time checks: the evaluation fails (exit 4), not a data error (exit 1)


def test_undecodable_video_names_the_vid(release) -> None:
    from lmms_tasks.utils.vlm2_bench.messages import visuals

    doc = load_docs("pc_vid", kind=KINDS["pc_vid"])[0]
    Path(doc["video_path"]).write_bytes(b"\x00" * 64)
    with pytest.raises(MediaError, match=r"pc_vid record 'UNI_AB_0001'"):
        visuals(doc)


def test_count_image_length_comes_from_image_seq_len_then_image_seq_then_2(tmp_path: Path) -> None:
    # the conformance table's counting records carry L as image_seq_len, as image_seq (lengths 1, 3, 4) or not at all
    from lmms_tasks.utils.testing.cases import vlm2_bench as cases

    fixtures = cases.write(tmp_path / "release")
    docs = {d["q_id"]: d for d in load_docs("oc_cnt", fixtures.root, kind=KINDS["oc_cnt"])}
    expected = {c.q_id: c.extra.get("image_seq_len") or len(c.extra.get("image_seq") or []) or 2 for c in cases.COUNT_CASES}
    assert {q: d["image_len"] for q, d in docs.items()} == expected
    assert sorted(set(expected.values())) == [1, 2, 3, 4]  # shorter than, equal to and longer than the default
