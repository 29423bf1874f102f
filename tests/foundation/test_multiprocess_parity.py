"""Same numbers on 1 or N processes: the whole demo (every task and group of every benchmark, with the
judge and the sandbox) once in one process and once under `accelerate launch --num_processes 2` on CPU.
lmms-eval strides documents across ranks and gathers them unordered, so this catches any metric that
groups by position, any judging or execution done per rank, and any rank that hangs."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.testing.demo import DEMO_MODELS, DemoOutcome, run_demo
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, RunResult

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _comparable(value: object) -> object:
    """Judge summaries name the stand-in server's ephemeral port, which differs between the two runs."""
    return re.sub(r"@127\.0\.0\.1:\d+", "@127.0.0.1:PORT", value) if isinstance(value, str) else value


def _same(a: object, b: object) -> bool:
    """Numbers equal to float precision (summation order differs with the gather order); all else exactly."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == pytest.approx(b, rel=1e-9, abs=1e-9)
    return a == b


def _metrics(runs: list[RunResult]) -> dict[tuple[str, str], object]:
    """Every metric of every task and group and its standard errors, keyed by (task or group,
    "metric,filter"). Our standard errors are analytic (no bootstrap), so they do not depend on the
    gathered item order."""
    found: dict[tuple[str, str], object] = {}
    for run in runs:
        for section in ("results", "groups"):
            for name, values in run.results.get(section, {}).items():
                for key, value in values.items():
                    if "," in key:
                        found[(name, key)] = _comparable(value)
    return found


def _unit_scores(runs: list[RunResult]) -> dict[tuple[str, object], object]:
    """(task, doc_id) -> the unit score the batch step wrote into that document's logged sample."""
    return {(task, s["doc_id"]): s["unit_score"] for run in runs for task, samples in run.samples.items() for s in samples if "unit_score" in s}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory, demo_two_models: tuple[Path, DemoOutcome]) -> dict[int, DemoOutcome]:
    """1 process: the session's demo (its first model is what this compares); 2 processes: the same demo, one model."""
    return {1: demo_two_models[1], 2: run_demo(list(BENCHMARKS), Path(tmp_path_factory.mktemp("np2")), num_processes=2, quiet=True)}


def test_every_metric_is_identical_on_one_and_two_processes(outcomes: dict[int, DemoOutcome]) -> None:
    single, double = _metrics(outcomes[1].runs_of(DEMO_MODELS[0])), _metrics(outcomes[2].runs)
    assert single and set(single) == set(double)
    differing = {key: (single[key], double[key]) for key in single if not _same(single[key], double[key])}
    assert not differing


def test_the_samples_carry_the_same_unit_scores_on_two_processes(outcomes: dict[int, DemoOutcome]) -> None:
    """Rank 0 scores the gathered documents and writes the scores into the gathered logged samples (the
    compat layer lines them up by doc id on lmms-eval 0.7.3): same documents, same scores."""
    single, double = _unit_scores(outcomes[1].runs_of(DEMO_MODELS[0])), _unit_scores(outcomes[2].runs)
    assert single and single.keys() == double.keys()
    assert all(_same(single[key], double[key]) for key in single)


def test_two_process_run_really_used_two_ranks(outcomes: dict[int, DemoOutcome]) -> None:
    worlds = {run.results.get("config", {}).get("world_size", None) for run in outcomes[2].runs}
    logs = "".join(run.stdout + run.stderr for run in outcomes[2].runs)
    assert "Running on rank 1" in logs or worlds == {2}, logs[-3000:]


def test_judge_work_is_done_once_per_item(outcomes: dict[int, DemoOutcome]) -> None:
    judged = {}
    for n, outcome in outcomes.items():
        # answered requests only: the second model's scripted HTTP 500 is retried, by design
        judged[n] = [r.content_key for r in outcome.requests if r.model == STAND_IN_JUDGE and r.status == 200]
        assert judged[n], f"no judge requests in the {n}-process run"
        assert max(Counter(judged[n]).values()) == 1, f"{n}-process run sent a judge request twice"
    # the 2-process run judged exactly what the 1-process run judged for the same model (the 1-process demo
    # also judged its second model's different answers)
    assert set(judged[2]) <= set(judged[1]) and len(judged[2]) < len(judged[1])
