"""One real lmms-eval run of a judged task, then `score` on its samples file: same metrics, no repeated calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmms_tasks.utils.commands import score as rescore
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.services.records import recorded_dir
from lmms_tasks.utils.testing.e2e import offline_env, run_lmms_eval
from lmms_tasks.utils.testing.openai_server import StandInServer

EXPECTED_SCORE = (1.0 + 0.5 + 0.0 + 0.0) / 4  # judge replies 2/2, 1/2, no tag, HTTP 500 (conftest.JUDGE_REPLIES)


@pytest.mark.e2e
def test_judged_task_end_to_end_then_rescored(
    mini_task_root: Path, mini_task: str, mini_server: StandInServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    judge_knobs = {"LMMS_TASKS_JUDGE_MAX_RETRIES": "1", "LMMS_TASKS_JUDGE_BACKOFF": "0.01"}
    env = offline_env(mini_server.base_url, tmp_path, extra=judge_knobs)
    out = tmp_path / "results"
    run = run_lmms_eval(mini_task, mini_server.base_url, out, env=env, include_path=str(mini_task_root)).check()

    assert run.metric(mini_task, "judge_score") == pytest.approx(EXPECTED_SCORE)
    assert run.metric(mini_task, "judge_failures") == 1
    info = run.metric(mini_task, "judge_info")
    assert info.startswith(f"judge=stand-in-judge@127.0.0.1:{mini_server.port} ") and "failed=1 unparsed=1" in info
    assert "judge_info" in run.stdout and "judge=stand-in-judge@" in run.stdout  # the results table shows it
    # judged once for three metrics (memoized), on the model's real outputs; the failing item retried once
    judged = mini_server.requests_for(model="stand-in-judge")
    assert len(judged) == 5 and all("Response: answer to " in r.text for r in judged)
    assert all(r.params.get("max_completion_tokens") is None and r.params.get("max_tokens") == 40 for r in judged)
    usage = run.results["usage"]["by_source"]["judge"]
    assert usage["n_api_calls"] == 3
    assert not (out / "judgements").exists()  # the run's records are its own, beside its results file
    run_records = recorded_dir(run.results_path, run.results)
    assert run_records is not None and run_records.parent == run.results_path.parent
    records = [json.loads(line) for line in (run_records / "judgements" / f"{mini_task}.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["meta"]["doc_id"] for r in records) == [0, 1, 2, 3]

    # re-score the saved samples: the same numbers, and only the failed request is sent again
    samples = next(run.results_path.parent.glob(f"*_samples_{mini_task}.jsonl"))
    for key in ("LMMS_TASKS_JUDGE_BASE_URL", "LMMS_TASKS_JUDGE_API_KEY", "LMMS_TASKS_JUDGE_MODEL", "LMMS_TASKS_JUDGE_CACHE_DIR", *judge_knobs):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PROGRESS", "0")
    judge.clear_memo()
    before = len(judged)
    # question three still fails (HTTP 500): everything is written and the status says the numbers are incomplete
    assert rescore.main([str(samples), "--include-path", str(mini_task_root), "--output-dir", str(tmp_path / "rescored")]) == rescore.EXIT_INCOMPLETE
    report = json.loads((tmp_path / "rescored" / f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    for metric in ("judge_score", "judge_failures", "response_words"):
        assert report["results"][f"{metric},none"] == run.metric(mini_task, metric)
    again = mini_server.requests_for(model="stand-in-judge")[before:]
    assert len(again) == 2 and all("Question: question three " in r.text for r in again)
    assert "cached=3" in report["results"]["judge_info,none"]
