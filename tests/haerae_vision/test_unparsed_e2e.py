"""End-to-end: a judge that answers in prose, without the `<score>` tag (a wrong judge model or endpoint).
The official rule stays (an unparsed verdict counts 0), so the numbers are what the official scorer gives,
but the run names the task, the count and two sample replies, and exits 3 instead of reading as a very
bad model."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

pytestmark = pytest.mark.e2e

PROSE = "The response addresses the question well and meets most of the checklist items in a clear manner overall, " * 2


def test_a_judge_without_score_tags_warns_and_exits_3(tmp_path: Path) -> None:
    fixture_set = fixture.write(tmp_path / "data")
    with StandInServer(default_reply=None) as server:
        server.script(lambda r: r.model == STAND_IN_MODEL, "답변입니다.")
        server.script(lambda r: r.model == STAND_IN_JUDGE, PROSE)
        env = offline_env(server.base_url, tmp_path, fixture_set.env, extra={"LMMS_TASKS_JUDGE_PROGRESS": "0"})
        run = run_lmms_eval("haerae_vision_original", server.base_url, tmp_path / "out", env=env, in_process=True).check(exit_status=3)
    n = len(fixture.ITEMS)
    # the official numbers, unchanged: every verdict unparsed counts 0
    assert run.metric("haerae_vision_original", "haerae_vision_score") == 0.0
    assert run.metric("haerae_vision_original", "judge_unparsed") == n and run.metric("haerae_vision_original", "judge_failures") == 0
    (warning,) = [line for line in (run.stdout + run.stderr).splitlines() if "haerae_vision_original" in line and "no usable verdict" in line and "ERROR" in line]
    assert f"{n} of {n} judge replies" in warning and "LMMS_TASKS_UNPARSED_MAX_SHARE" in warning
    assert warning.count("'The response addresses the question well") == 2  # two sample replies...
    assert PROSE.strip() not in warning  # ...cut short
    assert "lmms-eval: exit status 3" in run.stderr
