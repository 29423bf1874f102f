"""Several runs into one `--output_path`, as users compare models: each run keeps its own judgement and execution
records (issue 52). Real `lmms-eval` runs of a judged task (HAERAE-Vision) and an executed one (HumanEval-V) into
one folder: model A on every document, model A again with `--limit 3`, model B with `--limit 2`."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.commands.official import cli as official
from lmms_tasks.utils.commands.report.runs import ReportInputError, load_runs, read_results_file, records_dir, summaries
from lmms_tasks.utils.services.records import recorded_dir
from lmms_tasks.utils.testing.e2e import offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture
from lmms_tasks.utils.testing.fixtures import humaneval_v as hev_fixture
from lmms_tasks.utils.testing.openai_server import StandInServer
from lmms_tasks.utils.testing.unhurried import unhurried, unhurried_site

TASKS = ["haerae_vision_original", "humaneval_v_v2c"]
N_HAERAE = len(hv_fixture.ITEMS)  # every document of the fixture
N_HUMANEVAL = len(hev_fixture.records())  # every problem of the fixture (k = 1: one program each)


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("two_runs")
    hv = hv_fixture.write(work / "hv_data")
    hev = hev_fixture.write(work / "hev_data")
    out = work / "results"
    # every reply is a judge score (the model's answers are judged 1/2; as programs they fail)
    with StandInServer(default_reply=lambda r: "<score>1/2</score>") as server:
        extra = {
            **hv.env,
            **hev.env,
            "HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1",
            "PYTHONPATH": str(unhurried_site(work / "site")),
            "LMMS_TASKS_JUDGE_PROGRESS": "0",
        }
        env = offline_env(server.base_url, work, extra=extra)
        first = run_lmms_eval(TASKS, server.base_url, out, env=env, model_version="vlm-a").check()  # the lmms-eval command
        before = _hashes(out)
        with unhurried():  # the later two through lmms-eval's CLI entry in this process (what they write is tested)
            second = run_lmms_eval(TASKS, server.base_url, out, env=env, model_version="vlm-a", limit=3, in_process=True).check()
            other = run_lmms_eval(TASKS, server.base_url, out, env=env, model_version="vlm-b", limit=2, in_process=True).check()
    return {"out": out, "first": first, "second": second, "other": other, "before": before, "work": work}


@pytest.mark.e2e
def test_a_later_run_changes_no_file_of_an_earlier_one(folder: dict[str, Any]) -> None:
    after = _hashes(folder["out"])
    assert folder["before"] and {name: after.get(name) for name in folder["before"]} == folder["before"]
    assert not (folder["out"] / "judgements").exists() and not (folder["out"] / "executions").exists()
    dirs = {key: recorded_dir(folder[key].results_path, folder[key].results) for key in ("first", "second", "other")}
    assert None not in dirs.values() and len(set(dirs.values())) == 3  # one records folder per run
    for key, directory in dirs.items():
        assert directory.parent == folder[key].results_path.parent  # beside the run's results, in its model's folder


@pytest.mark.e2e
def test_each_run_reads_its_own_records(folder: dict[str, Any]) -> None:
    expected = {"first": N_HAERAE, "second": 3, "other": 2}
    for key, n in expected.items():
        results = read_results_file(folder[key].results_path)
        judged = json.loads((records_dir(results, "judgements") / "haerae_vision_original.summary.json").read_text(encoding="utf-8"))
        assert judged["requests"] == n, key
        executed = (records_dir(results, "executions") / "humaneval_v_v2c.jsonl").read_text(encoding="utf-8").splitlines()
        samples = (
            folder[key].results_path.with_name(f"{results.stamp}_samples_humaneval_v_v2c.jsonl").read_text(encoding="utf-8").splitlines()
        )
        assert len(executed) == len(samples) and len(samples) == (3 if key == "second" else 2 if key == "other" else len(samples))
    # each run of the folder (vlm-a twice: two runs) reads its own run's summary
    runs = {run.label: run for run in load_runs([folder["out"]])}
    assert {label: {s.task: s.data["requests"] for s in summaries(run, "judgements")} for label, run in runs.items()} == {
        _label(folder["first"]): {"haerae_vision_original": N_HAERAE},
        _label(folder["second"]): {"haerae_vision_original": 3},
        "vlm-b": {"haerae_vision_original": 2},
    }


def _label(run: Any) -> str:
    """The report's label of one of vlm-a's two runs: the model and its results file's timestamp."""
    return "vlm-a @ " + run.results_path.name[: -len("_results.json")]


def _table(markdown: str, anchor: str) -> list[dict[str, str]]:
    """The body rows of a report table (after `<!-- table: anchor -->`), each as {column: cell}."""
    lines = markdown.split(f"<!-- table: {anchor} -->", 1)[1].splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("|")) :]
    lines = lines[: next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))]
    header, *body = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[:1] + lines[2:]]
    return [dict(zip(header, row)) for row in body]


@pytest.mark.e2e
def test_report_shows_each_run_of_a_model_with_its_own_health_figures(folder: dict[str, Any], capsys: pytest.CaptureFixture) -> None:
    """vlm-a on every document and vlm-a again with `--limit 3`, into one folder: two report runs side by side,
    labelled by their timestamps, whose judge requests and programs run differ as the runs did (issue 52)."""
    from lmms_tasks.utils.commands.report import cli as report

    first, second = _label(folder["first"]), _label(folder["second"])
    capsys.readouterr()
    assert report.main([str(folder["out"]), "--out", str(folder["work"] / "report_all")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"runs: {first}, {second}, vlm-b"
    md = (folder["work"] / "report_all" / "report.md").read_text(encoding="utf-8")
    # (requests, cache hits): the later runs' judgements all come from the shared cache the first run filled
    judged = {
        row["Run"]: (row["Requests"], row["Cache hits"]) for row in _table(md, "health-judge") if row["Task"] == "`haerae_vision_original`"
    }
    assert judged == {first: (str(N_HAERAE), "0"), second: ("3", "3"), "vlm-b": ("2", "2")}
    executed = {row["Run"]: (row["Programs"], row["Cache hits"]) for row in _table(md, "health-exec") if row["Task"] == "`humaneval_v_v2c`"}
    assert executed == {first: (str(N_HUMANEVAL), "0"), second: ("3", "3"), "vlm-b": ("2", "2")}


@pytest.mark.e2e
def test_export_official_writes_each_runs_own_score_csv(folder: dict[str, Any]) -> None:
    out = folder["work"] / "export"
    official.export([folder["out"]], out)
    exported = {p.name: len(json.loads(p.read_text(encoding="utf-8"))) for p in (out / "humaneval_v").glob("*.json")}
    assert len(exported) == 3 and sorted(exported.values())[:2] == [2, 3]  # each run's own programs
    rows = {}
    for path in sorted((out / "haerae_vision" / "scores").glob("*.csv")):
        with open(path, encoding="utf-8", newline="") as fh:
            rows[path.name] = len(list(csv.DictReader(fh)))
    assert rows == {"vlm-a-original_1.csv": N_HAERAE, "vlm-a-original_2.csv": 3, "vlm-b-original_1.csv": 2}


def _legacy_run(folder: Path, stamp: str, tasks: list[str]) -> Path:
    model = folder / "m"
    model.mkdir(parents=True, exist_ok=True)
    data = {
        "results": {t: {"alias": t} for t in tasks},
        "configs": {t: {"metadata": {"version": 1}} for t in tasks},
        "model_name_sanitized": "m",
        "date": stamp,
    }
    path = model / f"{stamp}_results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_previous_layout_read_for_one_run_refused_for_several(tmp_path: Path) -> None:
    one = _legacy_run(tmp_path / "one", "20260101_000000", ["t"])
    (tmp_path / "one" / "judgements").mkdir()
    assert records_dir(read_results_file(one), "judgements") == tmp_path / "one" / "judgements"
    first = _legacy_run(tmp_path / "two", "20260101_000000", ["t"])
    _legacy_run(tmp_path / "two", "20260102_000000", ["t"])
    (tmp_path / "two" / "judgements").mkdir()
    with pytest.raises(ReportInputError) as caught:
        records_dir(read_results_file(first), "judgements")
    assert "\n" not in str(caught.value) and "shared by 2 runs" in str(caught.value)


@pytest.mark.e2e
def test_report_shows_a_run_beside_its_rescore(
    folder: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from lmms_tasks.utils.commands import score
    from lmms_tasks.utils.commands.report import cli as report
    from lmms_tasks.utils.services.llm_judge import judge

    first = folder["first"]
    samples = first.results_path.with_name(f"{read_results_file(first.results_path).stamp}_samples_haerae_vision_original.jsonl")
    monkeypatch.setenv("HAERAE_VISION_DATA", str(folder["work"] / "hv_data"))
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PROGRESS", "0")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "EMPTY")
    judge.clear_memo()
    before = _hashes(folder["out"])
    rescored = folder["work"] / "rescored"
    assert score.main([str(samples), "--output-dir", str(rescored)]) == score.EXIT_OK  # every judgement from the shared cache
    assert _hashes(folder["out"]) == before  # the original run's files and records untouched
    run = next(rescored.glob("*_results.json"))
    data = json.loads(run.read_text(encoding="utf-8"))
    assert data["results"]["haerae_vision_original"]["haerae_vision_score,none"] == first.metric(
        "haerae_vision_original", "haerae_vision_score"
    )
    (own,) = rescored.glob("records_*")  # its own records, beside it, in a folder of its own
    assert records_dir(read_results_file(run), "judgements") == own / "judgements"
    assert json.loads((own / "judgements" / "haerae_vision_original.summary.json").read_text(encoding="utf-8"))["requests"] == N_HAERAE
    rescored_samples = next(rescored.glob("*_samples_haerae_vision_original.jsonl"))
    assert len(rescored_samples.read_text(encoding="utf-8").splitlines()) == N_HAERAE
    # lmms-eval's own --baseline loader reads the re-score as it reads the run: the same per-document scores,
    # and the re-score's results file beside its samples
    from lmms_eval.baselines.loader import load_baseline

    (original_scores, _), (rescored_scores, rescored_results) = (
        load_baseline(str(path), "haerae_vision_original") for path in (samples, rescored_samples)
    )
    assert len(original_scores) == N_HAERAE and rescored_scores == original_scores
    assert rescored_results == data
    capsys.readouterr()
    assert report.main([str(first.results_path), str(rescored), "--out", str(folder["work"] / "report")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "runs: vlm-a, vlm-a (re-scored)"


@pytest.mark.e2e
def test_a_second_rescore_into_one_folder_changes_no_file_of_the_first(folder: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each re-score is a run with its own records folder: a later one into the same --output-dir leaves the earlier
    one's results, samples, records and `<stem>.rescored.json` summary as they were (the later's is `<stem>.2.rescored.json`)."""
    from lmms_tasks.utils.commands import score
    from lmms_tasks.utils.services.llm_judge import judge

    first = folder["first"]
    samples = first.results_path.with_name(f"{read_results_file(first.results_path).stamp}_samples_haerae_vision_original.jsonl")
    monkeypatch.setenv("HAERAE_VISION_DATA", str(folder["work"] / "hv_data"))
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PROGRESS", "0")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_API_KEY", "EMPTY")
    out = folder["work"] / "rescored_twice"
    judge.clear_memo()
    assert score.main([str(samples), "--output-dir", str(out)]) == score.EXIT_OK
    earlier = _hashes(out)
    assert f"{samples.stem}.rescored.json" in earlier
    assert any(name.startswith("records_") and "/judgements/" in name for name in earlier), earlier
    judge.clear_memo()
    assert score.main([str(samples), "--output-dir", str(out)]) == score.EXIT_OK
    later = _hashes(out)
    assert {name: later.get(name) for name in earlier} == earlier
    assert len(list(out.glob("records_*"))) == 2 and len(list(out.glob("*_results.json"))) == 2
    assert set(later) - set(earlier) >= {f"{samples.stem}.2.rescored.json"}
