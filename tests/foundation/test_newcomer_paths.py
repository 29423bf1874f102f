"""What a new user meets after a first run (issue 39), through the real commands on the session demo's runs
(copied, so the shared demo is never changed): `score` refusing a judge it cannot use on the batch-scored
tasks, a re-score that never passes for the run's own records, and `export-official` with the data the run
recorded rather than whatever today's environment names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.services.records import recorded_dir

KEYS = ("OPENAI_", "AZURE_", "LMMS_TASKS_JUDGE_", "VLM2_BENCH_", "HUMANEVAL_V", "HAERAE_VISION_")


def fresh_shell(home: Path, **extra: str) -> dict[str, str]:
    """A new user's shell: no key, no judge or data settings, a HOME of its own (empty caches), offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(KEYS)}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", NO_PROXY="127.0.0.1")
    env.update(extra)
    return env


def lmms_tasks(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lmms_tasks", *args], capture_output=True, text=True, env=dict(env), cwd=cwd, timeout=900)


def stage_copy(demo: tuple[Path, Any], task: str, tmp_path: Path) -> Path:
    """An lmms-eval --output_path holding a copy of the first demo run that evaluated `task`: its results file,
    samples files and records folder (the demo writes every run into one results folder, `results/<model>/`)."""
    work, outcome = demo
    run = next(r for r in outcome.runs if task in (r.results.get("results") or {}))
    copy = tmp_path / "run"
    folder = copy / run.results_path.parent.name
    folder.mkdir(parents=True)
    stamp = run.results_path.name[: -len("_results.json")]
    for path in [run.results_path, *run.results_path.parent.glob(f"{stamp}_samples_*.jsonl")]:
        shutil.copy(path, folder / path.name)
    records = recorded_dir(run.results_path, run.results)
    shutil.copytree(records, folder / records.relative_to(run.results_path.parent))
    return copy


def samples_of(run_dir: Path, task: str) -> Path:
    (found,) = sorted(run_dir.glob(f"*/*_samples_{task}.jsonl"))
    return found


def strong_coder_task(demo: tuple[Path, Any]) -> str:
    """The HumanEval-V task whose batch step asked the strong coder (its `<task>_strong_coder` judgements)."""
    _, outcome = demo
    for run in outcome.runs:
        for summary in sorted((recorded_dir(run.results_path, run.results) / "judgements").glob("*_strong_coder.summary.json")):
            return summary.name[: -len("_strong_coder.summary.json")]
    raise AssertionError("the demo asked no strong coder")


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("task", ["haerae_vision_original", "vlm2_bench_pc_vid", "strong_coder"])
def test_score_refuses_a_judge_it_cannot_use_on_batch_scored_tasks(demo_two_models: tuple[Path, Any], task: str, tmp_path: Path) -> None:
    """The batch step's preflight failure refuses the file: one line, exit 2, nothing written (docs/JUDGE.md),
    for each benchmark whose judging happens in the batch step (on 4ff4513: exit 1, the error once per metric,
    a .rescored.json written anyway)."""
    task = strong_coder_task(demo_two_models) if task == "strong_coder" else task
    run = stage_copy(demo_two_models, task, tmp_path)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    extra = {"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1", "HUMANEVAL_V_STRONG_CODER": "1"} if task.startswith("humaneval_v") else {}
    proc = lmms_tasks("score", str(samples_of(run, task)), "--ignore-run-judge", env=fresh_shell(tmp_path / "home", **extra), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    (line,) = error_lines(proc.stderr)
    assert "has no key" in line and "LMMS_TASKS_JUDGE_API_KEY" in line, line
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before  # nothing written: no rescored/, no .rescored.json


def test_a_rescore_never_passes_for_the_runs_own_records(demo_two_models: tuple[Path, Any], tmp_path: Path) -> None:
    """Score one task, then its sibling, then export-official the run: each behaves as on an untouched run
    (on 4ff4513 the first re-score's judgements/ beside the samples were taken for the run's: the sibling found
    no recorded judge, and export-official wrote 1 of 2 score.py CSVs)."""
    run = stage_copy(demo_two_models, "haerae_vision_original", tmp_path)
    env = fresh_shell(tmp_path / "home")
    first = lmms_tasks("score", str(samples_of(run, "haerae_vision_original")), env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    rescored = samples_of(run, "haerae_vision_original").parent / "rescored"
    assert (rescored / f"{samples_of(run, 'haerae_vision_original').stem}.rescored.json").is_file()
    assert len(list(rescored.glob("records_*/judgements/haerae_vision_original.summary.json"))) == 1  # its own records folder
    (results,) = samples_of(run, "haerae_vision_original").parent.glob("*_results.json")
    own = recorded_dir(results, json.loads(results.read_text(encoding="utf-8")))  # the run's records, as its results file names them
    assert own is not None and f"the run's own records in {own / 'judgements'}/ are left unchanged" in first.stdout

    second = lmms_tasks("score", str(samples_of(run, "haerae_vision_explicit")), env=env, cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"from {own / 'judgements' / 'haerae_vision_explicit.summary.json'}" in second.stderr  # the run's judge, as recorded
    untouched = json.loads((own / "judgements" / "haerae_vision_explicit.summary.json").read_text(encoding="utf-8"))
    assert untouched.get("replayed_from") is None and "rescored" not in json.dumps(untouched)

    export = lmms_tasks("export-official", str(run), "--out", str(tmp_path / "official"), env=env, cwd=tmp_path)
    assert export.returncode == 0, export.stderr[-3000:]
    scores = sorted(p.name for p in (tmp_path / "official" / "haerae_vision" / "scores").glob("*.csv"))
    # the run's own two, and the two re-scores beside it, which are runs too (issue 52)
    assert scores == ["stand-in-vlm-explicit_1.csv", "stand-in-vlm-original_1.csv", "stand-in-vlm__re-scored_-explicit_1.csv", "stand-in-vlm__re-scored_-original_1.csv"], scores
    assert "recorded no judgements" not in export.stderr


def test_export_official_uses_and_checks_the_data_the_run_recorded(demo_two_models: tuple[Path, Any], tmp_path: Path) -> None:
    """In a fresh shell (no *_DATA) export-official loads the local copy the run recorded; pointed at other data
    it refuses in one line naming both (on 4ff4513: a fresh shell tried the Hub; other data exported silently)."""
    run = stage_copy(demo_two_models, "haerae_vision_original", tmp_path)
    results = json.loads(next(run.glob("*/*_results.json")).read_text(encoding="utf-8"))
    record = results["configs"]["haerae_vision_original"]["metadata"]["data_source"]
    assert record["source"] == "local"
    fresh = lmms_tasks("export-official", str(run), "--out", str(tmp_path / "a"), env=fresh_shell(tmp_path / "home"), cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert len(list((tmp_path / "a" / "haerae_vision" / "outputs").glob("*.csv"))) == 2

    same = tmp_path / "same_copy"  # the same files elsewhere: the same data
    shutil.copytree(record["root"], same)
    moved = lmms_tasks("export-official", str(run), "--out", str(tmp_path / "b"), env=fresh_shell(tmp_path / "home", HAERAE_VISION_DATA=str(same)), cwd=tmp_path)
    assert moved.returncode == 0, moved.stderr[-3000:]

    other = tmp_path / "other_copy"  # one data file changed: other data
    shutil.copytree(record["root"], other)
    changed = next(other.rglob("*.parquet"))
    changed.write_bytes(changed.read_bytes() + b"\0")
    refused = lmms_tasks("export-official", str(run), "--out", str(tmp_path / "c"), env=fresh_shell(tmp_path / "home", HAERAE_VISION_DATA=str(other)), cwd=tmp_path)
    assert refused.returncode == 2
    (line,) = error_lines(refused.stderr)
    assert f"HAERAE_VISION_DATA={record['root']}" in line and f"HAERAE_VISION_DATA={other}" in line, line
    assert not (tmp_path / "c").exists()
