"""Ctrl-C during judging, through the real `lmms-eval` command: the run ends promptly (a judge request in flight
is not waited for), with status 130, one line saying what was kept and how to resume, and no traceback; the same
command then judges only what was not answered (docs/EXIT_STATUS.md)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, lmms_eval_command, offline_env, start_interruptible
from lmms_tasks.utils.testing.fixtures import haerae_vision as fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

TASK = "haerae_vision_original"
HANG = 600.0  # the hung judge request would hold the run this long (its timeout is as long) if it were waited for
PROMPT_EXIT = 60.0  # generous: the point is not waiting for the hung request, not speed


def _start(command: list[str], env: dict[str, str], out: Path, name: str) -> tuple[subprocess.Popen, Path]:
    log = out / f"{name}.log"
    with open(log, "w", encoding="utf-8") as fh:
        proc = start_interruptible(command, env=dict(env), cwd=out, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT)
    return proc, log


@pytest.mark.e2e
def test_ctrl_c_while_judging_ends_promptly_with_one_line_and_the_rerun_resumes(tmp_path: Path) -> None:
    data = fixture.write(tmp_path / "data")
    hung_question = data.records[fixture.RECORDS_KEY][0]["question_original"]
    with StandInServer(default_reply=None, hang_seconds=HANG) as server:
        fixture.script_demo(server, data)
        server.fault(lambda r: r.model == STAND_IN_JUDGE and f"[INPUT]\n{hung_question}\n" in r.text, "hang", times=1)
        knobs = {"LMMS_TASKS_JUDGE_TIMEOUT": str(HANG), "LMMS_TASKS_JUDGE_MAX_RETRIES": "0", "LMMS_TASKS_JUDGE_PROGRESS": "0"}
        env = offline_env(server.base_url, tmp_path, data.env, extra=knobs)
        responses = tmp_path / "cache" / "responses"
        command = lmms_eval_command(TASK, server.base_url, tmp_path / "results", extra_args=["--use_cache", str(responses)])
        proc, log = _start(command, env, tmp_path, "first")
        try:
            deadline = time.monotonic() + 600
            while not any(r.fault == "hang" for r in server.requests_for(model=STAND_IN_JUDGE)):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text(encoding="utf-8")[-3000:]
                time.sleep(0.2)
            n_judge = len(data.records[fixture.RECORDS_KEY])
            while sum(r.status == 200 for r in server.requests_for(model=STAND_IN_JUDGE)) < n_judge - 1 and time.monotonic() < deadline:
                time.sleep(0.2)  # the others answered: only the hung request is in flight
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
            sent = time.monotonic()
            try:
                code = proc.wait(timeout=PROMPT_EXIT)
            except subprocess.TimeoutExpired:
                pytest.fail(f"still running {PROMPT_EXIT:.0f} s after Ctrl-C: it waits for the hung judge request")
            assert time.monotonic() - sent < PROMPT_EXIT
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        printed = log.read_text(encoding="utf-8")
        assert code == 130, printed[-3000:]
        assert "Traceback" not in printed, printed[-3000:]
        lines = [line for line in printed.splitlines() if "exit status 130 (interrupted)" in line]
        assert len(lines) == 1, printed[-3000:]
        assert (
            str(tmp_path / "judge_cache") in lines[0] and "the same command resumes" in lines[0] and "the model is asked again" in lines[0]
        )
        assert lines[0] == printed.rstrip().splitlines()[-1]

        answered = {r.text for r in server.requests_for(model=STAND_IN_JUDGE) if r.status == 200}
        before, model_before = len(server.requests_for(model=STAND_IN_JUDGE)), len(server.requests_for(model=STAND_IN_MODEL))
        rerun, log2 = _start(command, env, tmp_path, "second")
        assert rerun.wait(timeout=900) == 0, log2.read_text(encoding="utf-8")[-3000:]
        again = server.requests_for(model=STAND_IN_JUDGE)[before:]
        # only the request that was never answered is judged again; the answered ones come from the judge cache
        assert len(answered) == n_judge - 1
        assert [f"[INPUT]\n{hung_question}\n" in r.text for r in again] == [True]
        # as the line says: lmms-eval 0.7.3's --use_cache keeps no response of an interrupted (or sampled) run
        assert len(server.requests_for(model=STAND_IN_MODEL)) == 2 * model_before
