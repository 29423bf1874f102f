"""Each HAERAE-Vision task is scored once: the batch step judges the task, builds its scores (`ScoredTask`)
after checking its items once, computes its category means, and writes what every aggregation needs into
the items; the aggregations lmms-eval then calls (every entry of the task's `metric_list`) build, check and
judge nothing. Counted over one simulated aggregation step, as lmms-eval 0.7.3 runs it on rank 0. Before issue
40: 4 ScoredTask built and 4 validations of every item per task (the batch step and 3 aggregations)."""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.haerae_vision import hooks, metrics
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.testing.openai_server import StandInServer

JUDGE = "stand-in-judge"
ITEMS = [(1, "게임", "이거 무슨 게임?", "<score>1/2</score>"), (2, "게임", "어떻게 깨요?", "<score>2/2</score>"), (3, "과학", "왜 이래요?", "점수 없음")]


@pytest.fixture
def judge_env(stand_in: StandInServer, hermetic_env: Path, monkeypatch: pytest.MonkeyPatch) -> StandInServer:
    for key, value in {"BASE_URL": stand_in.base_url, "API_KEY": "EMPTY", "MODEL": JUDGE, "MAX_RETRIES": "1", "BACKOFF": "0.01", "PROGRESS": "0"}.items():
        monkeypatch.setenv(f"LMMS_TASKS_JUDGE_{key}", value)
    judge.clear_memo()
    for _, _, question, reply in ITEMS:
        stand_in.script(lambda r, q=question: r.model == JUDGE and f"[INPUT]\n{q}\n" in r.text, reply)
    yield stand_in
    judge.clear_memo()


def _metric_list() -> list[dict[str, Any]]:
    """The task's metric_list as lmms-eval loads it (the `!function` aggregations resolved)."""
    from lmms_eval.utils import load_yaml_config

    return load_yaml_config(yaml_path=str(Path(tasks_path()) / "haerae_vision" / "haerae_vision_original.yaml"), mode="full")["metric_list"]


def test_the_task_is_judged_scored_and_checked_once_and_the_aggregations_read_the_items(
    judge_env: StandInServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count_calls: Callable[..., None]
) -> None:
    docs = [
        {"hv_task": "haerae_vision_original", "hv_variant": "original", "question_idx": q, "category": c, "question_used": text, "checklist_text": "['a' 'b']"}
        for q, c, text, _ in ITEMS
    ]
    results = json.loads(json.dumps([hooks.process_results(doc, ["답"]) for doc in docs], ensure_ascii=False))  # as gathered
    entries = _metric_list()
    assert {e["metric"] for e in entries} == set(metrics.METRICS) == set(results[0])
    counts: collections.Counter = collections.Counter()
    count_calls(counts, "ScoredTask", metrics.ScoredTask, "__init__")
    count_calls(counts, "validation", metrics, "_validated")
    count_calls(counts, "category_means", metrics.ScoredTask, "category_means")
    count_calls(counts, "judge_batch", judge, "judge_batch")
    scored = hooks.score_batch(results, args=SimpleNamespace(output_path=str(tmp_path / "out")))
    batch_counts = dict(counts)
    values = {e["metric"]: e["aggregation"]([r[e["metric"]] for r in scored]) for e in entries}
    print(f"after the batch step: {batch_counts}; after every aggregation: {dict(counts)}")
    assert batch_counts == {"ScoredTask": 1, "validation": 1, "category_means": 1, "judge_batch": 1}
    assert dict(counts) == batch_counts  # the aggregations rebuilt, re-checked and re-judged nothing
    assert values == {
        "haerae_vision_score": pytest.approx((0.5 + 1.0 + 0.0) / 3),
        "judge_failures": 0,
        "judge_unparsed": 1,
        "category_scores": pytest.approx({"게임": 0.75, "과학": 0.0}),
        "item_scores": pytest.approx({"1": 0.5, "2": 1.0, "3": 0.0}),
    }
    assert len(judge_env.requests_for(model=JUDGE)) == 3


def test_a_samples_file_saved_before_the_breakdown_metrics_is_still_scored_whole(judge_env: StandInServer, tmp_path: Path) -> None:
    """`score` on a samples file written before `category_scores` / `item_scores` were metrics: the batch step
    adds their items from the document's ids, so every metric is computed and none is reported missing."""
    from lmms_tasks.utils.commands.score import aggregate

    docs = [
        {"hv_task": "haerae_vision_original", "hv_variant": "original", "question_idx": q, "category": c, "question_used": text, "checklist_text": "['a' 'b']"}
        for q, c, text, _ in ITEMS
    ]
    old = [{"doc_id": i, **{m: v for m, v in hooks.process_results(doc, ["답"]).items() if m not in metrics.BREAKDOWNS}} for i, doc in enumerate(docs)]
    report = aggregate("haerae_vision_original", json.loads(json.dumps(old, ensure_ascii=False)), source="old samples", output_dir=tmp_path / "out")
    assert report["errors"] == {}
    assert report["results"]["category_scores,none"] == pytest.approx({"게임": 0.75, "과학": 0.0})
    assert report["results"]["item_scores,none"] == pytest.approx({"1": 0.5, "2": 1.0, "3": 0.0})
