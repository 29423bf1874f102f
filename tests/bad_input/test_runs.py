"""Bad input through the real lmms-eval CLI (the exit statuses of every fault through every entry point are
in test_exit_matrix.py):

- a judge that answers 401 echoing the Authorization header, with the preflight switched off
  (`LMMS_TASKS_JUDGE_PREFLIGHT=0`; with it on the run stops before inference: test_preflight_e2e.py):
  outputs written, exit status 3, and the key is in no file the run wrote and not in its console output;
- `score` (the real command): a samples file cut at a line boundary is refused unless --allow-partial;
  HumanEval-V without the opt-in is one line and exit 2; the run's judge (model, endpoint, cache) is reused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks.utils.services.records import recorded_dir
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
        env = offline_env(server.base_url, tmp_path, fixtures.env, extra={"LMMS_TASKS_JUDGE_API_KEY": SECRET, "LMMS_TASKS_JUDGE_PREFLIGHT": "0"})
        run = run_lmms_eval(["haerae_vision_original"], server.base_url, tmp_path / "out", env=env, in_process=True).check(exit_status=EXIT_INCOMPLETE)
        echoed = [r for r in server.requests if r.model == STAND_IN_JUDGE]
    assert echoed and all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in echoed)  # the key was really sent
    assert run.metric("haerae_vision_original", "judge_failures") == len(hv_fixture.ITEMS)
    assert SECRET not in run.stdout + run.stderr
    written = [p for root in (tmp_path / "out", tmp_path / "judge_cache") for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "haerae_vision_original.jsonl" for p in written)
    leaking = [p for p in written if SECRET.encode() in p.read_bytes()]
    assert leaking == []
    records = (next((tmp_path / "out").rglob("records_*")) / "judgements" / "haerae_vision_original.jsonl").read_text(encoding="utf-8")
    assert "HTTP 401" in records and "[REDACTED]" in records


def _demo_files(demo_two_models, task: str, tmp_path: Path) -> tuple[Path, Path, object]:
    """A copy of one task's samples file from the first demo model's real run, with its results file beside it
    (so `score` knows how many samples the run evaluated), the demo's work dir and the run."""
    from lmms_tasks.utils.testing.demo import DEMO_MODELS

    work, demo = demo_two_models
    run = next(r for r in demo.runs_of(DEMO_MODELS[0]) if task in r.results["results"])
    original = next(run.results_path.parent.glob(f"*_samples_{task}.jsonl"))
    shutil.copy(run.results_path, tmp_path / run.results_path.name)
    shutil.copy(original, tmp_path / original.name)
    return tmp_path / original.name, work, run


def _score_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lmms_tasks", "score", *args], env=dict(env), capture_output=True, text=True, timeout=600, check=False)


def _clean_env(work: Path, **extra: str) -> dict[str, str]:
    """The user's shell after the run: no judge settings, no keys, offline, the demo's data."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMMS_TASKS_JUDGE_", "OPENAI_", "AZURE_", "HUMANEVAL_V_"))}
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(work / "hf_home"), "LMMS_TASKS_EXEC_CACHE_DIR": str(work / "exec_cache")})
    env.update({name: str(work / "data" / bench) for name, bench in (("VLM2_BENCH_DATA", "vlm2_bench"), ("HUMANEVAL_V_DATA", "humaneval_v"), ("HAERAE_VISION_DATA", "haerae_vision"))})
    return {**env, **extra}


def test_score_refuses_a_cut_samples_file_unless_allowed(tmp_path: Path, demo_two_models) -> None:
    """A samples file holding fewer samples than the run evaluated is refused (one line, exit 2, nothing
    written); with --allow-partial it is scored with a warning. Cutting the demo's one wrong answer turns
    pass@1 75 into 100: exactly what a status check must not miss."""
    samples, work, run = _demo_files(demo_two_models, "humaneval_v_v2c", tmp_path)
    assert run.metric("humaneval_v_v2c", "pass@1") == 75.0
    lines = samples.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["pass@1"]["qid"] != "q3"]  # q3: the demo's wrong answer
    samples.write_text("\n".join(kept) + "\n", encoding="utf-8")
    env = _clean_env(work, HUMANEVAL_V_ALLOW_CODE_EXECUTION="1")
    out = tmp_path / "scored"
    proc = _score_cli([str(samples), "--output-dir", str(out)], env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and f"holds {len(kept)} of the {len(lines)} samples" in proc.stderr and "--allow-partial" in proc.stderr
    assert not out.exists()
    proc = _score_cli([str(samples), "--output-dir", str(out), "--allow-partial"], env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"warning: {samples} holds {len(kept)} of {len(lines)} samples" in proc.stderr
    report = json.loads((out / f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    assert report["results"]["pass@1,none"] == 100.0 and (report["n_samples"], report["n_expected"]) == (3, 4)


def test_score_without_the_code_execution_opt_in_is_one_line_and_exit_2(tmp_path: Path, demo_two_models) -> None:
    samples, work, _ = _demo_files(demo_two_models, "humaneval_v_v2c_pass3", tmp_path)
    proc = _score_cli([str(samples), "--output-dir", str(tmp_path / "scored")], _clean_env(work))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "set HUMANEVAL_V_ALLOW_CODE_EXECUTION=1" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "scored").exists()


def test_score_reuses_the_runs_judge(tmp_path: Path, demo_two_models, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """The demo judged with the stand-in judge on a port that is closed now, with its own cache: re-scoring
    in a shell without any judge setting reuses that judge and cache (no call: every judgement is cached)
    instead of calling the default judge; --judge-* options override it, --ignore-run-judge ignores it."""
    from lmms_tasks.utils.commands.score import main as score
    from lmms_tasks.utils.services.llm_judge import judge

    samples, work, run = _demo_files(demo_two_models, "haerae_vision_original", tmp_path)
    run_records = recorded_dir(run.results_path, run.results)  # the run's own records folder, named in its results
    summary = json.loads((run_records / "judgements" / "haerae_vision_original.summary.json").read_text(encoding="utf-8"))
    assert summary["judge_model"] == STAND_IN_JUDGE and summary["cache_dir"] == str((work / "judge_cache").resolve())
    shutil.copytree(run_records, tmp_path / run_records.name)  # beside the copied results file, as the run left it
    proc = _score_cli([str(samples), "--output-dir", str(tmp_path / "scored")], _clean_env(work))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"judge: the run's (model={STAND_IN_JUDGE}, base_url={summary['base_url']}" in proc.stderr
    report = json.loads((tmp_path / "scored" / f"{samples.stem}.rescored.json").read_text(encoding="utf-8"))
    (rescored_run,) = (tmp_path / "scored").glob("*_results.json")  # the re-score as an lmms-eval run
    rescored_records = recorded_dir(rescored_run, json.loads(rescored_run.read_text(encoding="utf-8")))  # its own folder
    assert rescored_records.parent == tmp_path / "scored" and rescored_records != run_records
    rescored = json.loads((rescored_records / "judgements" / "haerae_vision_original.summary.json").read_text(encoding="utf-8"))
    assert rescored["judge_info"].startswith(f"judge={STAND_IN_JUDGE}@{summary['endpoint_host']} ")
    assert " cached=5 " in rescored["judge_info"]
    assert report["results"]["haerae_vision_score,none"] == pytest.approx(run.metric("haerae_vision_original", "haerae_vision_score"))

    # another model run later into the same output path has records of its own: the run's judge is still found
    from lmms_tasks.utils.commands.score import run_judge

    assert run_judge(samples, "haerae_vision_original")[0]["model"] == STAND_IN_JUDGE
    later = json.loads(run.results_path.read_text(encoding="utf-8"))
    later["date"] = "29990101_000000"
    (tmp_path / "later-model").mkdir()
    (tmp_path / "later-model" / "29990101_000000_results.json").write_text(json.dumps(later), encoding="utf-8")
    assert run_judge(samples, "haerae_vision_original")[0]["model"] == STAND_IN_JUDGE
    shutil.rmtree(tmp_path / "later-model")

    for key, value in _clean_env(work).items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("LMMS_TASKS_JUDGE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PROGRESS", "0")
    with StandInServer(default_reply="<score>1/1</score>") as server:
        judge.clear_memo()  # --judge-* options override the recorded settings
        other = ["--judge-model", "other-judge", "--judge-base-url", server.base_url, "--judge-cache-dir", str(tmp_path / "other_cache")]
        assert score([str(samples), "--output-dir", str(tmp_path / "other"), *other]) == 0
        assert len(server.requests_for(model="other-judge")) == 5
        judge.clear_memo()  # --ignore-run-judge: the environment decides, as in a run
        monkeypatch.setenv("LMMS_TASKS_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("LMMS_TASKS_JUDGE_MODEL", "env-judge")
        monkeypatch.setenv("LMMS_TASKS_JUDGE_CACHE_DIR", str(tmp_path / "fresh_cache"))
        assert score([str(samples), "--output-dir", str(tmp_path / "env"), "--ignore-run-judge"]) == 0
        assert len(server.requests_for(model="env-judge")) == 5
    judge.clear_memo()
