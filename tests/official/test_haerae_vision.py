"""`score --from-official haerae_vision`: the CSV the official `main.py` writes (judged by our judge client, the
response cell sent as the official `score.py` sends it after its CSV round trip) and the CSV `score.py`
writes (already judged: aggregated from the recorded replies, no request sent). The CSVs are built here the
way the official code builds them (`Dataset.to_pandas()` + columns, `to_csv(index=False)`, `read_csv`
defaults); expected scores by hand with `merge_scores.ipynb`'s rules (a missing score counts 0, no clipping)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks.utils.commands.official import cli
from lmms_tasks.utils.services.llm_judge.judge import clear_memo
from lmms_tasks.utils.testing.fixtures import haerae_vision as fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

ITEMS = {item["question_idx"]: item for item in fixture.ITEMS}
# question_idx -> (main.py response cell, what the judge must receive as the response, judge reply, score)
ORIGINAL = {
    101: ('젤다 같아요,\n"확실"하진 않아요.', '젤다 같아요,\n"확실"하진 않아요.', "<score>2/3</score>", 2 / 3),
    102: ("N/A", "nan", "<score>\n1/2\n</score>", 0.5),  # read back as missing by score.py: the judge sees `nan`
    103: ("", "nan", "<score>0/1</score>", 0.0),
    104: ("  vLLM 그대로\r\n둘째 줄", "  vLLM 그대로\r\n둘째 줄", "채점 불가", None),  # the cell as it is; no tag: counts 0
    105: ("정답", "정답", "<score>4/3</score>", 4 / 3),  # not clipped
}
MEAN = (2 / 3 + 0.5 + 0.0 + 0.0 + 4 / 3) / 5  # 0.5
CATEGORIES = {"게임": (2 / 3 + 0.5) / 2, "자연물(동식물/곤충)": 0.0, "IT/컴퓨터": (0.0 + 4 / 3) / 2}


def main_py_csv(data_root: Path, variant: str, responses: dict[int, str], path: Path) -> Path:
    """What the official main.py writes: every dataset column as `to_pandas()` renders it, then response,
    question_type and question_used, with `to_csv(index=False)`."""
    import datasets

    frame = datasets.Dataset.from_parquet(str(data_root / "data" / "train-00000-of-00001.parquet")).to_pandas()
    frame["response"] = [responses[q] for q in frame["question_idx"]]
    frame["question_type"] = variant
    frame["question_used"] = frame[f"question_{variant}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def score_py_csv(main_csv: Path, replies: dict[int, str | None], scores: dict[int, object], path: Path) -> Path:
    """What the official score.py writes: the main.py CSV after `read_csv`, then judge_response and score."""
    import pandas as pd

    frame = pd.read_csv(main_csv)
    frame["judge_response"] = [replies[q] for q in frame["question_idx"]]
    frame["score"] = [scores[q] for q in frame["question_idx"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def data(tmp_path: Path, hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fixtures = fixture.write(tmp_path / "data")
    monkeypatch.setenv("HAERAE_VISION_DATA", str(fixtures.root))
    for key in ("LMMS_TASKS_JUDGE_MODEL", "LMMS_TASKS_JUDGE_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    clear_memo()
    return fixtures.root


def _score(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, list[str]]:
    clear_memo()
    status = cli.score_main(args)
    return status, [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def _judged_question(text: str) -> str:
    tail = text[text.rindex("[INPUT]\n") + len("[INPUT]\n") :]
    return tail[: tail.index("\n[Response]\n")]


def test_main_py_csv_is_judged_as_the_official_score_py_judges_it(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch) -> None:
    csv_path = main_py_csv(data, "original", {q: v[0] for q, v in ORIGINAL.items()}, tmp_path / "outputs" / "litellm_m-original_1.csv")
    by_question = {ITEMS[q]["question_original"]: v[2] for q, v in ORIGINAL.items()}
    with StandInServer(default_reply=lambda r: by_question[_judged_question(r.text)]) as server:
        monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "EMPTY")
        status, errors = _score(["haerae", str(csv_path), "--output-dir", str(tmp_path / "scored")], capsys)
        requests = list(server.requests)
    assert (status, errors) == (0, [])
    # one judge call per row, official model, no parameters, the response exactly as score.py would send it
    assert len(requests) == 5 and {r.model for r in requests} == {"gpt-5-mini"}
    sent = {_judged_question(r.text): r.text for r in requests}
    for q, (_, seen, _, _) in ORIGINAL.items():
        assert f"\n[Response]\n{seen}\n[Checklist]\n" in sent[ITEMS[q]["question_original"]], q
    report = json.loads((tmp_path / "scored" / "litellm_m-original_1.haerae_vision_original.rescored.json").read_text(encoding="utf-8"))
    assert report["task"] == "haerae_vision_original" and report["official_setting"] == "original"
    assert report["results"]["haerae_vision_score,none"] == pytest.approx(MEAN)
    assert report["results"]["judge_failures,none"] == 0 and report["results"]["judge_unparsed,none"] == 1  # 104: no tag, counts 0
    assert report["results"]["category_scores,none"] == pytest.approx(CATEGORIES)  # a result (dict-valued, not in the printed table)
    summary = json.loads((tmp_path / "scored" / "litellm_m-original_1.haerae_vision_original" / "judgements" / "haerae_vision_original.summary.json").read_text(encoding="utf-8"))
    assert "category_scores" not in summary and summary["judge_info"]


@pytest.mark.e2e
def test_score_py_csv_is_aggregated_without_any_judge_request(data: Path, tmp_path: Path) -> None:
    main_csv = main_py_csv(data, "explicit", {q: f"답 {q}" for q in ITEMS}, tmp_path / "outputs" / "m-explicit_1.csv")
    replies = {101: "<score>1/1</score>", 102: "<score>1/2</score>", 103: None, 104: "<score>2/2</score> 그리고 <score>1/2</score>", 105: "<score>3/4</score>"}
    scores = {101: 1.0, 102: 0.5, 103: None, 104: None, 105: 0.75}  # 103 a transport failure, 104 two tags
    current = score_py_csv(main_csv, replies, scores, tmp_path / "scores" / "m-explicit_1.csv")
    earlier = {q: (None if s is None else str({"value": s, "value_frac": "x"})) for q, s in scores.items()}  # the earlier score.py's dict
    old = score_py_csv(main_csv, replies, earlier, tmp_path / "scores_earlier" / "m-explicit_1.csv")
    with StandInServer(default_reply="<score>1/1</score>") as server:
        server.fault(lambda r: True, "500", times=None)  # any request would fail
        env = {**os.environ, "LMMS_TASKS_JUDGE_BASE_URL": server.base_url, "LMMS_TASKS_JUDGE_API_KEY": "EMPTY"}
        proc = subprocess.run(
            [sys.executable, "-m", "lmms_tasks", "score", "--from-official", "haerae_vision", str(current), str(old), "--output-dir", str(tmp_path / "scored")],
            env=dict(env), capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert server.requests == []
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = sorted((tmp_path / "scored").glob("*.rescored.json"))
    assert len(reports) == 2  # same stem and task: the second gets a counter
    for path in reports:
        report = json.loads(path.read_text(encoding="utf-8"))
        assert report["results"]["haerae_vision_score,none"] == pytest.approx((1.0 + 0.5 + 0 + 0 + 0.75) / 5)
        # 103 (no reply) and 104 (two tags) have no score in score.py's CSV: both count 0, as officially
        assert report["results"]["judge_failures,none"] == 0 and report["results"]["judge_unparsed,none"] == 2
    summaries = sorted((tmp_path / "scored").glob("*/judgements/haerae_vision_explicit.summary.json"))
    assert len(summaries) == 2  # one per file
    for summary in summaries:
        assert json.loads(summary.read_text(encoding="utf-8"))["judge_info"].startswith("judge=recorded@m-explicit_1.csv(score.py) ")


def _rows(path: Path):
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _edit(path: Path, change) -> Path:
    frame = _rows(path)
    frame = change(frame)
    frame.to_csv(path, index=False)
    return path


def _scored(data: Path, tmp_path: Path) -> Path:
    main_csv = main_py_csv(data, "original", {q: "답" for q in ITEMS}, tmp_path / "outputs" / "m-original_1.csv")
    return score_py_csv(main_csv, {q: "<score>1/2</score>" for q in ITEMS}, {q: 0.5 for q in ITEMS}, tmp_path / "scores" / "m-original_1.csv")


def _set(frame, row: int, column: str, value: str):
    frame.loc[row, column] = value
    return frame


BAD = [
    ("unknown question_idx", lambda f: _set(f, 0, "question_idx", "999"), "row 1 (question_idx='999'): question_idx is not in the data"),
    ("duplicate", lambda f: _set(f, 1, "question_idx", "101"), "row 2 (question_idx='101'): duplicate question_idx"),
    ("question", lambda f: _set(f, 2, "question_used", "다른 질문"), "row 3 (question_idx='103'): field 'question_used' is not the data's question_original"),
    ("checklist", lambda f: _set(f, 0, "checklist", "['x']"), "row 1 (question_idx='101'): field 'checklist' is not the data's checklist"),
    ("score vs reply", lambda f: _set(f, 3, "score", "0.75"), "row 4 (question_idx='104'): field 'score' is '0.75' but its judge_response gives 0.5"),
    ("score not a number", lambda f: _set(f, 0, "score", "high"), "row 1 (question_idx='101'): field 'score' is neither a number"),
    ("missing column", lambda f: f.drop(columns=["response"]), "column 'response' is missing"),
    ("variant", lambda f: _set(f, 0, "question_type", "vague"), "field 'question_type' must be one of"),
]


@pytest.mark.parametrize(("name", "change", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_exit_2_and_nothing_written(name, change, message, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = _edit(_scored(data, tmp_path), change)
    out = tmp_path / "scored"
    status, errors = _score(["haerae", str(path), "--output-dir", str(out)], capsys)
    assert status == 2 and len(errors) == 1 and str(path) in errors[0] and message in errors[0], errors
    assert not out.exists()


def test_not_a_csv_and_the_earlier_format_without_question_type(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\xff\xfe\x00bad")
    status, errors = _score(["haerae", str(binary)], capsys)
    assert status == 2 and len(errors) == 1 and str(binary) in errors[0]
    # the earlier main.py: one `question` column, no question_type: the variant shows in the question text
    scored = _edit(_scored(data, tmp_path), lambda f: f.drop(columns=["question_type"]).rename(columns={"question_used": "question"}))
    status, errors = _score(["haerae", str(scored), "--output-dir", str(tmp_path / "out")], capsys)
    assert (status, errors) == (0, [])
    report = json.loads((tmp_path / "out" / "m-original_1.haerae_vision_original.rescored.json").read_text(encoding="utf-8"))
    assert report["results"]["haerae_vision_score,none"] == pytest.approx(0.5)


def test_csv_written_by_pandas_round_trips(data: Path, tmp_path: Path) -> None:
    """The fixture CSVs hold what the official code would: multi-line quoted cells survive `read_csv`."""
    path = main_py_csv(data, "original", {q: v[0] for q, v in ORIGINAL.items()}, tmp_path / "o.csv")
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0].endswith(",answer,response,question_type,question_used")
    import pandas as pd

    back = pd.read_csv(io.StringIO(text))
    assert back["response"].isna().tolist() == [False, True, True, False, False]  # "N/A" and "" are missing to score.py


@pytest.mark.parametrize("refusal", ["401-echo", "unknown model"])
def test_a_refused_judge_stops_the_official_file_before_any_judge_request(refusal: str, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch) -> None:
    """`score --from-official` is an entry point of its own: it preflights the judge (issue 29) like `score` and a
    run do, so a judge that refuses is one line and exit 2, with no judge request and nothing written (not one
    failed request per row and exit 3)."""
    csv_path = main_py_csv(data, "original", {q: v[0] for q, v in ORIGINAL.items()}, tmp_path / "outputs" / "m-original_1.csv")
    served = {"not-the-judge"} if refusal == "unknown model" else None
    with StandInServer(default_reply="<score>1/1</score>", served_models=served) as server:
        if refusal == "401-echo":
            server.fault(lambda r: True, "401-echo", times=None)
        monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "sk-refused-0123456789abcdef")
        status, errors = _score(["haerae", str(csv_path), "--output-dir", str(tmp_path / "scored")], capsys)
        requests, preflights, base_url = list(server.requests), list(server.preflights), server.base_url
    assert status == 2 and len(errors) == 1, errors
    says = "rejected the key (HTTP 401" if refusal == "401-echo" else "does not serve model gpt-5-mini (HTTP 404"
    assert f"the judge gpt-5-mini at {base_url} (key from LMMS_TASKS_JUDGE_API_KEY) {says}" in errors[0]
    assert requests == [] and len(preflights) == 1
    assert not (tmp_path / "scored").exists() or not list((tmp_path / "scored").rglob("*.rescored.json"))
