"""Each task is scored once: the batch step computes what the aggregations need (per-task pass@k, the parse
counts) and writes it into the items; the aggregations read it (no Scored rebuilt, no item re-validated, no
pass@k recomputed). Counted over one simulated lmms-eval aggregation: the batch step, then every aggregation
of the task's metric_list, as lmms-eval 0.7.3 calls them. Before issue 40: 5 Scored built and 5 validations
per task (the batch step and 4 aggregations) and 6 pass@k computations per HumanEval-V task."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.humaneval_v import hooks, metrics, passk
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


def _metric_list(task: str) -> list[dict[str, Any]]:
    """The task's metric_list as lmms-eval loads it (the `!function` aggregations resolved)."""
    from lmms_eval.utils import load_yaml_config

    return load_yaml_config(yaml_path=str(Path(tasks_path()) / "humaneval_v" / f"{task}.yaml"), mode="full")["metric_list"]


@pytest.mark.parametrize("task", ["humaneval_v_v2c", "humaneval_v_v2c_pass3"])
def test_a_task_is_scored_once_and_its_aggregations_rebuild_nothing(
    task: str, data: fx.FixtureSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count_calls: Callable[..., None]
) -> None:
    rows = {r["qid"]: r for r in data.records[fx.RECORDS_KEY]}
    documents = list(hooks.dataset_for(task)()["test"])
    k = hooks.k_of(task)
    replies = {q: f"```python\n{r['ground_truth_solution']}```" for q, r in rows.items()}
    items = [hooks.process_results(d, [replies[d["qid"]]] * (1 if k == 1 else 6)) for d in documents]
    entries = _metric_list(task)
    assert {e["metric"] for e in entries} == set(hooks.metric_names(task)) == set(items[0])
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
