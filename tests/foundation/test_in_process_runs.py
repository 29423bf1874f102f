"""`e2e.run_in_process`: an lmms-eval run through its CLI entry in the test's process leaves the process as it found
it, keeps its Hugging Face caches where its environment says (not the process's), and reports the status and
closing lines the command would (docs/DEVELOPING.md, "Testing")."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lmms_tasks.utils.services import status
from lmms_tasks.utils.testing.e2e import offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import vlm2_bench as fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

pytestmark = pytest.mark.e2e


def test_an_in_process_run_keeps_its_caches_and_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    import datasets.config

    fs = fixture.write(tmp_path / "data")
    before = (dict(os.environ), list(sys.argv), os.getcwd(), datasets.config.HF_DATASETS_CACHE)
    with StandInServer(default_reply="T") as server:
        env = offline_env(server.base_url, tmp_path / "work", fs.env, extra={"LMMS_TASKS_PLANTED_VARIABLE": "1"})
        run = run_lmms_eval("vlm2_bench_oc_cpr", server.base_url, tmp_path / "out", env=env, in_process=True).check()
    # every variable the run's environment held is as it was (a module imported meanwhile may add its own default)
    assert {key: os.environ.get(key) for key in env} == {key: before[0].get(key) for key in env}
    assert (list(sys.argv), os.getcwd(), datasets.config.HF_DATASETS_CACHE) == before[1:]
    assert run.returncode == 0 and run.samples["vlm2_bench_oc_cpr"]
    assert "|vlm2_bench_oc_cpr" in run.stdout.replace(" ", "")  # lmms-eval's table, captured


def test_an_in_process_run_gives_the_commands_status_and_closing_lines(tmp_path: Path) -> None:
    from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture

    fixtures = hv_fixture.write(tmp_path / "data")
    with StandInServer(default_reply="정답입니다.") as server:
        server.fault(lambda r: r.model == "stand-in-judge", "malformed", times=None)
        env = offline_env(server.base_url, tmp_path, fixtures.env, extra={"LMMS_TASKS_JUDGE_MAX_RETRIES": "0"})
        run = run_lmms_eval(["haerae_vision_original"], server.base_url, tmp_path / "out", env=env, limit=2, in_process=True)
    assert run.returncode == status.EXIT_INCOMPLETE and run.results_path is not None
    assert run.stderr.splitlines()[-2:][0] == f"lmms-eval: exit status {status.EXIT_INCOMPLETE}", run.stderr[-2000:]
    assert "haerae_vision_original: 2/2 judge request(s) failed" in run.stderr.splitlines()[-1]
    assert status.faults() == []  # nothing carried over to the next run of this process
    # its dataset was prepared in the run's own Hugging Face cache, as its environment names it, not the process's
    assert list((tmp_path / "hf_datasets").rglob("*.arrow"))
