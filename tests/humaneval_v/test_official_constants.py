"""The official execution constants as the tasks themselves use them (spec 2.6, H8): the whole program gets
2.0 s of wall clock, a program that runs past it fails with the official message, one that finishes inside
it passes. Exercised through the hooks' own aggregation, not through a limit the test chooses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmms_tasks.utils.humaneval_v import execution, hooks
from lmms_tasks.utils.services.taskconfig import task_config
from lmms_tasks.utils.testing.fixtures import humaneval_v as fx


def test_official_timeout_constant() -> None:
    assert execution.OFFICIAL_LIMITS.timeout == 2.0


def test_the_tasks_run_programs_under_the_official_two_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = fx.write(tmp_path / "data", qids={"q2-2"})
    for key, value in data.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(tmp_path / "exec"))
    (doc,) = hooks.load_subtask(**task_config("humaneval_v_v2c")["dataset_kwargs"])["test"]
    body = "    total = 0\n    for i in range(1, n + 1):\n        total += i\n    return total\n"

    def reply(pause: float) -> str:
        return f"```python\nimport time\ndef solution(n: int) -> int:\n    time.sleep({pause})\n{body}```"

    # the task's test script calls solution 4 times: 4 x 0.25 s passes, 4 x 0.7 s = 2.8 s fails with the
    # official message naming the limit
    inside = hooks.process_results(doc, [reply(0.25)])["pass@1"]
    past = hooks.process_results(doc, [reply(0.7)])["pass@1"]
    args = type("Args", (), {"output_path": str(tmp_path / "out")})()
    assert hooks.agg_pass_at_k([hooks.score_batch([{"pass@1": inside}], args=args)[0]["pass@1"]]) == 100.0
    assert hooks.agg_pass_at_k([hooks.score_batch([{"pass@1": past}], args=args)[0]["pass@1"]]) == 0.0
    (record,) = [json.loads(line) for line in (next((tmp_path / "out").glob("records_*")) / "executions" / "humaneval_v_v2c.jsonl").read_text().splitlines()]
    assert record["result"] == "Test Case Execution Time Out (> 2 seconds)", record
