"""The v1 stage of the demo (`humaneval_v1` and `humaneval_v1_pass10` run with the v2 tasks' first stage,
two stand-in models, the session's shared demo run): every number computed here by hand from the replies
the fixture scripts (`fixtures.humaneval_v1`)."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.services.records import recorded_dir
from lmms_tasks.utils.testing.demo import DEMO_MODELS
from lmms_tasks.utils.testing.e2e import RunResult
from lmms_tasks.utils.testing.fixtures import humaneval_v1 as fx

pytestmark = pytest.mark.e2e
NONE_MINUS_FLOAT = "unsupported operand type(s) for -: 'NoneType' and 'float'"  # q3's tests on a `return None`


def _stage(outcome: Any, model: str) -> RunResult:
    (run,) = [r for r in outcome.runs_of(model) if "humaneval_v1" in r.results.get("results", {})]
    return run


def _records(run: RunResult, task: str) -> list[dict[str, Any]]:
    path = recorded_dir(run.results_path, run.results) / "executions" / f"{task}.jsonl"  # the run's own records
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_first_model_three_of_four_right(demo_two_models: tuple[Path, Any]) -> None:
    run = _stage(demo_two_models[1], DEMO_MODELS[0])
    # right code for q1, q1-2, q2, a wrong answer for q3; the 20 samples of a task are alike
    for task, name, filter_name in (("humaneval_v1", "pass@1", "none"), ("humaneval_v1_pass10", "pass@10", "n20")):
        assert run.metric(task, name, filter_name) == 75.0
        assert run.metric(task, f"{name}_unrounded", filter_name) == pytest.approx(75.0)
        assert run.metric(task, "parse_success_rate", filter_name) == 100.0
        assert run.metric(task, "parse_success_rate_unrounded", filter_name) == pytest.approx(100.0)
    # each reply closes its block and goes on ("\n```\nIt walks..."): the tasks cut it where the official
    # models stop, so every sample scores the unclosed block, as officially
    samples = run.samples["humaneval_v1_pass10"]
    assert len(samples) == 4 and all(s["pass@10"]["contains_stop"] == [True] * 20 for s in samples)
    assert all(len(s["pass@10"]["predictions"]) == 20 and s["pass@10"]["predictions"][0].endswith("It walks the input once.\n") for s in samples)
    results = {r["qid"]: r["result"] for r in _records(run, "humaneval_v1")}
    # v1's wording: "failed: " + str(exception); q3's test subtracts a float from the wrong answer's None
    assert results == {"q1": "passed", "q1-2": "passed", "q2": "passed", "q3": f"failed: {NONE_MINUS_FLOAT}"}


def test_second_model_gated_and_sampled(demo_two_models: tuple[Path, Any]) -> None:
    run = _stage(demo_two_models[1], DEMO_MODELS[1])
    # greedy: right, wrong, an undefined name (stopped by pylint), right
    assert run.metric("humaneval_v1", "pass@1") == 50.0
    assert run.metric("humaneval_v1", "parse_success_rate") == 75.0
    results = {r["qid"]: r["result"] for r in _records(run, "humaneval_v1")}
    assert results["q1-2"] == "failed: " and results["q2"] == "pylint fail:\nUndefined variable 'helper_never_defined'"
    # sampled: 20, 1, 5 and 0 right samples of 20
    per_task = [1 - comb(20 - c, 10) / comb(20, 10) for c in fx.SECOND_MODEL_RIGHT_OF_20]
    assert run.metric("humaneval_v1_pass10", "pass@10", "n20") == round(100 * sum(per_task) / 4, 1) == 62.1
    assert run.metric("humaneval_v1_pass10", "pass@10_unrounded", "n20") == pytest.approx(100 * sum(per_task) / 4, abs=1e-9)
    assert run.metric("humaneval_v1_pass10", "parse_success_rate", "n20") == 100.0
    passed = {}
    for record in _records(run, "humaneval_v1_pass10"):
        passed[record["qid"]] = passed.get(record["qid"], 0) + record["passed"]
    assert passed == {"q1": 20, "q1-2": 1, "q2": 5, "q3": 0}


def test_score_rescoring_a_v1_samples_file_gives_the_runs_numbers(
    demo_two_models: tuple[Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m lmms_tasks score` on the second model's pass@10 samples file: the same numbers, re-executed
    from the saved programs (an empty cache here), and the v1 result strings in the new records."""
    from lmms_tasks.utils.commands.score import rescore

    run = _stage(demo_two_models[1], DEMO_MODELS[1])
    samples = run.results_path.with_name(run.results_path.name.replace("_results.json", "_samples_humaneval_v1_pass10.jsonl"))
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec"))
    report = rescore(samples, output_dir=tmp_path / "rescored")
    assert report["task"] == "humaneval_v1_pass10" and report["errors"] == {} and report["failures"] == []
    for name in ("pass@10", "pass@10_unrounded", "parse_success_rate", "parse_success_rate_unrounded"):
        assert report["results"][f"{name},n20"] == run.metric("humaneval_v1_pass10", name, "n20"), name
    (records_file,) = (tmp_path / "rescored").glob("records_*/executions/humaneval_v1_pass10.jsonl")  # the re-score's own records folder
    records = [json.loads(line) for line in records_file.read_text().splitlines()]
    assert {r["result"] for r in records} == {"passed", "failed: ", f"failed: {NONE_MINUS_FLOAT}"} and len(records) == 80
