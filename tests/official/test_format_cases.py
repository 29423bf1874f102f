"""Cases of the official-format readers and writers where a mistake leaves the usual numbers unchanged: each
test computes the official scorer's answer by hand (the rule it follows is named in the test) and checks
what the reader or writer must keep apart: which document an answer belongs to, which model a file
belongs to, which values count as equal or missing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from lmms_tasks.utils.commands.official import cli, humaneval_v, vlm2_bench
from lmms_tasks.utils.commands.official.common import RunTask
from lmms_tasks.utils.services.llm_judge.judge import clear_memo
from lmms_tasks.utils.testing.fixtures import haerae_vision as haerae_fixture
from lmms_tasks.utils.testing.fixtures import humaneval_v as hev_fixture
from lmms_tasks.utils.vlm2_bench.hooks import SCORE

IMAGES = ["a.jpg", "b.jpg"]
# A GC group (one raw q_id) of four questions, two of each answer: the official GC scorer groups by q_id,
# so the group is pair-correct iff some "T" question was answered "T" and some "F" question "F".
GC_GROUP = [
    {"q_id": 7, "task": "mat", "question": "first pos", "gt_answer": "T", "edited_prompt": "e", "images": IMAGES},
    {"q_id": 7, "task": "mat", "question": "second pos", "gt_answer": "T", "edited_prompt": "e", "images": IMAGES},
    {"q_id": 7, "task": "mat", "question": "first neg", "gt_answer": "F", "edited_prompt": "e", "images": IMAGES},
    {"q_id": 7, "task": "mat", "question": "second neg", "gt_answer": "F", "edited_prompt": "e", "images": IMAGES},
    {"q_id": 8, "task": "mat", "question": "other pos", "gt_answer": "T", "edited_prompt": "e", "images": IMAGES},
    {"q_id": 8, "task": "mat", "question": "other neg", "gt_answer": "F", "edited_prompt": "e", "images": IMAGES},
]
COUNTING = [
    {"q_id": "n1", "type": "cup", "question": "n?", "gt_answer": 2, "images": IMAGES * 2, "image_seq_len": 4},
    {"q_id": "n2", "type": "cup", "question": "n?", "gt_answer": 1, "images": IMAGES},
    {"q_id": "n3", "type": "cup", "question": "n?", "gt_answer": 3, "images": IMAGES * 2, "image_seq_len": 4},
]
VIDEOS = [{"vid": "UNI_AB_001", "question": "Describe."}, {"vid": "UNI_ABA_002", "question": "Describe."}]


@pytest.fixture
def vlm2_data(tmp_path: Path, hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "release"
    for relative, records in (
        ("jsonl/gc/vanilla/gc_mat.jsonl", GC_GROUP),
        ("jsonl/oc/vanilla/oc_cnt.jsonl", COUNTING),
        ("jsonl/pc/vallina/pc_v_open-ended.jsonl", VIDEOS),
    ):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    monkeypatch.setenv("VLM2_BENCH_DATA", str(root))
    clear_memo()
    return tmp_path


def _gc_line(record: dict, answer: str) -> str:
    """A line as the official GC inference script writes it."""
    head = {"q_id": record["q_id"], "task": record["task"], "question": record["question"], "edit_prompt": record["edited_prompt"]}
    return json.dumps({**head, "model_answer": answer, "gt_answer": record["gt_answer"]})


def _score(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, list[str]]:
    clear_memo()
    status = cli.score_main(args)
    return status, [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def test_vlm2_group_questions_sharing_an_answer_written_out_of_order_keep_their_documents(
    vlm2_data: Path, capsys: pytest.CaptureFixture
) -> None:
    # out of the data's order, each question with an answer of its own (which shows where it went)
    answers = {"second neg": "F", "first pos": "T", "other neg": "T", "second pos": "Maybe", "first neg": "no", "other pos": "T"}
    by_question = {r["question"]: r for r in GC_GROUP}
    path = vlm2_data / "repo" / "code/gc/test/test_res/test_mat" / "m_20250301_120000_answers.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(_gc_line(by_question[q], a) + "\n" for q, a in answers.items()), encoding="utf-8")
    imported = vlm2_bench.read(path)
    paired = {GC_GROUP[s[SCORE]["doc_index"]]["question"]: s[SCORE]["response"] for s in imported.samples}
    assert paired == answers  # every answer with its own question, though two questions share q_id and gt_answer
    assert sorted(s["doc_id"] for s in imported.samples) == list(range(len(GC_GROUP)))
    out = vlm2_data / "scored"
    assert _score(["vlm2", str(path), "--output-dir", str(out)], capsys) == (0, [])
    results = json.loads((out / f"{path.stem}.vlm2_bench_gc_mat.rescored.json").read_text(encoding="utf-8"))["results"]
    # official GC scorer by hand: q_id 7: "first pos" answered "T" (p), "second neg" answered "F" (n) -> pair
    # correct; q_id 8: "other pos" "T" (p), "other neg" "T" (no n) -> not. N = 2 groups.
    assert (results["gc_exact_pos_acc,none"], results["gc_exact_neg_acc,none"], results["gc_exact_pair_acc,none"]) == (100.0, 50.0, 50.0)


def test_vlm2_counting_gt_answer_equal_across_json_types_scores_as_officially(vlm2_data: Path, capsys: pytest.CaptureFixture) -> None:
    """The official counting scorer compares `parsed == gt_answer` and uses `abs(parsed - gt_answer)`: a
    `gt_answer` written 2.0 or `true` is the data's 2 or 1 to it (Python compares numbers by value)."""
    lines = [
        {"q_id": "n1", "type": "cup", "question": "n?", "model_answer": "2", "gt_answer": 2.0},  # correct: 2 == 2.0
        {"q_id": "n2", "type": "cup", "question": "n?", "model_answer": "1", "gt_answer": True},  # correct: 1 == True
        {"q_id": "n3", "type": "cup", "question": "n?", "model_answer": "4", "gt_answer": 3.0},  # off by one
    ]
    path = vlm2_data / "repo" / "code/oc/test/test_res/test_cnt" / "m_20250301_120000_answers.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = vlm2_data / "scored"
    assert _score(["vlm2", str(path), "--output-dir", str(out)], capsys) == (0, [])
    results = json.loads((out / f"{path.stem}.vlm2_bench_oc_cnt.rescored.json").read_text(encoding="utf-8"))["results"]
    # n3: raw_diff 1, max_error max(3 - 1, 4 - 3) = 2, weight L_MAX / L = 4 / 4, penalty (1/2) ** (1/10)
    n3 = 100 * (1 - 0.5 ** (1 / 10))
    assert results["cnt_acc,none"] == pytest.approx(200 / 3)
    assert results["cnt_norm_score,none"] == pytest.approx((100 + 100 + n3) / 3)
    # a string is no number to that scorer (`abs(2 - "2")` raises): refused, naming the record
    path.write_text(json.dumps({**lines[0], "gt_answer": "2"}) + "\n", encoding="utf-8")
    status, errors = _score(["vlm2", str(path), "--output-dir", str(vlm2_data / "refused")], capsys)
    assert status == 2 and len(errors) == 1 and "field 'gt_answer' is \"2\" but the data's is 2" in errors[0], errors


def _run_task(task: str, model: str, samples: Path, stamp: str = "20250301_120000") -> RunTask:
    return RunTask(task, samples, SimpleNamespace(stamp=stamp), SimpleNamespace(model=model))


def test_vlm2_pc_vid_export_keeps_models_with_underscores_apart(vlm2_data: Path) -> None:
    """The official PC-VID scorer names a file's model `re.match(r'(vid_[^_]+)', name)` and writes
    `scored_files/<that>_scored.jsonl`: a model name whose `_` reached the file name would be cut there, and
    two such models ("org_a", "org_b") would overwrite each other's scores."""
    samples = vlm2_data / "samples.jsonl"
    samples.write_text(
        "".join(json.dumps({"doc_id": i, SCORE: {"doc_index": i, "vid": v["vid"], "response": "x"}}) + "\n" for i, v in enumerate(VIDEOS)),
        encoding="utf-8",
    )
    models = ["org_a", "org_b", "meta/llama_3.2-vision"]
    written = vlm2_bench.export([_run_task("vlm2_bench_pc_vid", m, samples) for m in models], vlm2_data / "out")
    names = [Path(w.path).name for w in written]
    official = [re.match(r"(vid_[^_]+)", name).group(1) for name in names]  # type: ignore[union-attr]
    assert official == ["vid_org-a", "vid_org-b", "vid_meta-llama-3.2-vision"], names
    assert len(set(official)) == len(models)


@pytest.fixture
def hev_data(tmp_path: Path, hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in hev_fixture.write(tmp_path / "data").env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    clear_memo()
    return tmp_path


def test_humaneval_v_t2c_import_numbers_documents_as_a_run_does(hev_data: Path, capsys: pytest.CaptureFixture) -> None:
    """A V2T2C step-2 file (one entry per description): every (qid, description) is one document, numbered
    as a run of humaneval_v_t2c numbers them (data order, then description order: a qid's entries in file
    order, as the official evaluator aggregates them), so doc_ids never collide and pair with a run's."""
    rows = [row["qid"] for row in hev_fixture.records()]  # data order
    right = {row["qid"]: hev_fixture.fenced(row["ground_truth_solution"]) for row in hev_fixture.records()}
    n = 3
    entries = [
        {"qid": q, "prompt": f"p {q} {i}", "predictions": [right[q] if i == 0 else "```python\nx = 1\n```"]} for q in rows for i in range(n)
    ]
    runs = {}
    for name, order in (("in_order", entries), ("qids reversed", [e for q in rows[::-1] for e in entries if e["qid"] == q])):
        path = hev_data / name.replace(" ", "_") / "m_V2T2C_T2C_sample_3.json"
        path.parent.mkdir()
        path.write_text(json.dumps(order, indent=4), encoding="utf-8")
        imported = humaneval_v.read(path)
        runs[name] = {
            s["doc_id"]: (s["pass@3"]["qid"], s["pass@3"]["sample_index"], s["pass@3"]["predictions"][0]) for s in imported.samples
        }
    expected = {
        position * n + index: (qid, index, right[qid] if index == 0 else "```python\nx = 1\n```")
        for position, qid in enumerate(rows)
        for index in range(n)
    }
    assert runs["in_order"] == expected  # one document per description, no doc_id shared
    assert runs["qids reversed"] == expected  # the same doc_id is the same (qid, description) whatever the file's qid order
    out = hev_data / "scored"
    assert _score(["humaneval_v", str(hev_data / "in_order" / "m_V2T2C_T2C_sample_3.json"), "--output-dir", str(out)], capsys) == (0, [])
    # official pass@3 with n = 3 samples per task, c = 1 right: 1 - C(2, 3) / C(3, 3) = 1 for every task
    assert (
        json.loads((out / "m_V2T2C_T2C_sample_3.humaneval_v_t2c_pass3.rescored.json").read_text(encoding="utf-8"))["results"]["pass@3,none"]
        == 100.0
    )


def test_haerae_score_py_csv_with_a_literal_nan_score_counts_zero(tmp_path: Path, hermetic_env: Path, monkeypatch, capsys) -> None:
    """`merge_scores.ipynb` reads score.py's CSV with `pd.read_csv` (the cell `nan` becomes NaN) and its
    `get_score` gives NaN 0.0: the row counts 0 in the mean and stays in the denominator."""
    import datasets
    import pandas as pd

    fixtures = haerae_fixture.write(tmp_path / "data")
    monkeypatch.setenv("HAERAE_VISION_DATA", str(fixtures.root))
    # main.py's CSV (every dataset column as `to_pandas()` renders it, then its three columns), read back by
    # score.py, which adds judge_response and score
    frame = datasets.Dataset.from_parquet(str(fixtures.root / "data" / "train-00000-of-00001.parquet")).to_pandas()
    frame["response"] = "답"
    frame["question_type"] = "original"
    frame["question_used"] = frame["question_original"]
    main_csv = tmp_path / "outputs" / "m-original_1.csv"
    main_csv.parent.mkdir()
    frame.to_csv(main_csv, index=False)
    frame = pd.read_csv(main_csv)
    frame["judge_response"] = ["<score>1/2</score>"] + ["판정 불가"] * (len(frame) - 1)  # only the first has a score
    frame["score"] = ["0.5"] + ["nan"] * (len(frame) - 1)
    path = tmp_path / "scores" / "m-original_1.csv"
    path.parent.mkdir()
    frame.to_csv(path, index=False)
    assert pd.read_csv(path, dtype=str, keep_default_na=False)["score"].tolist()[1:] == ["nan"] * (len(frame) - 1)  # the literal cell
    # 4 of 5 verdicts unparsed passes LMMS_TASKS_UNPARSED_MAX_SHARE: the numbers stay official, the status is 3
    assert _score(["haerae", str(path), "--output-dir", str(tmp_path / "out")], capsys) == (3, [])
    results = json.loads((tmp_path / "out" / "m-original_1.haerae_vision_original.rescored.json").read_text(encoding="utf-8"))["results"]
    assert results["haerae_vision_score,none"] == pytest.approx(0.5 / len(frame))
    assert results["judge_unparsed,none"] == len(frame) - 1
    # a number in the cell that its judge reply does not give is still refused (the cell is checked, not trusted)
    frame.loc[1, "score"] = "0.25"
    frame.to_csv(path, index=False)
    status, errors = _score(["haerae", str(path), "--output-dir", str(tmp_path / "refused")], capsys)
    assert status == 2 and len(errors) == 1 and "row 2" in errors[0] and "field 'score' is '0.25'" in errors[0], errors
