"""README's "Where the outputs go": `<ts>` is UTC+8. README's "Start small" counts (`--tasks haerae_vision --limit 5`: N model requests and M judge requests) are
what the real command sends: each of the group's two tasks asks the model once per item and the judge once per
answer, and one preflight request checks the judge before any model request."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.e2e
def test_the_readme_request_counts_of_a_five_item_try(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"--tasks haerae_vision --limit (\d+) .*?That is (\d+) model requests and (\d+) judge requests", text, re.S)
    assert block, "README's five-item try and its request counts"
    limit, said_model, said_judge = map(int, block.groups())
    data = fixture.write(tmp_path / "data")
    assert len(data.records[fixture.RECORDS_KEY]) >= limit
    with StandInServer(default_reply=None) as server:
        fixture.script_demo(server, data)
        env = offline_env(server.base_url, tmp_path, data.env, extra={"LMMS_TASKS_JUDGE_PROGRESS": "0"})
        utc8 = datetime.timezone(datetime.timedelta(hours=8))
        started = datetime.datetime.now(utc8).replace(microsecond=0, tzinfo=None)
        run = run_lmms_eval("haerae_vision", server.base_url, tmp_path / "out", env=env, limit=limit, in_process=True).check()
        ended = datetime.datetime.now(utc8).replace(tzinfo=None)
        sent_model = len(server.requests_for(model=STAND_IN_MODEL))
        sent_judge = len(server.requests_for(model=STAND_IN_JUDGE)) + len(server.preflights)
    assert (sent_model, sent_judge) == (2 * limit, 2 * limit + 1) == (said_model, said_judge)
    # the results file's <ts> is the run's time in UTC+8, as README says
    assert re.search(r"`<ts>` is lmms-eval's `YYYYMMDD_HHMMSS` in UTC\+8", text)
    stamp = datetime.datetime.strptime(run.results_path.name[: len("YYYYMMDD_HHMMSS")], "%Y%m%d_%H%M%S")
    assert started <= stamp <= ended
