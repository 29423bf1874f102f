"""`score --from-official vlm2_bench`: the official inference output of every subtask, in the official result
tree, scored through the real CLI; expected numbers computed here by hand with the official scorers' rules
(VLM2_FORMATS: exact T/F for GC, first-"_" split and later-duplicate rule for cpr, L from the question file
for counting, prefix before ")" for grouping, "Score: <n>" for PC-VID). Bad input: one line, exit 2,
nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks.utils.commands.official import cli
from lmms_tasks.utils.services.llm_judge.judge import clear_memo
from lmms_tasks.utils.testing.openai_server import StandInServer

FOLDERS = {
    "gc_mat": "code/gc/test/test_res/test_mat",
    "gc_trk": "code/gc/test/test_res/test_trk",
    "oc_cpr": "code/oc/test/test_res/test_cpr",
    "oc_cnt": "code/oc/test/test_res/test_cnt",
    "oc_grp": "code/oc/test/test_res/test_grp",
    "pc_cpr": "code/pc/image/test/test_res/test_cpr",
    "pc_cnt": "code/pc/image/test/test_res/test_cnt",
    "pc_grp": "code/pc/image/test/test_res/test_grp",
    "pc_vid": "code/pc/video/test/test_res/test_pc_v_open-ended",
}
IMAGES = ["a.jpg", "b.jpg"]

# subtask -> question-file records (the data) and the official answer of each (None: not in the prediction file)
GC_MAT = [
    ({"q_id": 1, "task": "mat", "question": "g1 pos", "gt_answer": "T", "edited_prompt": "e1", "images": IMAGES}, "T"),
    ({"q_id": 1, "task": "mat", "question": "g1 neg", "gt_answer": "F", "edited_prompt": "e1", "images": IMAGES}, "F"),
    ({"q_id": 2, "task": "mat", "question": "g2 pos", "gt_answer": "T", "edited_prompt": "e2", "images": IMAGES}, "True"),  # parsed T; not exact
    ({"q_id": 2, "task": "mat", "question": "g2 neg", "gt_answer": "F", "edited_prompt": "e2", "images": IMAGES}, "F"),
    ({"q_id": 3, "task": "mat", "question": "g3 pos", "gt_answer": "T", "edited_prompt": "e3", "images": IMAGES}, "T"),
    ({"q_id": 3, "task": "mat", "question": "g3 neg", "gt_answer": "F", "edited_prompt": "e3", "images": IMAGES}, "T"),  # wrong
    ({"q_id": 4, "task": "mat", "question": "g4 pos", "gt_answer": "T", "edited_prompt": "e4", "images": IMAGES}, "t"),  # singleton
    ({"q_id": 5, "task": "mat", "question": "g5 pos", "gt_answer": "T", "edited_prompt": "e5", "images": ["only.jpg"]}, None),  # < 2 images
]
GC_TRK = [
    ({"q_id": "t1", "task": "trk", "question": "t1 pos", "gt_answer": "T", "edited_prompt": "x", "images": IMAGES}, "T"),
    ({"q_id": "t1", "task": "trk", "question": "t1 neg", "gt_answer": "F", "edited_prompt": "x", "images": IMAGES}, "F"),
]
OC_CPR = [
    ({"q_id": "1_p", "type": "cup", "question": "q", "gt_answer": "T", "images": IMAGES}, "T"),
    ({"q_id": "1_n", "type": "cup", "question": "q", "gt_answer": "F", "images": IMAGES}, "F"),
    ({"q_id": "2_p", "type": "cup", "question": "q", "gt_answer": "T", "images": IMAGES}, "True, the same cup."),
    ({"q_id": "2_n", "type": "cup", "question": "q", "gt_answer": "F", "images": IMAGES}, "I can't tell"),  # "can't" -> T: wrong
    ({"q_id": "3_p", "type": "vase", "question": "q", "gt_answer": "F", "images": IMAGES}, "F"),
    ({"q_id": "3_n", "type": "vase", "question": "q", "gt_answer": " t ", "images": IMAGES}, "I think T"),  # gt stripped, upper-cased
    ({"q_id": "4_p", "type": "vase", "question": "q", "gt_answer": "T", "images": IMAGES}, "T"),  # pair incomplete: not in N
    ({"q_id": "4_n", "type": "vase", "question": "q", "gt_answer": "F", "images": IMAGES}, None),  # never answered
    ({"q_id": "oc_5_p", "type": "vase", "question": "q", "gt_answer": "T", "images": IMAGES}, "T"),  # suffix "5_p": skipped
]
PC_CPR = [
    ({"q_id": "tf_1_p", "type": "face", "question": "q", "gt_answer": "T", "images": IMAGES}, "T"),
    ({"q_id": "1_n", "type": "face", "question": "q", "gt_answer": "F", "images": IMAGES}, "F"),  # joins tf_1_p after the strip
    ({"q_id": "2_p", "type": "face", "question": "q", "gt_answer": "T", "images": IMAGES}, "F"),
    ({"q_id": "2_n", "type": "face", "question": "q", "gt_answer": "F", "images": IMAGES}, "F"),
]
OC_CNT = [
    ({"q_id": "c1", "type": "cup", "question": "n?", "gt_answer": 3, "images": IMAGES * 2, "image_seq_len": 4}, "3"),
    ({"q_id": "c2", "type": "cup", "question": "n?", "gt_answer": 2, "images": IMAGES, "image_seq": ["a", "b", "c"]}, "three"),  # L=3
    ({"q_id": "c3", "type": "cup", "question": "n?", "gt_answer": 1, "images": IMAGES}, "5"),  # L=2 (default): out of range
    ({"q_id": "c4", "type": "cup", "question": "n?", "gt_answer": 2, "images": IMAGES * 2, "image_seq_len": 4}, "1"),
    ({"q_id": "c5", "type": "cup", "question": "n?", "gt_answer": 2, "images": IMAGES}, "I don't know"),  # unparsed
]
PC_CNT = [({"q_id": "p1", "type": "face", "question": "n?", "gt_answer": 2, "images": IMAGES, "image_seq_len": 2}, "2")]
OC_GRP = [
    ({"q_id": "r1", "type": "cup", "question": "g?", "gt_answer": "(A) 1 and 2", "images": IMAGES}, "(A) 1 and 2"),
    ({"q_id": "r2", "type": "cup", "question": "g?", "gt_answer": "(B) None", "images": IMAGES}, "(B)"),
    ({"q_id": "r3", "type": "cup", "question": "g?", "gt_answer": "(C) 1, 3 and 4", "images": IMAGES}, "(A) or (C)"),  # several options
    ({"q_id": "r4", "type": "cup", "question": "g?", "gt_answer": "(D) 1 and 4", "images": IMAGES}, "D) 1 and 4"),  # "D" != "(D"
]
PC_GRP = [({"q_id": "s1", "type": "face", "question": "g?", "gt_answer": "(B) 2 and 3", "images": IMAGES}, "(B) 2 and 3")]
PC_VID = [
    ({"vid": "UNI_AB_001", "question": "Describe.", "gt_answer": "AB"}, "a man, then a woman"),
    ({"vid": "UNI_ABA_002", "question": "Describe."}, "a man, a woman, the man again"),
    ({"vid": "UNI_AB_003", "question": "Describe."}, "two people"),
]
JUDGE = {"a man, then a woman": "Score: 1", "a man, a woman, the man again": "Score: 1", "two people": "The description is vague."}
DATA = {
    "gc_mat": GC_MAT,
    "gc_trk": GC_TRK,
    "oc_cpr": OC_CPR,
    "pc_cpr": PC_CPR,
    "oc_cnt": OC_CNT,
    "pc_cnt": PC_CNT,
    "oc_grp": OC_GRP,
    "pc_grp": PC_GRP,
    "pc_vid": PC_VID,
}

C4 = 100 * (1 - 0.5 ** (1 / 10))  # gt 2, answer 1, L 4: max_error 2, relative error 1/2, penalty (4/4) * 0.5^(1/10)
EXPECTED = {  # official numbers, by hand (see each record's comment)
    "gc_mat": {  # groups by raw q_id: 1 (T "T", F "F"), 2 (T "True", F "F"), 3 (T "T", F "T"), singleton 4 (T "t")
        "tf_n_pairs": 4,  # 5 has one image: never asked
        "gc_exact_pos_acc": 50.0,  # exact "T": 1 and 3
        "gc_exact_neg_acc": 50.0,  # exact "F": 1 and 2
        "gc_exact_pair_acc": 25.0,  # 1
        "tf_pos_acc": 100.0,  # parsed: "True" and "t" are T
        "tf_neg_acc": 50.0,
        "tf_pair_acc": 50.0,  # 1 and 2
        "vlm2_score": 50.0,
    },
    "gc_trk": {"vlm2_score": 100.0, "gc_exact_pair_acc": 100.0, "tf_n_pairs": 1},
    "oc_cpr": {"tf_n_pairs": 3, "tf_pos_acc": 100.0, "tf_neg_acc": 200 / 3, "tf_pair_acc": 200 / 3, "vlm2_score": 200 / 3},
    "pc_cpr": {"tf_n_pairs": 2, "tf_pos_acc": 50.0, "tf_neg_acc": 100.0, "tf_pair_acc": 50.0},
    "oc_cnt": {
        "cnt_norm_score": (100 + 0 + C4) / 3,  # c2: penalty (4/3) * 1 >= 1 -> 0; c3 and c5 excluded
        "cnt_acc": 20.0,
        "cnt_n_valid": 3,
        "cnt_n_unparsed": 1,
        "cnt_n_out_of_range": 1,
        "cnt_strict_score": (100 + 0 + C4) / 5,
    },
    "pc_cnt": {"cnt_norm_score": 100.0, "cnt_acc": 100.0},
    "oc_grp": {"grp_acc": 50.0, "grp_n": 4},
    "pc_grp": {"grp_acc": 100.0, "grp_n": 1},
    "pc_vid": {"vid_ab_pct": 100.0, "vid_aba_pct": 50.0, "vlm2_score": 75.0, "vid_n_ab": 1, "vid_n_aba": 1, "vid_judge_unparsed": 1},
}


def write_data(root: Path) -> Path:
    """The question files (no media: scoring needs none) in the release layout."""
    for subtask, rows in DATA.items():
        family = subtask.split("_")[0]
        path = root / ("jsonl/pc/vallina/pc_v_open-ended.jsonl" if subtask == "pc_vid" else f"jsonl/{family}/vanilla/{subtask}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(record) + "\n" for record, _ in rows), encoding="utf-8")
    return root


def official_record(subtask: str, record: dict, answer: str) -> dict:
    """What the official inference script writes for one answer (its keys, in its order)."""
    if subtask == "pc_vid":
        return {**record, "model_answer": answer, "gt_answer": record.get("gt_answer", "")}
    if subtask.startswith("gc_"):
        head = {"q_id": record["q_id"], "task": record["task"], "question": record["question"], "edit_prompt": record["edited_prompt"]}
    else:
        head = {"q_id": record["q_id"], "type": record["type"], "question": record["question"]}
    return {**head, "model_answer": answer, "gt_answer": record["gt_answer"]}


def write_predictions(root: Path) -> dict[str, Path]:
    files = {}
    for subtask, rows in DATA.items():
        name = "vid_Model-X_20250301_120500.jsonl" if subtask == "pc_vid" else "Model-X_20250301_120000_answers.jsonl"
        path = root / FOLDERS[subtask] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(official_record(subtask, record, answer)) for record, answer in rows if answer is not None]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[subtask] = path
    return files


@pytest.fixture
def official_tree(tmp_path: Path, hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Path]]:
    data = write_data(tmp_path / "release")
    monkeypatch.setenv("VLM2_BENCH_DATA", str(data))
    return tmp_path / "repo", write_predictions(tmp_path / "repo")


def _judge_reply(request) -> str:
    description = request.text.rsplit("#Description\n", 1)[1]
    return JUDGE[description[:-1] if description.endswith("\n") else description]


@pytest.mark.e2e
def test_official_tree_scored_through_the_cli(official_tree: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    repo, files = official_tree
    out = tmp_path / "scored"
    with StandInServer(default_reply=_judge_reply) as server:
        env = {
            **os.environ,
            "LMMS_TASKS_JUDGE_BASE_URL": server.base_url,
            "LMMS_TASKS_JUDGE_API_KEY": "EMPTY",
            "LMMS_TASKS_JUDGE_PROGRESS": "0",
        }
        proc = subprocess.run(
            [sys.executable, "-m", "lmms_tasks", "score", "--from-official", "vlm2_bench", str(repo / "code"), "--output-dir", str(out)],
            env=dict(env), capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        judged = list(server.requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the official PC-VID judge call: gpt-4o, max_tokens 300, one per answer, the official prompt per type
    assert len(judged) == 3 and {r.model for r in judged} == {"gpt-4o"} and {r.params.get("max_tokens") for r in judged} == {300}
    assert sum("#Description\na man, a woman, the man again" in r.text for r in judged) == 1
    for subtask, expected in EXPECTED.items():
        report = json.loads((out / f"{files[subtask].stem}.vlm2_bench_{subtask}.rescored.json").read_text(encoding="utf-8"))
        assert report["errors"] == {} and report["official_setting"] == subtask
        for metric, value in expected.items():
            assert report["results"][f"{metric},none"] == pytest.approx(value), (subtask, metric)
    cpr = json.loads((out / f"{files['oc_cpr'].stem}.vlm2_bench_oc_cpr.rescored.json").read_text(encoding="utf-8"))
    assert (cpr["n_samples"], cpr["n_expected"]) == (8, 9)  # 4_n never answered: scored over what is there, as officially
    assert "holds 8 of 9 samples" in proc.stderr
    assert "gc_exact_pos_acc | gc_exact_neg_acc | gc_exact_pair_acc" in proc.stdout  # which of our numbers the official GC script prints


def _score(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, list[str]]:
    clear_memo()
    status = cli.score_main(args)
    return status, [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def _rewrite(path: Path, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")


def _set(line: str, **fields) -> str:
    record = json.loads(line)
    for key, value in fields.items():
        if value is KeyError:
            record.pop(key)
        else:
            record[key] = value
    return json.dumps(record)


BAD = [
    ("blank line", "oc_cpr", lambda ls: [ls[0], "", *ls[1:]], ":2: blank line"),
    ("not JSON", "oc_grp", lambda ls: [ls[0], "{oops", *ls[1:]], ":2: not valid JSON"),
    ("unknown q_id", "oc_cnt", lambda ls: [*ls, _set(ls[0], q_id="c9")], ":6 (q_id='c9'): q_id 'c9' is not in the data"),
    ("duplicate", "oc_cpr", lambda ls: [*ls, ls[0]], ":9 (q_id='1_p'): duplicate record"),
    ("duplicate GC member", "gc_mat", lambda ls: [*ls, ls[0]], ":8 (q_id=1): duplicate record"),
    ("missing answer", "oc_grp", lambda ls: [_set(ls[0], model_answer=KeyError), *ls[1:]], ":1: field 'model_answer' is missing"),
    ("null answer", "oc_cpr", lambda ls: [_set(ls[0], model_answer=None), *ls[1:]], "field 'model_answer' must be a string, got null"),
    ("int cpr q_id", "pc_cpr", lambda ls: [*ls[:3], _set(ls[3], q_id=7)], ":4 (q_id=7): field 'q_id' must be a string"),
    ("string counting gt", "oc_cnt", lambda ls: [_set(ls[0], gt_answer="3"), *ls[1:]], "field 'gt_answer' is \"3\" but the data's is 3"),
    ("GC q_id type", "gc_mat", lambda ls: [_set(ls[0], q_id="1"), *ls[1:]], "field 'q_id' is \"1\" (str) but the data's is 1 (int)"),
    ("skipped record", "gc_mat", lambda ls: [*ls, json.dumps({"q_id": 5, "task": "mat", "question": "g5 pos", "edit_prompt": "e5", "model_answer": "T", "gt_answer": "T"})], "fewer than 2 images"),
    ("missing vid", "pc_vid", lambda ls: [_set(ls[0], vid=KeyError)], ":1: field 'vid' is missing"),
]


@pytest.mark.parametrize(("name", "subtask", "edit", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    name: str, subtask: str, edit, message: str, official_tree: tuple[Path, dict[str, Path]], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _, files = official_tree
    _rewrite(files[subtask], edit)
    out = tmp_path / "scored"
    status, errors = _score(["vlm2", str(files[subtask]), "--output-dir", str(out)], capsys)
    assert status == 2
    assert len(errors) == 1 and str(files[subtask]) in errors[0] and message in errors[0], errors
    assert not out.exists()


def test_wrong_format_and_unknown_subtask(official_tree: tuple[Path, dict[str, Path]], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _, files = official_tree
    csv_file = tmp_path / "preds.jsonl"
    csv_file.write_text("q_id,model_answer\n1,T\n", encoding="utf-8")
    status, errors = _score(["vlm2", str(csv_file)], capsys)
    assert status == 2 and errors == [f"error: {csv_file}:1: not valid JSON (Expecting value); not an official VLM2-Bench prediction file"]
    loose = tmp_path / "loose.jsonl"  # out of its official folder: cpr records do not tell OC from PC
    loose.write_text(files["oc_cpr"].read_text(encoding="utf-8"), encoding="utf-8")
    status, errors = _score(["vlm2", str(loose)], capsys)
    assert status == 2 and len(errors) == 1 and "pass --task vlm2_bench_<subtask>" in errors[0]
    status, _ = _score(["vlm2", str(loose), "--task", "vlm2_bench_oc_cpr", "--output-dir", str(tmp_path / "ok")], capsys)
    assert status == 0
    assert json.loads((tmp_path / "ok" / "loose.vlm2_bench_oc_cpr.rescored.json").read_text(encoding="utf-8"))["results"]["tf_n_pairs,none"] == 3
