"""A newcomer's first HAERAE-Vision run with no judge configured (issue 22): the judge's key falls back to the
model's OPENAI_API_KEY and its endpoint cannot be reached. Before any model request the run names the judge
(model, endpoint, which variable the key comes from). By default the preflight then stops the run (exit
status 1, test_preflight_e2e.py); with the preflight off (`LMMS_TASKS_JUDGE_PREFLIGHT=0`, for setups that
judge later) the run says the endpoint is unreachable, no failed request is averaged as a 0, and it exits 3
with its outputs written."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.services.status import EXIT_INCOMPLETE
from lmms_tasks.utils.testing.e2e import STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture
from lmms_tasks.utils.testing.openai_server import StandInServer


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LMMS_TASKS_JUDGE_API_KEY": "sk-x"}, "key from LMMS_TASKS_JUDGE_API_KEY"),
        ({"OPENAI_API_KEY": "sk-model"}, "key from OPENAI_API_KEY (no LMMS_TASKS_JUDGE_API_KEY set)"),
        ({"LMMS_TASKS_JUDGE_BASE_URL": "http://127.0.0.1:8000/v1"}, "key from none needed (a local endpoint"),
        ({}, "key from none found (set LMMS_TASKS_JUDGE_API_KEY)"),
    ],
)
def test_the_judge_line_names_model_endpoint_and_key_variable(env: dict[str, str], expected: str) -> None:
    config = judge.JudgeConfig.resolve(default_model="gpt-5-mini", env=env)
    line = config.describe()
    assert line.startswith(f"model gpt-5-mini at {env.get('LMMS_TASKS_JUDGE_BASE_URL', 'https://api.openai.com/v1')}, ")
    assert expected in line and "sk-" not in line


def test_an_unreachable_endpoint_is_named_and_a_reachable_one_is_not(stand_in: StandInServer) -> None:
    assert judge.endpoint_problem(stand_in.base_url) is None
    problem = judge.endpoint_problem(f"http://127.0.0.1:{closed_port()}/v1")
    assert problem is not None and "Connection" in problem


@pytest.mark.e2e
def test_first_run_without_a_judge_and_the_preflight_off(tmp_path: Path) -> None:
    fixtures = hv_fixture.write(tmp_path / "data")
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with StandInServer(default_reply="정답입니다.") as server:
        env = offline_env(server.base_url, tmp_path, fixtures.env, extra={"LMMS_TASKS_JUDGE_MAX_RETRIES": "0", "OPENAI_API_KEY": "sk-the-models-key-0123456789", "LMMS_TASKS_JUDGE_PREFLIGHT": "0"})
        for key in ("LMMS_TASKS_JUDGE_API_KEY", "LMMS_TASKS_JUDGE_MODEL"):
            env.pop(key)
        env["LMMS_TASKS_JUDGE_BASE_URL"] = dead
        run = run_lmms_eval(["haerae_vision_original"], server.base_url, tmp_path / "out", env=env, limit=2, in_process=True).check(exit_status=EXIT_INCOMPLETE)
    output = run.stdout + run.stderr
    named = re.search(rf"haerae_vision_original: judge model gpt-5-mini at {re.escape(dead)}, key from OPENAI_API_KEY \(no LMMS_TASKS_JUDGE_API_KEY set\)", output)
    unreachable = output.find(f"the judge endpoint {dead} cannot be reached now")
    first_request = output.find("Model Responding")
    assert named and 0 <= named.start() < first_request and 0 <= unreachable < first_request, output[-3000:]
    assert "sk-the-models-key" not in output
    # no judge reply: nothing is averaged as a 0; the failures are counted and the status says incomplete
    assert run.metric("haerae_vision_original", "judge_failures") == 2
    assert run.metric("haerae_vision_original", "haerae_vision_score") in (None, "N/A") or run.metric("haerae_vision_original", "haerae_vision_score") != 0.0
    assert run.samples["haerae_vision_original"] and STAND_IN_MODEL in str(run.results_path)
