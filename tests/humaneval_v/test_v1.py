"""HumanEval-V v1 (108 tasks, upstream commit 00d2cf2): prompt, tasks, data checks, extraction, gate and
execution, against the official v1 results written down in the case table
(`lmms_tasks.utils.testing.cases.humaneval_v1`: every row's completion and per-sample result were obtained by
running the untouched official code; tests/conformance replays the same rows through the real CLI)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.humaneval_v import execution, hooks, metrics, v1
from lmms_tasks.utils.humaneval_v.extraction_v1 import post_process, select_content, stop_at_fence
from lmms_tasks.utils.humaneval_v.metrics import ItemError
from lmms_tasks.utils.humaneval_v.passk import pass_at_k_score
from lmms_tasks.utils.services import sandbox
from lmms_tasks.utils.services.data import DataError
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.sandbox import ExecResult
from lmms_tasks.utils.services.taskconfig import task_config
from lmms_tasks.utils.testing.cases import humaneval_v1 as cases
from lmms_tasks.utils.testing.fixtures import humaneval_v as v2_fx
from lmms_tasks.utils.testing.fixtures import humaneval_v1 as fx

# The v1 prompt (inference.py CODE_GEN_TASK_PROMPT), as the research notes give its repr, length and sha256.
V1_PROMPT = (
    "**Instructions:**\nYou are an exceptionally intelligent coding assistant that consistently delivers accurate and reliable "
    "responses to user instructions. Please complete the function based on the provided image and code context. Return the "
    "complete solution, including the function signature, in a single response, formatted within a Python code block.\n\n"
    "**Code Context:**\n```python\n{signature}\n```\n"
)
V1_PROMPT_SHA256 = "331c0510d0cc946a9fd89b3d1568cf102d985c31e3c57c13b28e00dda64dfc23"


@pytest.fixture()
def v1_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> fx.FixtureSet:
    fixtures = fx.write(tmp_path / "v1")
    monkeypatch.setenv("HUMANEVAL_V1_DATA", fixtures.env["HUMANEVAL_V1_DATA"])
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec_cache"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    return fixtures


def docs(task: str) -> list[dict[str, Any]]:
    return list(hooks.load_subtask(**task_config(task)["dataset_kwargs"])["test"])


def warnings_during(fn: Any) -> list[str]:
    messages: list[str] = []
    sink = logger.add(lambda message: messages.append(str(message)), level="WARNING")
    try:
        fn()
    finally:
        logger.remove(sink)
    return messages


# -- prompt and task settings -----------------------------------------------------------------------------


def test_the_prompt_is_v1s_byte_for_byte() -> None:
    assert hashlib.sha256(V1_PROMPT.encode("utf-8")).hexdigest() == V1_PROMPT_SHA256 and len(V1_PROMPT) == 397
    assert v1.template_sha256() == V1_PROMPT_SHA256
    signature = "def solution(a):\n    pass\n"
    assert v1.build_prompt(signature) == V1_PROMPT.replace("{signature}", signature)
    assert v1.build_prompt(signature).endswith("def solution(a):\n    pass\n\n```\n")  # the blank line before the fence


def test_generation_settings_of_the_official_example_models() -> None:
    greedy, sampled = task_config("humaneval_v1"), task_config("humaneval_v1_pass10")
    for config in (greedy, sampled):
        kwargs = config["generation_kwargs"]
        assert kwargs["max_new_tokens"] == 1024 and kwargs["until"] == ["\n```\n"] and kwargs["top_p"] == 0.95
        assert config["reasoning_tags"] == "none" and config["strip_responses"] is False
        assert "top_k" not in kwargs and "seed" not in kwargs
    assert greedy["generation_kwargs"]["temperature"] == 0 and greedy.get("repeats", 1) == 1 and "filter_list" not in greedy
    assert sampled["generation_kwargs"]["temperature"] == 0.8 and sampled["generation_kwargs"]["do_sample"] is True
    assert sampled["repeats"] == 20
    assert sampled["filter_list"] == [{"name": "n20", "filter": [{"function": "take_first_k", "k": 20}]}]
    assert [m["metric"] for m in greedy["metric_list"]] == ["pass@1", "pass@1_unrounded", "parse_success_rate", "parse_success_rate_unrounded"]
    assert [m["metric"] for m in sampled["metric_list"]] == ["pass@10", "pass@10_unrounded", "parse_success_rate", "parse_success_rate_unrounded"]


def test_the_tasks_are_registered_and_collide_with_no_group() -> None:
    import os

    from lmms_eval.tasks import TaskManager

    from lmms_tasks import tasks_path

    manager = TaskManager("ERROR", include_path=os.path.join(tasks_path(), "humaneval_v"), include_defaults=False)
    assert {"humaneval_v1", "humaneval_v1_pass10"} <= set(manager.all_tasks)
    assert not {"humaneval_v1", "humaneval_v1_pass10"} & set(manager.all_groups)


# -- data -------------------------------------------------------------------------------------------------


def test_documents_prompt_and_image(v1_data: fx.FixtureSet) -> None:
    rows = {r["qid"]: r for r in v1_data.records[fx.RECORDS_KEY]}
    found = docs("humaneval_v1")
    assert [d["qid"] for d in found] == list(rows)
    first = found[0]
    assert (first["hev_task"], first["hev_setting"]) == ("humaneval_v1", "v1")
    messages = hooks.doc_to_messages(first)
    assert [p["type"] for p in messages[0]["content"]] == ["image", "text"]  # one user turn, image first
    assert messages[0]["content"][0]["url"].size == (96, 96)
    assert messages[0]["content"][1]["text"] == V1_PROMPT.replace("{signature}", rows["q1"]["function_signature"])
    assert hooks.doc_to_visual(first) == [first["image"]]
    assert [d["hev_task"] for d in docs("humaneval_v1_pass10")] == ["humaneval_v1_pass10"] * 4


def test_a_count_other_than_108_is_warned_about(v1_data: fx.FixtureSet) -> None:
    messages = warnings_during(lambda: docs("humaneval_v1"))
    assert any("holds 4 unique qids; the v1 release has 108" in m for m in messages), messages


def test_refused_without_opt_in(v1_data: fx.FixtureSet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION")
    with pytest.raises(execution.CodeExecutionNotAllowed, match="^humaneval_v1_pass10: .*HUMANEVAL_V_ALLOW_CODE_EXECUTION=1"):
        docs("humaneval_v1_pass10")


def test_v2_data_is_refused_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v1_data: fx.FixtureSet) -> None:
    v2 = v2_fx.write(tmp_path / "v2", qids={"q1", "q2"})
    monkeypatch.setenv("HUMANEVAL_V1_DATA", v2.env["HUMANEVAL_V_DATA"])
    with pytest.raises(DataError, match=r"holds the v2 release \(column 'diagram', 2 rows\), not v1 \(column 'image', 108 tasks\)"):
        docs("humaneval_v1")


def test_duplicate_qids_and_a_missing_image_are_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v1_data: fx.FixtureSet) -> None:
    rows = fx.records()
    dup = fx.write(tmp_path / "dup", rows=[rows[0], {**rows[1], "qid": rows[0]["qid"]}])
    monkeypatch.setenv("HUMANEVAL_V1_DATA", dup.env["HUMANEVAL_V1_DATA"])
    with pytest.raises(DataError, match="q1"):
        docs("humaneval_v1")
    import datasets

    no_image = tmp_path / "no_image" / "data"
    no_image.mkdir(parents=True)
    datasets.Dataset.from_list(rows).to_parquet(str(no_image / "test-00000-of-00001.parquet"))
    monkeypatch.setenv("HUMANEVAL_V1_DATA", str(no_image.parent))
    with pytest.raises(DataError, match="column 'image' is missing"):
        docs("humaneval_v1")


# -- extraction: every row of the table ------------------------------------------------------------------


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_post_process_equals_official_v1(case: cases.Case) -> None:
    completion, program = post_process(case.reply, case.signature, case.test_script)
    assert completion == case.official.completion
    assert program == case.program(case.official.completion)


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_the_stop_string_cut_equals_the_official_models(case: cases.Case) -> None:
    stopped = stop_at_fence(case.reply)
    assert (stopped != case.reply) == (case.stopped is not None) == ("\n```\n" in case.reply)
    assert "\n```\n" not in stopped and case.reply.startswith(stopped)
    assert post_process(stopped, case.signature, case.test_script)[0] == case.after_stop().completion


def test_every_v1_branch_is_in_the_table() -> None:
    branches = {c.branch.split("+")[0] for c in cases.CASES}
    assert branches == {"python_x1", "python_xN", "python_space", "bare_x1", "bare_x2plus", "no_fence"}
    extras = {part for c in cases.CASES for part in c.branch.split("+")[1:]}
    assert extras == {"ast", "parse_error", "body_only"}
    assert sum(c.official.gated for c in cases.CASES) >= 10 and any(c.official.result == "timed out" for c in cases.CASES)
    assert any(c.official.result.startswith("failed: ") and c.official.result != "failed: " for c in cases.CASES)


@pytest.mark.parametrize(
    "reply,content",
    [
        ("```python\nA\n```\n```python\nB\n```", "\nA\n\nB\n"),  # v1 concatenates (v2 would take B alone)
        ("x```\n```python\nA\n```python\nB", "x"),  # the preamble with one fence counts; unclosed pieces do not
        ("```python\nA\n```python\nB", ""),  # nothing closed: empty (v2: the stub)
        ("```python\nA\n```\nout\n```\n```python\nB\n```", "\nB\n"),  # a piece with 3 fences is dropped whole
        ("``` python\nA\n```\n``` python\nB\n```", "\nA\n"),  # with a space: the first block only
        ("A\n```", "A\n"),
        ("```py\nA\n```\n```\nB\n```", "py\nA\n"),
        ("no fence", "    pass"),
    ],
)
def test_select_content(reply: str, content: str) -> None:
    assert select_content(reply) == content


# -- gate and execution: v1's result strings -------------------------------------------------------------


@pytest.mark.parametrize("level", sandbox.LEVELS)
def test_gate_and_execution_equal_the_official_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unhurried: execution.Limits, level: str) -> None:
    """Every table program (as given, and cut at the stop string) through the v1 tasks' own batch: pylint
    3.3.4 gate, then the sandbox with the official 2 s; each result is the official string, at each isolation level."""
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    runs = [(case, case.official) for case in cases.CASES] + [(case, case.stopped) for case in cases.CASES if case.stopped]
    assert len(runs) == len(cases.CASES) + sum(c.stopped is not None for c in cases.CASES)
    # No verdict may depend on how busy the machine is (issue 43: under load a passing program ran past the
    # official 2 s and read "timed out"). The official bound stays on the programs whose official result IS the
    # timeout (an endless loop reaches any bound, however slow the machine); every other program gets a bound
    # no correct run reaches, so a slow start or a slow test script cannot turn its verdict into a timeout.
    endless = [(case, verdict) for case, verdict in runs if verdict.result == "timed out"]
    finite = [(case, verdict) for case, verdict in runs if verdict.result != "timed out"]
    assert endless and finite  # both halves of the table are exercised
    mismatches = []
    for part, limits in ((endless, execution.OFFICIAL_LIMITS), (finite, unhurried)):
        programs = [case.program(verdict.completion) for case, verdict in part]
        batch = execution.evaluate_programs("humaneval_v1", programs, limits=limits, cache_dir=tmp_path / "cache", progress=False, wording=execution.V1, level=level)
        assert batch.summary["sandbox"] == level
        assert all(got.confinement[0] == f"level:{level}" for got in batch.verdicts if not got.gated)
        for (case, verdict), got in zip(part, batch.verdicts):
            if (cases.comparable(got.result), got.passed, got.gated) != (cases.comparable(case.result_here(verdict)), verdict.passed, verdict.gated):
                mismatches.append((case.name, got.result, case.result_here(verdict)))
    assert mismatches == []


def test_v1_result_wording() -> None:
    def outcome(status: str, message: str, exception: str = "") -> ExecResult:
        return ExecResult(status=status, message=message, passed=status == "passed", exception=exception)

    v1_words = execution.V1  # the v1 tasks' items carry setting v1 (their YAML declares it): metrics.score_items picks V1
    assert v1_words.executed(outcome("passed", "passed")) == "passed"
    assert v1_words.executed(outcome("timeout", "Test Case Execution Time Out (> 2 seconds)")) == "timed out"
    assert v1_words.executed(outcome("failed", "", "AssertionError")) == "failed: "
    assert v1_words.executed(outcome("failed", "0", "SystemExit")) == "failed: 0"
    # officially a child that leaves no result (os._exit, a kill) is recorded as "timed out"
    assert v1_words.executed(outcome("failed", "program process exited with code 0 before finishing")) == "timed out"
    assert v1_words.executed(outcome("error", "sandbox could not start: x")) == "sandbox could not start: x"  # not a verdict
    assert execution.V2.executed(outcome("failed", "boom", "ValueError")) == "boom"
    assert (execution.V1.gate_prefix, execution.V2.gate_prefix) == ("pylint fail:\n", "Pylint syntax check failed:\n")


# -- hooks: the stop cut, pass@10 and the parse rate ------------------------------------------------------


def _doc(task: str, qid: str, signature: str, test: str) -> dict[str, Any]:
    """A document as the v1 loader stamps it (process_results reads nothing else)."""
    return {"qid": qid, "function_signature": signature, "test_script": test, "hev_task": task, "hev_setting": "v1", "hev_k": task_config(task)["dataset_kwargs"]["k"], "hev_sample_index": 0}


def test_process_results_scores_the_reply_as_received_and_marks_the_stop_string() -> None:
    case = cases.case_for("pyN_helper_then_solution")
    item = hooks.process_results(_doc("humaneval_v1", "x", case.signature, case.test_script), [case.reply])["pass@1"]
    assert item["predictions"] == [case.reply] and item["contains_stop"] == [True]
    assert item["completions"] == [case.official.completion] and item["programs"] == [case.program(case.official.completion)]
    assert set(hooks.process_results(_doc("humaneval_v1_pass10", "x", case.signature, case.test_script), [case.reply])) == {
        "pass@10",
        "pass@10_unrounded",
        "parse_success_rate",
        "parse_success_rate_unrounded",
    }


def test_pass_at_10_and_pass_at_1_of_twenty_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three tasks with 1, 5 and 13 right samples of 20 (the official end-to-end example: pass@10 82.8)."""
    from math import comb

    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec"))
    add = cases.TASKS["t_add"]
    items = []
    for qid, right in (("a", 1), ("b", 5), ("c", 13)):
        replies = ["```python\ndef solution(a, b):\n    return a + b\n```"] * right + ["```python\ndef solution(a, b):\n    return a - b\n```"] * (20 - right)
        items.append(hooks.process_results(_doc("humaneval_v1_pass10", qid, *add), replies)["pass@10"])
    items = json.loads(json.dumps(items))  # as `score` reads them back
    by_hand = [1 - comb(20 - c, 10) / comb(20, 10) for c in (1, 5, 13)]  # 0.5, 0.98375..., 1.0
    args = type("Args", (), {"output_path": str(tmp_path / "out")})()
    items = [d["pass@10"] for d in hooks.score_batch([{"pass@10": item} for item in items], args=args)]  # executed once, here
    assert hooks.agg_pass_at_k(items) == 82.8 == round(100 * sum(by_hand) / 3, 1)
    assert hooks.agg_pass_at_k_unrounded(items) == pytest.approx(100 * sum(by_hand) / 3, abs=1e-9)
    # the official example's pass@1 of the same samples, from the verdicts the batch step wrote; the task reports
    # pass@10 only, so its items carry no pass@1 estimate for an aggregation to read
    assert pass_at_k_score({i["qid"]: i["passed"] for i in items}, 1) == 31.7 == round(100 * (1 + 5 + 13) / 60, 1)
    assert {i["k"] for i in items} == {10}  # the k its YAML declares, which agg_pass_at_k reads
    with pytest.raises(ItemError, match="pass@1: no item carries"):
        metrics.pass_at_from(items, 1)
    assert hooks.agg_parse_success_rate(items) == 100.0
    records = [json.loads(line) for line in (next((tmp_path / "out").glob("records_*")) / "executions" / "humaneval_v1_pass10.jsonl").read_text().splitlines()]
    assert len(records) == 60 and {r["result"] for r in records} == {"passed", "failed: "}


def test_pass_at_10_standard_error_is_that_of_the_per_task_pass_at_10(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Samples where pass@1 and pass@10 differ per task (1, 5 and 13 right of 20): each metric's standard error
    is SD(per-task value x100, ddof=1) / sqrt(tasks) of its own per-task values, as `score` reports it."""
    import statistics
    from math import comb, sqrt

    from lmms_tasks.utils.commands.score import aggregate

    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec"))
    add, samples = cases.TASKS["t_add"], []
    for doc_id, (qid, right) in enumerate((("a", 1), ("b", 5), ("c", 13))):
        replies = ["```python\ndef solution(a, b):\n    return a + b\n```"] * right + ["```python\ndef solution(a, b):\n    return a - b\n```"] * (20 - right)
        samples.append({"doc_id": doc_id, **hooks.process_results(_doc("humaneval_v1_pass10", qid, *add), replies)})
    samples = json.loads(json.dumps(samples))  # as `score` reads them back
    results = aggregate("humaneval_v1_pass10", samples, source="by hand", output_dir=tmp_path / "out")["results"]

    def stderr(values: list[float]) -> float:
        return statistics.stdev(values) / sqrt(len(values))

    pass_at_10 = [100 * (1 - comb(20 - c, 10) / comb(20, 10)) for c in (1, 5, 13)]  # 50, 98.37..., 100
    pass_at_1 = [100 * c / 20 for c in (1, 5, 13)]  # 5, 25, 65
    assert stderr(pass_at_10) != pytest.approx(stderr(pass_at_1))  # the two differ here
    by_name = {key.split(",")[0]: value for key, value in results.items()}
    assert by_name["pass@10_stderr_clt"] == pytest.approx(stderr(pass_at_10))  # as lmms-eval computes it in a run
    assert by_name["pass@10_unrounded_stderr_clt"] == pytest.approx(stderr(pass_at_10))
    assert "pass@10_stderr" not in by_name  # one route


def test_parse_rate_counts_the_gated_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unhurried: object) -> None:
    """The official parse-rate example: four tasks x two replies, three stopped by pylint -> 62.5 (and the
    per-sample results as the official run recorded them)."""
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec"))
    replies = {
        "t_add": ["```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```", "```python\ndef solution(a, b)\n    return a + b\n```"],
        "t_max": ["```python\ndef solution(nums):\n    return max(nums)\n```", "no code at all"],
        "t_norm": ["```python\nimport cv2_missing_mod\ndef solution(x, y):\n    return 0\n```", "```python\nK = 1\ndef solution(x, y):\n    return x * K\n```"],
        "t_rev": ["```python\ndef solution(s):\n    return s[::-1]\n```", "```python\ndef solution(s):\n    return s\n```"],
    }
    official = {
        "t_add": ["passed", "pylint fail:\nParsing failed: 'expected ':' (<file>, line 8)'"],
        "t_max": ["passed", "failed: "],
        "t_norm": ["pylint fail:\nUnable to import 'cv2_missing_mod'", "pylint fail:\nUndefined variable 'K'"],
        "t_rev": ["passed", "failed: "],
    }
    items = [hooks.process_results(_doc("humaneval_v1_pass10", qid, *cases.TASKS[qid]), found)["pass@10"] for qid, found in replies.items()]
    args = type("Args", (), {"output_path": str(tmp_path / "out")})()
    items = [d["pass@10"] for d in hooks.score_batch([{"pass@10": item} for item in items], args=args)]
    assert hooks.agg_parse_success_rate(items) == 62.5
    assert hooks.agg_parse_success_rate_unrounded(items) == pytest.approx(100 * (1 - 3 / 8))
    assert hooks.agg_pass_at_k(items) is None  # two samples per task: officially `Pass@10: {}`
    records = [json.loads(line) for line in (next((tmp_path / "out").glob("records_*")) / "executions" / "humaneval_v1_pass10.jsonl").read_text().splitlines()]
    got = {qid: [cases.comparable(r["result"]) for r in records if r["qid"] == qid] for qid in replies}
    assert got == official
