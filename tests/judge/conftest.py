"""Shared fixtures for the judge tests: a stand-in judge server, a fast config, a clean memo."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.testing.openai_server import StandInServer

JUDGE_ENV = ("MODEL", "BASE_URL", "API_KEY", "API_VERSION", "CONCURRENCY", "TIMEOUT", "MAX_RETRIES", "BACKOFF", "BACKOFF_MAX", "CACHE_DIR", "PROGRESS", "PREFLIGHT")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No judge setting leaks in from the developer's environment; no batch is memoized across tests."""
    for suffix in JUDGE_ENV:
        monkeypatch.delenv(judge.ENV_PREFIX + suffix, raising=False)
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    judge.clear_memo()
    yield
    judge.clear_memo()


@pytest.fixture
def server() -> Iterator[StandInServer]:
    with StandInServer(default_reply=lambda r: f"<score>1/2</score> for {r.text[-12:]}", hang_seconds=10.0) as s:
        yield s


@pytest.fixture
def fast_config(server: StandInServer, tmp_path: Path) -> judge.JudgeConfig:
    """Short timeout and backoff so fault tests take seconds; the cache in the test's tmp dir."""
    return judge.JudgeConfig(
        model="stand-in-judge",
        base_url=server.base_url,
        api_key="EMPTY",
        concurrency=8,
        timeout=2.5,  # generous for a loaded CI box; the hang fault outlasts it (hang_seconds=10)
        max_retries=3,
        backoff=0.01,
        backoff_max=1.0,
        cache_dir=str(tmp_path / "cache"),
        progress=False,
        params={"max_tokens": 64},
    )



MINI_TASK = "lmmstasks_mini_judged"

MINI_YAML = """\
task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_target: answer
process_results: !function utils.process_results
process_results_batch: !function utils.score_batch
generation_kwargs:
  max_new_tokens: 32
  until: []
metric_list:
  - metric: judge_score
    aggregation: !function utils.aggregate_score
    higher_is_better: true
  - metric: judge_failures
    aggregation: !function utils.aggregate_failures
    higher_is_better: false
  - metric: judge_info
    aggregation: !function utils.aggregate_judge_info
    higher_is_better: true
  - metric: response_words
    aggregation: mean
    higher_is_better: true
metadata:
  version: 0.1
"""

MINI_UTILS = '''\
"""A minimal judged task: the judge scores each response K/N; failures and unparseable replies score 0.
The batch step judges every response once, by the judge its task config names, and writes the verdicts
into the items; the aggregations read them."""

import re

from lmms_tasks.utils import compat
from lmms_tasks.utils.compat import batch_scoring, task_config
from lmms_tasks.utils.services.records import run_dir
from lmms_tasks.utils.services.data import metadata_of
from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig, JudgeRequest, judge_batch, judge_summary_metric

# a stock lmms-eval 0.7.3 learns process_results_batch (patch 0006) from these two backports; nothing else of
# ours is installed (a third-party task's run keeps lmms-eval's own exit status)
if not batch_scoring.present():
    compat.install(task_config)
    compat.install(batch_scoring)

TASK = "{task}"
PROMPT = "JUDGE THIS. Question: {{q}} Response: {{r}}"
JUDGED = ("judge_score", "judge_failures", "judge_info")


def doc_to_visual(doc):
    return []


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["question"]


def process_results(doc, results):
    value = {{"task": TASK, "doc_id": doc["id"], "question": doc["question"], "response": results[0]}}
    return {{"judge_score": value, "judge_failures": value, "judge_info": value, "response_words": len(results[0].split())}}


def parse(content):
    found = re.findall(r"<score>(\\d+)/(\\d+)</score>", content)
    return int(found[0][0]) / int(found[0][1]) if len(found) == 1 else None


def score_batch(results, args=None, config=None):
    metadata = metadata_of(config)
    judge = JudgeConfig.for_task(TASK, metadata, default_model="gpt-5-mini", defaults={{"max_tokens": 40}})
    items = [r["judge_score"] for r in results]
    requests = [
        JudgeRequest(key=str(it["doc_id"]), messages=[{{"role": "user", "content": PROMPT.format(q=it["question"], r=it["response"])}}],
                     meta={{"doc_id": it["doc_id"]}})
        for it in items
    ]
    batch = judge_batch(TASK, requests, parse, config=judge, output_dir=run_dir(args, metadata), prompt_sha256="0" * 64, metadata=metadata)
    info = judge_summary_metric(batch)
    scored = []
    for result in results:
        outcome = batch.outcomes[str(result["judge_score"]["doc_id"])]
        verdict = {{"parsed": outcome.parsed, "failed": outcome.error is not None, "judge_line": info}}
        scored.append({{**result, **{{metric: {{**result[metric], **verdict}} for metric in JUDGED if metric in result}}}})
    return scored


def aggregate_score(items, args=None):
    return sum(it["parsed"] or 0.0 for it in items) / len(items)


def aggregate_failures(items, args=None):
    return sum(1 for it in items if it["failed"])


def aggregate_judge_info(items, args=None):
    return items[0]["judge_line"]
'''


def write_mini_task(root: Path, questions: list[str], task: str = MINI_TASK, folder_name: str | None = None) -> Path:
    """A judged task in an include root of its own (in folder `folder_name`, default the task's name): YAML +
    thin utils.py calling judge_batch in aggregation."""
    import json

    folder = root / (folder_name or task)
    folder.mkdir(parents=True, exist_ok=True)
    docs = folder / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "question": q, "answer": "-"}) + "\n" for i, q in enumerate(questions)), encoding="utf-8")
    (folder / f"{task}.yaml").write_text(MINI_YAML.format(task=task, docs=docs), encoding="utf-8")
    (folder / "utils.py").write_text(MINI_UTILS.format(task=task), encoding="utf-8")
    return root


@pytest.fixture
def mini_task_root(tmp_path: Path) -> Path:
    return write_mini_task(tmp_path / "include_root", ["question zero", "question one", "question two", "question three"])


@pytest.fixture
def mini_task() -> str:
    return MINI_TASK


@pytest.fixture
def mini_task_writer() -> Callable[..., Path]:
    """`write_mini_task(root, questions, task=..., folder_name=...)`."""
    return write_mini_task


JUDGE_REPLIES = {"question zero": "<score>2/2</score>", "question one": "Met 1 of 2. <score>1/2</score>", "question two": "no score tag"}


def script_mini_judge(server: StandInServer, judge_models: tuple[str, ...] = ("stand-in-judge", "other-judge")) -> None:
    """Judge replies keyed on the question inside the judge prompt; 'question three' always gets HTTP 500."""
    for question, reply in JUDGE_REPLIES.items():
        server.script(lambda r, q=question: r.model in judge_models and f"Question: {q} " in r.text, reply)
    server.fault(lambda r: r.model in judge_models and "Question: question three " in r.text, "500", times=None)
    server.script(lambda r: r.model not in judge_models, lambda r: "answer to " + r.text[-20:])


@pytest.fixture
def mini_server() -> Iterator[StandInServer]:
    with StandInServer(default_reply="unscripted") as s:
        script_mini_judge(s)
        yield s


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, mini_server: StandInServer, tmp_path: Path) -> dict[str, str]:
    """The judge settings of a shell that judges with stand-in-judge at `mini_server` (one retry, no waits)."""
    env = {
        "LMMS_TASKS_JUDGE_BASE_URL": mini_server.base_url,
        "LMMS_TASKS_JUDGE_API_KEY": "EMPTY",
        "LMMS_TASKS_JUDGE_MODEL": "stand-in-judge",
        "LMMS_TASKS_JUDGE_CACHE_DIR": str(tmp_path / "judge_cache"),
        "LMMS_TASKS_JUDGE_MAX_RETRIES": "1",
        "LMMS_TASKS_JUDGE_BACKOFF": "0.01",
        "LMMS_TASKS_JUDGE_PROGRESS": "0",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env
