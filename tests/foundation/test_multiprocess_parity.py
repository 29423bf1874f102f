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
from lmms_tasks.utils.testing.demo import DemoOutcome, run_demo
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _comparable(value: object) -> object:
    """Judge summaries name the stand-in server's ephemeral port, which differs between the two runs."""
    return re.sub(r"@127\.0\.0\.1:\d+", "@127.0.0.1:PORT", value) if isinstance(value, str) else value


def _same(a: object, b: object) -> bool:
    """Numbers equal to float precision (summation order differs with the gather order); all else exactly."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == pytest.approx(b, rel=1e-9, abs=1e-9)
    return a == b


def _metrics(outcome: DemoOutcome) -> dict[tuple[str, str], object]:
    """Every metric of every task and group, keyed by (task or group, "metric,filter"); stderrs excluded
    (bootstrap resampling depends on the gathered item order, which differs by design)."""
    found: dict[tuple[str, str], object] = {}
    for run in outcome.runs:
        for section in ("results", "groups"):
            for name, values in run.results.get(section, {}).items():
                for key, value in values.items():
                    if "," in key and "_stderr" not in key:
                        found[(name, key)] = _comparable(value)
    return found


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, DemoOutcome]:
    return {n: run_demo(list(BENCHMARKS), Path(tmp_path_factory.mktemp(f"np{n}")), num_processes=n, quiet=True) for n in (1, 2)}


def test_every_metric_is_identical_on_one_and_two_processes(outcomes: dict[int, DemoOutcome]) -> None:
    single, double = _metrics(outcomes[1]), _metrics(outcomes[2])
    assert single and set(single) == set(double)
    differing = {key: (single[key], double[key]) for key in single if not _same(single[key], double[key])}
    assert not differing


def test_two_process_run_really_used_two_ranks(outcomes: dict[int, DemoOutcome]) -> None:
    worlds = {run.results.get("config", {}).get("world_size", None) for run in outcomes[2].runs}
    logs = "".join(run.stdout + run.stderr for run in outcomes[2].runs)
    assert "Running on rank 1" in logs or worlds == {2}, logs[-3000:]


def test_judge_work_is_done_once_per_item(outcomes: dict[int, DemoOutcome]) -> None:
    for n, outcome in outcomes.items():
        judged = [r.content_key for r in outcome.requests if r.model == STAND_IN_JUDGE]
        assert judged, f"no judge requests in the {n}-process run"
        assert max(Counter(judged).values()) == 1, f"{n}-process run sent a judge request twice"
    count = {n: len([r for r in o.requests if r.model == STAND_IN_JUDGE]) for n, o in outcomes.items()}
    assert count[1] == count[2]
