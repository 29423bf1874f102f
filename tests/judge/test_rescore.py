"""`python -m lmms_tasks score`: re-score a saved samples file through the task's own aggregations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lmms_tasks.utils.commands import score as rescore
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.testing.openai_server import StandInServer

# From the scripted judge replies (conftest.JUDGE_REPLIES): 2/2, 1/2, unparseable (0), HTTP 500 (failed, 0).
EXPECTED_SCORE = (1.0 + 0.5 + 0.0 + 0.0) / 4
QUESTIONS = ["question zero", "question one", "question two", "question three"]


def write_samples(directory: Path, task: str, name: str | None = None) -> Path:
    """A samples file as lmms-eval writes it: one line per doc with every process_results key."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or f"20260101_000000_samples_{task}.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for doc_id in (2, 0, 3, 1):  # unordered, as ranks are strided
            value = {"task": task, "doc_id": doc_id, "question": QUESTIONS[doc_id], "response": f"response {doc_id}"}
            line = {"doc_id": doc_id, "target": "-", "filtered_resps": value["response"], "judge_score": value, "judge_failures": value, "judge_info": value, "response_words": doc_id}
            fh.write(json.dumps(line) + "\n")
    return path


def judge_requests(server: StandInServer, model: str) -> list[str]:
    return sorted(r.text.split("Question: ")[1].split(" Response")[0] for r in server.requests_for(model=model))


def test_rescore_runs_the_task_aggregations_and_writes_results(
    mini_task_root: Path, mini_task: str, mini_server: StandInServer, judge_env: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    samples = write_samples(tmp_path / "run", mini_task)
    # the judge keeps failing on question three: everything is written, and the exit status says incomplete
    assert rescore.main([str(samples), "--include-path", str(mini_task_root)]) == rescore.EXIT_INCOMPLETE == 3
    captured = capsys.readouterr()
    assert "judge_score" in captured.out and "0.375" in captured.out and "judge=stand-in-judge@127.0.0.1" in captured.out
    incomplete = [line for line in captured.err.splitlines() if line.startswith("incomplete: lmmstasks_mini_judged:")]
    assert len(incomplete) == 1 and "1/4 judge request(s) failed after retries, the first ('3'): HTTP 500" in incomplete[0]
    (records_file,) = (samples.parent / "rescored").glob(f"records_*/judgements/{mini_task}.jsonl")  # the re-score's own records folder
    assert f"every failure is in {records_file}" in incomplete[0]

    report = json.loads((samples.parent / "rescored" / f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    assert report["task"] == mini_task and report["n_samples"] == 4 and report["errors"] == {}
    assert len(report["failures"]) == 1 and "'3'" in report["failures"][0]
    assert report["results"]["judge_score,none"] == pytest.approx(EXPECTED_SCORE)
    assert report["results"]["judge_failures,none"] == 1
    assert report["results"]["response_words,none"] == pytest.approx((2 + 0 + 3 + 1) / 4)  # a registered aggregation
    # three aggregations, one memoized batch: each question judged once (+1 retry of the failing one)
    assert judge_requests(mini_server, "stand-in-judge") == sorted(QUESTIONS + ["question three"])
    records = records_file.read_text(encoding="utf-8").splitlines()
    assert len(records) == 4

    # --judge-model re-judges everything with another judge, over the task's defaults and the environment
    judge.clear_memo()
    assert rescore.main([str(samples), "--include-path", str(mini_task_root), "--judge-model", "other-judge", "--output-dir", str(tmp_path / "other")]) == 3
    other = json.loads((tmp_path / "other" / f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    assert other["results"]["judge_info,none"].startswith("judge=other-judge@")
    assert other["results"]["judge_score,none"] == pytest.approx(EXPECTED_SCORE)
    assert judge_requests(mini_server, "other-judge") == sorted(QUESTIONS + ["question three"])
    assert len(list((tmp_path / "other").glob(f"records_*/judgements/{mini_task}.summary.json"))) == 1
    assert os.environ["LMMS_TASKS_JUDGE_MODEL"] == "stand-in-judge"  # CLI overrides are undone afterwards


def test_rescore_reports_bad_input_naming_the_culprit(
    mini_task_root: Path, mini_task: str, judge_env: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    samples = write_samples(tmp_path / "run", mini_task)
    lines = samples.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[1])
    del broken["judge_failures"]
    samples.write_text("\n".join([lines[0], json.dumps(broken), *lines[2:]]) + "\n", encoding="utf-8")
    assert rescore.main([str(samples), "--include-path", str(mini_task_root)]) == 1
    captured = capsys.readouterr()
    assert "judge_failures" in captured.err and "doc_id 0" in captured.err
    report = json.loads((samples.parent / "rescored" / f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    assert report["results"]["judge_score,none"] == pytest.approx(EXPECTED_SCORE)  # the other metrics are kept

    samples.write_text(lines[0] + "\n{not json\n", encoding="utf-8")
    assert rescore.main([str(samples), "--include-path", str(mini_task_root)]) == 2
    assert f"{samples}:2: not valid JSON" in capsys.readouterr().err

    unknown = write_samples(tmp_path / "run2", "no_such_task")
    assert rescore.main([str(unknown), "--include-path", str(mini_task_root)]) == 2
    assert "no task named 'no_such_task'" in capsys.readouterr().err

    good = write_samples(tmp_path / "run3", mini_task)  # several files: a bad one does not stop the others
    assert rescore.main([str(unknown), str(good), "--include-path", str(mini_task_root)]) == 2
    assert (good.parent / "rescored" / f"{good.stem}.rescored.json").is_file()


@pytest.mark.parametrize(
    ("name", "task_key", "expected"),
    [
        ("20260101_120000_samples_haerae_vision_original.jsonl", None, "haerae_vision_original"),
        ("samples_vlm2_bench_pc_vid.jsonl", None, "vlm2_bench_pc_vid"),
        ("renamed.jsonl", "humaneval_v_v2c", "humaneval_v_v2c"),
    ],
)
def test_task_is_inferred_from_file_name_or_samples(name: str, task_key: str | None, expected: str) -> None:
    assert rescore.infer_task(Path(name), [{"task": task_key}] if task_key else [{}]) == expected
    assert rescore.infer_task(Path(name), [{"doc_id": 0, "score": {"task": task_key}}] if task_key else [{}]) == expected


def test_task_inference_fails_clearly() -> None:
    with pytest.raises(rescore.RescoreError, match="pass --task"):
        rescore.infer_task(Path("renamed.jsonl"), [{"task": "a"}, {"task": "b"}])


def test_score_command_is_wired(mini_task_root: Path, mini_task: str, mini_server: StandInServer, judge_env: dict, tmp_path: Path) -> None:
    samples = write_samples(tmp_path / "run", mini_task, name="renamed.jsonl")
    out = tmp_path / "scored"
    proc = subprocess.run(
        [sys.executable, "-m", "lmms_tasks", "score", str(samples), "--include-path", str(mini_task_root), "--output-dir", str(out)],
        env=dict({**os.environ, **judge_env}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 3, proc.stderr[-3000:]  # one judgement keeps failing (HTTP 500): incomplete
    report = json.loads((out / "renamed.rescored.json").read_text(encoding="utf-8"))
    assert report["task"] == mini_task and report["results"]["judge_score,none"] == pytest.approx(EXPECTED_SCORE)


def test_score_asks_the_benchmark_that_declares_the_task_not_its_name(
    mini_task_writer: Callable[..., Path],
    mini_server: StandInServer,
    judge_env: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """`score` refuses what the task's benchmark refuses (its `hooks.scoring_refusal`): HumanEval-V without the
    code-execution opt-in. The benchmark is the folder holding the task's YAML: a task of the humaneval_v folder
    with another name is refused, a task elsewhere whose name starts with humaneval_v is scored."""
    monkeypatch.delenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", raising=False)
    questions = ["question zero", "question one", "question two", "question three"]
    declared = mini_task_writer(tmp_path / "declared", questions, task="diagram_coding", folder_name="humaneval_v")
    lookalike = mini_task_writer(tmp_path / "lookalike", questions, task="humaneval_v_lookalike", folder_name="vlm2_bench")

    samples = write_samples(tmp_path / "run_declared", "diagram_coding")
    assert rescore.main([str(samples), "--include-path", str(declared)]) == rescore.EXIT_UNUSABLE
    err = capsys.readouterr().err
    assert "diagram_coding: HumanEval-V scores by EXECUTING model-written Python code" in err and "HUMANEVAL_V_ALLOW_CODE_EXECUTION=1" in err
    assert not list(samples.parent.glob("**/*.rescored.json"))

    samples = write_samples(tmp_path / "run_lookalike", "humaneval_v_lookalike")
    assert rescore.scoring_refusal("humaneval_v_lookalike", str(lookalike)) is None
    assert rescore.main([str(samples), "--include-path", str(lookalike)]) == rescore.EXIT_INCOMPLETE  # scored (one judgement fails)
    report = json.loads(next(samples.parent.glob("**/*.rescored.json")).read_text(encoding="utf-8"))
    assert report["task"] == "humaneval_v_lookalike" and report["results"]["judge_score,none"] == pytest.approx(EXPECTED_SCORE)

    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    assert rescore.scoring_refusal("diagram_coding", str(declared)) is None
    assert rescore.scoring_refusal("not_a_task_anywhere", str(declared)) is None


# -- exit statuses over several files: the worst wins, 2 > 1 > 3 > 0 ------------------------------------

SEVERITY_ORDER = [0, 3, 1, 2]  # best first: ok, incomplete (run again), a metric failed, refused


@pytest.mark.parametrize("a", SEVERITY_ORDER)
@pytest.mark.parametrize("b", SEVERITY_ORDER)
def test_worst_status_wins(a: int, b: int) -> None:
    expected = SEVERITY_ORDER[max(SEVERITY_ORDER.index(a), SEVERITY_ORDER.index(b))]
    assert rescore.worst(a, b) == rescore.worst(b, a) == expected


def test_several_files_exit_with_the_worst_status_through_the_cli(
    mini_task_root: Path, mini_task: str, mini_server: StandInServer, judge_env: dict, tmp_path: Path
) -> None:
    """An incomplete file (a judgement keeps failing: 3) and a file with a metric that cannot be computed (1):
    the command exits 1, whatever the order; with an unusable file as well, 2."""
    incomplete = write_samples(tmp_path / "a", mini_task)
    broken = write_samples(tmp_path / "b", mini_task)
    lines = broken.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    del first["response_words"]
    broken.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    unusable = tmp_path / "c" / "20260101_000000_samples_no_such_task.jsonl"
    unusable.parent.mkdir()
    unusable.write_text(lines[1] + "\n", encoding="utf-8")

    def score(*files: Path) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "lmms_tasks", "score", *map(str, files), "--include-path", str(mini_task_root), "--output-dir", str(tmp_path / "out")]
        return subprocess.run(command, env=dict({**os.environ, **judge_env}), capture_output=True, text=True, timeout=300, check=False)

    proc = score(incomplete, broken)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "incomplete: lmmstasks_mini_judged" in proc.stderr and "error: metric 'response_words'" in proc.stderr
    proc = score(broken, incomplete, unusable)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "no task named 'no_such_task'" in proc.stderr


def test_score_checks_the_judge_before_judging(
    mini_task_root: Path, mini_task: str, mini_server: StandInServer, judge_env: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """`score` preflights the judge before its first request (issue 29): a rejected key is one line and exit
    status 2, with no judge request sent (a batch the cache answers entirely sends no preflight:
    test_preflight.py)."""
    samples = write_samples(tmp_path / "run", mini_task)
    mini_server.fault(lambda r: r.model == "stand-in-judge", "401-echo", times=None)
    assert rescore.main([str(samples), "--include-path", str(mini_task_root)]) == rescore.EXIT_UNUSABLE == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"the judge stand-in-judge at {mini_server.base_url} (key from LMMS_TASKS_JUDGE_API_KEY) rejected the key" in errors[0]
    assert mini_server.requests_for(model="stand-in-judge") == [] and len(mini_server.preflights) == 1
    assert not (samples.parent / "rescored" / f"{samples.stem}.rescored.json").exists()


def test_the_runs_own_records_are_found_from_its_results_file_not_from_folders_beside(tmp_path: Path) -> None:
    """lmms-eval writes `<output_path>/<model_name_sanitized>/<ts>_results.json`: the run's judgements/ are in
    <output_path>, whatever folder sits beside the samples (a re-score's `judgements/` there is not the run's)."""
    from lmms_tasks.utils.commands.report.runs import output_path_of

    model = tmp_path / "out" / "my__model"
    model.mkdir(parents=True)
    (model / "judgements").mkdir()  # a decoy beside the samples
    results = model / "20260101_000000_results.json"
    results.write_text(json.dumps({"results": {"t": {}}, "model_name_sanitized": "my__model"}), encoding="utf-8")
    samples = model / "20260101_000000_samples_t.jsonl"
    samples.write_text("{}\n", encoding="utf-8")
    assert output_path_of(results, {"model_name_sanitized": "my__model"}) == tmp_path / "out"
    assert output_path_of(tmp_path / "flat" / "x_results.json", {"model_name_sanitized": "my__model"}) == tmp_path / "flat"
    assert rescore.run_output_path(samples) == tmp_path / "out"
    assert rescore.run_output_path(tmp_path / "elsewhere" / "20260101_000000_samples_t.jsonl") is None  # nothing recorded
