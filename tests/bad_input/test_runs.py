"""Bad input through the real lmms-eval CLI (the exit statuses of every fault through every entry point are
in test_exit_matrix.py):

- a judge that answers 401 echoing the Authorization header: outputs written, exit status 3, and the key
  is in no file the run wrote and not in its console output;
- `score` on a samples file cut at a line boundary: a warning with the counts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lmms_tasks.utils.services.status import EXIT_INCOMPLETE
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

pytestmark = pytest.mark.e2e
SECRET = "sk-lmmstasks-judge-secret-0123456789abcdef"


def test_judge_echoing_the_key_leaves_it_in_no_file(tmp_path: Path) -> None:
    fixtures = hv_fixture.write(tmp_path / "data")
    with StandInServer(default_reply="정답입니다.") as server:
        server.fault(lambda r: r.model == STAND_IN_JUDGE, "401-echo", times=None)
        env = offline_env(server.base_url, tmp_path, fixtures.env, extra={"LMMS_TASKS_JUDGE_API_KEY": SECRET})
        run = run_lmms_eval(["haerae_vision_original"], server.base_url, tmp_path / "out", env=env).check(exit_status=EXIT_INCOMPLETE)
        echoed = [r for r in server.requests if r.model == STAND_IN_JUDGE]
    assert echoed and all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in echoed)  # the key was really sent
    assert run.metric("haerae_vision_original", "judge_failures") == len(hv_fixture.ITEMS)
    assert SECRET not in run.stdout + run.stderr
    written = [p for root in (tmp_path / "out", tmp_path / "judge_cache") for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "haerae_vision_original.jsonl" for p in written)
    leaking = [p for p in written if SECRET.encode() in p.read_bytes()]
    assert leaking == []
    records = (tmp_path / "out" / "judgements" / "haerae_vision_original.jsonl").read_text(encoding="utf-8")
    assert "HTTP 401" in records and "[REDACTED]" in records


def test_score_warns_about_a_samples_file_cut_at_a_line_boundary(
    tmp_path: Path, demo_two_models: tuple[Path, object], capsys: pytest.CaptureFixture
) -> None:
    from lmms_tasks.utils.commands.score import main as score
    from lmms_tasks.utils.testing.demo import DEMO_MODELS

    _, demo = demo_two_models
    run = demo.runs_of(DEMO_MODELS[0])[0]  # a real run's files: its samples file and the results file beside it
    original = next(run.results_path.parent.glob("*_samples_vlm2_bench_oc_cpr.jsonl"))
    samples = tmp_path / original.name
    shutil.copy(run.results_path, tmp_path / run.results_path.name)
    lines = original.read_text(encoding="utf-8").splitlines()
    samples.write_text("\n".join(lines[:-2]) + "\n", encoding="utf-8")  # cut at a line boundary
    assert score([str(samples)]) == 0
    assert f"holds {len(lines) - 2} of {len(lines)} samples" in capsys.readouterr().err
    report = json.loads(samples.with_name(f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    assert (report["n_samples"], report["n_expected"]) == (len(lines) - 2, len(lines))
