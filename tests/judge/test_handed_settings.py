"""What reaches the judge, each from its documented source, caught here rather than end to end (docs/JUDGE.md):
the preflight's one retry after a connection error; the task YAML's own `judge:` metadata, handed forward by
`score` (and `export-official`, through the same `aggregate`); `score`'s completeness check loading the documents
of the task's subtask when no results file lies beside the samples; the `--judge-*` options over the judge the
run recorded; the key kept out of every failure record."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmms_tasks.utils.commands import score as rescore
from lmms_tasks.utils.services import records
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.testing.openai_server import StandInServer

from .conftest import MINI_TASK, MINI_UTILS, MINI_YAML, script_mini_judge, write_mini_task
from .test_preflight import config_for
from .test_rescore import EXPECTED_SCORE, QUESTIONS, judge_requests, write_samples

# -- the preflight retries once --------------------------------------------------------------------------


@pytest.mark.parametrize("disconnects, proceeds", [(1, True), (2, False)], ids=["first-fails-second-answers", "both-fail"])
def test_the_preflight_retries_once_after_a_connection_error(disconnects: int, proceeds: bool, tmp_path: Path) -> None:
    """The first preflight request's connection drops: the one retry answers and the run proceeds; two drops stop it
    (after exactly one retry), naming the endpoint."""
    with StandInServer(default_reply="<score>1/1</score>") as server:
        server.fault(lambda r: True, "disconnect", times=disconnects)
        config = config_for(server.base_url, tmp_path)
        if proceeds:
            judge.check_judge(config)  # no JudgeUnavailable: the run goes on
        else:
            with pytest.raises(judge.JudgeUnavailable, match="cannot be reached"):
                judge.check_judge(config)
        faults = [r.fault for r in server.preflights]
    assert faults == (["disconnect", None] if proceeds else ["disconnect", "disconnect"])
    assert server.requests == []  # only the preflight was sent


# -- score hands the task YAML's metadata forward; its completeness check loads the subtask's documents ----------

LOADER = '''

def load_subtask(metadata=None, subtask=None, **_):
    """The documents of one subtask: `first_four` of the six in docs.jsonl (a loader needs its subtask, as ours do)."""
    import json, pathlib
    import datasets

    if subtask != "first_four":
        raise ValueError(f"dataset_kwargs.subtask is {subtask!r}; expected 'first_four'")
    docs = [json.loads(line) for line in (pathlib.Path(__file__).parent / "docs.jsonl").read_text().splitlines()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs[:4])})
'''


def write_task_with_its_own_judge_and_subtask(root: Path) -> Path:
    """The mini judged task with a `judge:` mapping in its YAML's metadata and a `custom_dataset` loader that reads
    the subtask from `dataset_kwargs` (six documents on disk, the subtask's four evaluated)."""
    write_mini_task(root, [*QUESTIONS, "question four", "question five"])
    folder = root / MINI_TASK
    yaml = (folder / f"{MINI_TASK}.yaml").read_text(encoding="utf-8")
    data = MINI_YAML.split("dataset_kwargs:\n", 1)[1].split("test_split:", 1)[0]
    yaml = yaml.replace("dataset_kwargs:\n" + data.format(docs=folder / "docs.jsonl"), "dataset_kwargs: {subtask: first_four}\ncustom_dataset: !function utils.load_subtask\n")
    yaml = yaml.replace("metadata:\n  version: 0.1\n", "metadata:\n  version: 0.1\n  judge: {model: yaml-judge}\n")
    assert "subtask: first_four" in yaml and "judge: {model: yaml-judge}" in yaml
    (folder / f"{MINI_TASK}.yaml").write_text(yaml, encoding="utf-8")
    (folder / "utils.py").write_text(MINI_UTILS.format(task=MINI_TASK) + LOADER, encoding="utf-8")
    return root


@pytest.fixture
def own_judge_root(tmp_path: Path) -> Path:
    return write_task_with_its_own_judge_and_subtask(tmp_path / "include_root")


@pytest.fixture
def yaml_judge_server(monkeypatch: pytest.MonkeyPatch, mini_server: StandInServer, judge_env: dict) -> Iterator[StandInServer]:
    """The judge environment of test_rescore.py (LMMS_TASKS_JUDGE_MODEL=stand-in-judge), at a server that also
    answers yaml-judge as the mini task's judge."""
    with StandInServer(default_reply="unscripted") as server:
        script_mini_judge(server, ("stand-in-judge", "yaml-judge"))
        monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", server.base_url)
        yield server


def test_score_judges_with_the_task_yamls_own_judge(own_judge_root: Path, yaml_judge_server: StandInServer, tmp_path: Path) -> None:
    """The YAML's `judge: {model: yaml-judge}` outranks LMMS_TASKS_JUDGE_MODEL (stand-in-judge): every question goes to
    yaml-judge, none to the environment's judge."""
    samples = write_samples(tmp_path / "run", MINI_TASK)  # no results file beside it: nothing recorded
    assert rescore.main([str(samples), "--include-path", str(own_judge_root), "--output-dir", str(tmp_path / "out")]) == rescore.EXIT_INCOMPLETE
    assert judge_requests(yaml_judge_server, "yaml-judge") == sorted(QUESTIONS + ["question three"])  # + the retry of the 500
    assert yaml_judge_server.requests_for(model="stand-in-judge") == []
    report = json.loads((tmp_path / "out" / f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    assert report["results"]["judge_info,none"].startswith("judge=yaml-judge@") and report["results"]["judge_score,none"] == pytest.approx(EXPECTED_SCORE)


def test_score_without_a_results_file_counts_the_subtasks_documents(own_judge_root: Path, yaml_judge_server: StandInServer, tmp_path: Path) -> None:
    """No results file beside the samples: the expected count comes from the task's loader, handed its subtask (four of
    the six documents), so a file cut to three samples is refused, and the full four are scored."""
    full = write_samples(tmp_path / "run", MINI_TASK)
    cut = tmp_path / "cut" / full.name
    cut.parent.mkdir()
    cut.write_text("".join(full.read_text(encoding="utf-8").splitlines(keepends=True)[:3]), encoding="utf-8")
    assert rescore.expected_samples(MINI_TASK, cut, str(own_judge_root)) == (4, "the task's data")
    with pytest.raises(rescore.RescoreError, match=r"holds 3 of the 4 samples the task's data says the run evaluated \(cut\?\)"):
        rescore.rescore(cut, MINI_TASK, str(own_judge_root))
    assert rescore.main([str(cut), "--include-path", str(own_judge_root)]) == 2 and yaml_judge_server.requests == []  # nothing judged
    report = rescore.rescore(full, MINI_TASK, str(own_judge_root), tmp_path / "out")
    assert (report["n_samples"], report["n_expected"]) == (4, 4)


# -- the --judge-* options over the judge the run recorded -----------------------------------------------


def recorded_run(root: Path, server: StandInServer, tmp_path: Path) -> Path:
    """A run as lmms-eval leaves it (`<output_path>/<model>/<ts>_results.json` and samples, its records folder
    `<output_path>/records_<ts>_<random>/` named in the results), judged by stand-in-judge at `server` with the
    cache `run_cache`; returns the samples file."""
    output_path = tmp_path / "out"
    samples = write_samples(output_path / "my__model", MINI_TASK)
    records_dir = records.fresh_path(output_path)
    report = rescore.rescore(samples, MINI_TASK, str(root), output_path, records_dir=records_dir)
    named = {"metadata": {records.RECORDS_KEY: os.path.relpath(records_dir, samples.parent)}}
    results = {"results": {MINI_TASK: report["results"]}, "configs": {MINI_TASK: named}, "model_name_sanitized": "my__model", "date": "20260101_000000"}
    (output_path / "my__model" / "20260101_000000_results.json").write_text(json.dumps({**results, "n-samples": {MINI_TASK: {"effective": 4}}}), encoding="utf-8")
    return samples


def test_judge_options_override_the_recorded_judge_one_setting_each(
    mini_task_root: Path, mini_server: StandInServer, judge_env: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LMMS_TASKS_JUDGE_CACHE_DIR", str(tmp_path / "run_cache"))
    samples = recorded_run(mini_task_root, mini_server, tmp_path)
    asked = len(mini_server.requests)
    # a shell with another judge: the recorded one is reused (its endpoint, its cache: nothing asked again)
    monkeypatch.setenv("LMMS_TASKS_JUDGE_MODEL", "env-judge")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_CACHE_DIR", str(tmp_path / "env_cache"))
    assert rescore.run_judge(samples, MINI_TASK) is not None
    assert rescore.main([str(samples), "--output-dir", str(tmp_path / "reused"), "--include-path", str(mini_task_root)]) == 3
    assert len(mini_server.requests) == asked + 2  # only the judgement that failed is asked again (HTTP 500 again, and its one retry)
    # --judge-model: that model, at the recorded endpoint (the environment's is closed)
    judge.clear_memo()
    assert rescore.main([str(samples), "--output-dir", str(tmp_path / "model"), "--include-path", str(mini_task_root), "--judge-model", "other-judge"]) == 3
    assert judge_requests(mini_server, "other-judge") == sorted(QUESTIONS + ["question three"])
    # --judge-cache-dir: the recorded judge again, with an empty cache: everything asked again
    judge.clear_memo()
    before = len(mini_server.requests_for(model="stand-in-judge"))
    options = ["--judge-cache-dir", str(tmp_path / "new_cache")]
    assert rescore.main([str(samples), "--output-dir", str(tmp_path / "cache"), "--include-path", str(mini_task_root), *options]) == 3
    assert len(mini_server.requests_for(model="stand-in-judge")) - before == len(QUESTIONS) + 1
    # --judge-base-url: another endpoint, the recorded model
    with StandInServer(default_reply="<score>1/1</score>") as elsewhere:
        judge.clear_memo()
        options = ["--judge-base-url", elsewhere.base_url, "--judge-cache-dir", str(tmp_path / "elsewhere_cache")]
        assert rescore.main([str(samples), "--output-dir", str(tmp_path / "url"), "--include-path", str(mini_task_root), *options]) == 0
        assert len(elsewhere.requests_for(model="stand-in-judge")) == len(QUESTIONS)


# -- the key stays out of the failure records ------------------------------------------------------------

KEY = "plain-judge-key-0123456789abcdef"  # held by no environment variable: only the configured key names it


def test_a_key_the_judge_echoes_is_in_no_failure_record(tmp_path: Path) -> None:
    with StandInServer(default_reply="x") as server:
        server.fault(lambda r: True, "401-echo", times=None)  # a gateway that echoes the Authorization header it refused
        config = judge.JudgeConfig(model="stand-in-judge", base_url=server.base_url, api_key=KEY, max_retries=0, cache_dir=str(tmp_path / "cache"), progress=False, preflight=False)
        requests = [judge.JudgeRequest(key=str(i), messages=[{"role": "user", "content": f"q{i}"}]) for i in range(2)]
        batch = judge.judge_batch("t_echo", requests, str, config=config, output_dir=tmp_path / "out")
        sent = [r.headers.get("authorization") for r in server.requests]
    assert sent == [f"Bearer {KEY}"] * 2  # the key was really sent, and echoed
    errors = [batch.outcomes[str(i)].error or "" for i in range(2)]
    assert all("HTTP 401" in error and "[REDACTED]" in error and KEY not in error for error in errors), errors
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name == "t_echo.jsonl" for p in written)
    assert [p for p in written if KEY.encode() in p.read_bytes()] == []
    assert "[REDACTED]" in (tmp_path / "out" / "judgements" / "t_echo.jsonl").read_text(encoding="utf-8")
