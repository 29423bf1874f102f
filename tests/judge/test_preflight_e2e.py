"""A misconfigured judge stops the run before any model request (issue 29), through the real lmms-eval CLI:
no key, a key the judge rejects (401), a judge model the endpoint does not serve (404) and an endpoint that
is down each end the run with exit status 1, nothing written, not one request for the model under test, and
one line naming the judge model, the endpoint, where the key comes from and what to set. A judge that works
is checked with one request, apart from the judge's work (`StandInServer.preflights`); the other e2e tests
run with it. Every entry point and the patched lmms-eval: `tests/bad_input/test_exit_matrix.py`
(`judge_rejected`)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lmms_tasks.utils.services.status import EXIT_DATA
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture
from lmms_tasks.utils.testing.fixtures import vlm2_bench as vlm2_fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

pytestmark = pytest.mark.e2e


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Case:
    name: str
    task: str
    configure: Callable[[StandInServer, dict[str, str]], str]  # sets the fault up; returns the judge endpoint
    says: str  # what the line says after "<task>: the judge <model> at <endpoint> (key from <source>) "
    fix: str
    key_source: str | None = "LMMS_TASKS_JUDGE_API_KEY"  # None: no key, none named
    served_models: tuple[str, ...] | None = None


def no_key(server: StandInServer, env: dict[str, str]) -> str:
    for name in ("LMMS_TASKS_JUDGE_API_KEY", "OPENAI_API_KEY"):
        env.pop(name, None)
    env["LMMS_TASKS_JUDGE_BASE_URL"] = "https://api.openai.com/v1"  # a key is needed there; nothing is sent
    return env["LMMS_TASKS_JUDGE_BASE_URL"]


def rejected(server: StandInServer, env: dict[str, str]) -> str:
    env["LMMS_TASKS_JUDGE_API_KEY"] = "sk-wrong-key-0123456789abcdef"
    server.fault(lambda r: r.model == STAND_IN_JUDGE, "401-echo", times=None)
    return server.base_url


def unknown_model(server: StandInServer, env: dict[str, str]) -> str:
    return server.base_url  # the server serves only the model under test


def unreachable(server: StandInServer, env: dict[str, str]) -> str:
    env["LMMS_TASKS_JUDGE_BASE_URL"] = f"http://127.0.0.1:{closed_port()}/v1"
    return env["LMMS_TASKS_JUDGE_BASE_URL"]


CASES = [
    Case("no_key", "haerae_vision_original", no_key, "has no key", "set LMMS_TASKS_JUDGE_API_KEY (or OPENAI_API_KEY)", key_source=None),
    Case("rejected_key", "haerae_vision_original", rejected, "rejected the key (HTTP 401", "set LMMS_TASKS_JUDGE_API_KEY to a key this endpoint accepts"),
    Case("unknown_model", "vlm2_bench_pc_vid", unknown_model, "does not serve model stand-in-judge (HTTP 404", "set LMMS_TASKS_JUDGE_MODEL to a model this endpoint serves", served_models=(STAND_IN_MODEL,)),
    Case("unreachable", "haerae_vision_original", unreachable, "cannot be reached", "set LMMS_TASKS_JUDGE_BASE_URL to an endpoint that is up"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_misconfigured_judge_stops_the_run_before_any_model_request(case: Case, tmp_path: Path) -> None:
    fixture = hv_fixture if case.task.startswith("haerae") else vlm2_fixture
    fixtures = fixture.write(tmp_path / "data")
    with StandInServer(default_reply="(A)", served_models=case.served_models) as server:
        env = offline_env(server.base_url, tmp_path, fixtures.env)
        endpoint = case.configure(server, env)
        run = run_lmms_eval([case.task], server.base_url, tmp_path / "out", env=env, limit=2, in_process=True)
        model_requests = [r for r in server.requests if r.model == STAND_IN_MODEL]
        judge_requests = [r for r in server.requests if r.model != STAND_IN_MODEL]
        preflights = list(server.preflights)
    output = run.stdout + "\n" + run.stderr
    assert run.returncode == EXIT_DATA, output[-3000:]
    assert model_requests == [] and judge_requests == [], output[-3000:]  # stopped before any model request
    assert len(preflights) == (0 if case.name in ("no_key", "unreachable") else 1)  # once, not per attempt or task
    assert run.results_path is None and not list((tmp_path / "out").rglob("*_samples_*.jsonl"))
    lines = [line for line in output.splitlines() if "Error during evaluation" in line]
    assert len(lines) == 1, output[-3000:]
    key = "" if case.key_source is None else f" (key from {case.key_source})"
    assert f"Error during evaluation: {case.task}: the judge {STAND_IN_JUDGE} at {endpoint}{key} {case.says}" in lines[0], lines[0]
    assert case.fix in lines[0] and "LMMS_TASKS_JUDGE_PREFLIGHT=0" in lines[0]
    assert "sk-wrong-key" not in output
    assert "lmms-eval: exit status 1" in run.stderr
