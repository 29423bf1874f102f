"""export-official on the session's two-model demo, then `score --from-official` on what it wrote: every
metric of every task equals the run's own results.json (round trip), the files are laid out and encoded as
the official scripts write them, and a failed export writes nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks.utils.commands.official import cli
from lmms_tasks.utils.services.llm_judge.judge import clear_memo
from lmms_tasks.utils.testing.demo import DEMO_MODELS

pytestmark = pytest.mark.e2e
DEAD_JUDGE = "http://127.0.0.1:9/v1"  # nothing listens: a judge request would fail, so only the cache can answer


def _data_env(work: Path) -> dict[str, str]:
    return {
        "VLM2_BENCH_DATA": str(work / "data" / "vlm2_bench"),
        "HUMANEVAL_V_DATA": str(work / "data" / "humaneval_v"),
        "HUMANEVAL_V1_DATA": str(work / "data" / "humaneval_v" / "v1"),
        "HAERAE_VISION_DATA": str(work / "data" / "haerae_vision"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(work / "hf_home"),
    }


@pytest.fixture(scope="module")
def exported(demo_two_models, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    """The demo's runs (both models) exported through the real CLI."""
    work, demo = demo_two_models
    return work, _export_official(work / "results", tmp_path_factory.mktemp("official") / "export", work), demo


def _export_official(results: Path, out: Path, work: Path) -> Path:
    """`python -m lmms_tasks export-official RESULTS --out OUT` (the real CLI), which must succeed."""
    proc = subprocess.run(
        [sys.executable, "-m", "lmms_tasks", "export-official", str(results), "--out", str(out)],
        env=dict({**os.environ, **_data_env(work)}), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _run_results(demo, model: str) -> dict[str, dict]:
    merged: dict[str, dict] = {}
    for run in demo.runs_of(model):
        merged.update(run.results["results"])
    return merged


def _expected(results: dict[str, dict], report: dict) -> dict:
    """The run's numbers for an imported file's task (V2T2C-4o: the v2t task's strong-coder numbers)."""
    task = report["task"]
    if report.get("official_setting") == "V2T2C-4o":
        k = "3" if task.endswith("_pass3") else "1"
        section = results[task.replace("_t2c", "_v2t", 1)]
        return {key.split(",")[0].replace(f"strong_coder_pass_at_{k}", f"pass@{k}"): value for key, value in section.items()}
    return {key.split(",")[0]: value for key, value in results[task].items()}


def _score_back(out: Path, scored: Path, work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """`score --from-official` on every folder export-official wrote (judge replies and executions from the run's caches)."""
    for key, value in _data_env(work).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    monkeypatch.setenv("LMMS_TASKS_EXEC_CACHE_DIR", str(work / "exec_cache"))
    monkeypatch.setenv("LMMS_TASKS_JUDGE_PROGRESS", "0")
    monkeypatch.setenv("LMMS_TASKS_JUDGE_MAX_RETRIES", "0")
    judge = ["--judge-model", "stand-in-judge", "--judge-base-url", DEAD_JUDGE, "--judge-cache-dir", str(work / "judge_cache")]
    for bench, folder in (("vlm2_bench", "vlm2_bench"), ("humaneval_v", "humaneval_v"), ("humaneval_v", "humaneval_v1"), ("haerae_vision", "haerae_vision")):
        clear_memo()
        assert cli.score_main([bench, str(out / folder), "--output-dir", str(scored / folder), *judge]) == 0, capsys.readouterr().err[-3000:]


def _compare(scored: Path, results_of) -> tuple[dict[str, set[str]], int]:
    """Every metric of every re-scored file against the run's results.json (`results_of(path)`: the run's
    results of the file's model); returns the tasks covered per results and how many numbers were compared."""
    covered: dict[str, set[str]] = {}
    compared = 0
    for path in sorted(scored.rglob("*.rescored.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        model, results = results_of(path)
        expected = _expected(results, report)
        std = "_std_answers" in path.name  # GC answers standardized to T/F: its exact numbers are the run's parsed ones
        for key, value in report["results"].items():
            name = key.split(",")[0]
            if name.endswith("judge_info") or name.startswith("strong_coder_pass_at"):
                continue  # provenance (cache hits, endpoint) / the V2T2C-4o file carries these
            if report.get("official_setting") == "V2T2C-4o" and not name.startswith("pass@"):
                continue  # a run reports only the strong coder's pass@k
            if std:  # the exact-match metrics of standardized answers are the run's parsed ones (standard errors too)
                base, suffix = (name[: -len("_stderr_clt")], "_stderr_clt") if name.endswith("_stderr_clt") else (name, "")
                name = ("vlm2_score" if base == "vlm2_exact_score" else base.replace("gc_exact_", "tf_")) + suffix
            want = expected[name]
            assert value == (pytest.approx(want) if isinstance(want, float) else want), (path.name, key)
            compared += 1
        covered.setdefault(model, set()).add(report["task"])
    return covered, compared


def _run_tasks(results: dict[str, dict]) -> set[str]:
    """The tasks a run scored (not its groups), less the two whose numbers only exist per variant/setting."""
    tasks = {t for t, section in results.items() if any("," in k for k in section) and not t.endswith(("_bench", "_gc", "_oc", "_pc"))}
    return tasks - {"humaneval_v", "haerae_vision"}


def test_round_trip_gives_the_runs_own_numbers(exported, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    work, out, demo = exported
    scored = out.parent / "scored"
    _score_back(out, scored, work, monkeypatch, capsys)

    def results_of(path: Path) -> tuple[str, dict[str, dict]]:
        model = DEMO_MODELS[1] if DEMO_MODELS[1] in path.name else DEMO_MODELS[0]
        return model, _run_results(demo, model)

    covered, compared = _compare(scored, results_of)
    for model in DEMO_MODELS:
        assert _run_tasks(_run_results(demo, model)) <= covered.get(model, set()), sorted(_run_tasks(_run_results(demo, model)) - covered.get(model, set()))
    assert compared > 250  # every metric of 2 models x (9 + 12 + 4) files


# `/`, `_`, `-` and `.` in one model name: the official file names put the model before an `_` (and PC-VID's
# scorer keeps `vid_[^_]+`), so each character must survive export and import.
ODD_MODEL = "org/my_model-v1.5"


@pytest.fixture(scope="module")
def exported_odd_name(demo_two_models, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    """The demo's first model's runs, renamed ODD_MODEL (its results files' model_args), exported through the real CLI."""
    work, demo = demo_two_models
    root = tmp_path_factory.mktemp("odd_name")
    shutil.copytree(demo.run_dirs[DEMO_MODELS[0]], root / "results" / DEMO_MODELS[0])  # the model's folder in the demo's results
    renamed = 0
    for path in (root / "results").rglob("*_results.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        args = data["config"]["model_args"]
        if isinstance(args, dict):
            args["model_version"] = ODD_MODEL
        else:
            data["config"]["model_args"] = re.sub(r"(^|,)model_version=[^,]*", lambda m: f"{m.group(1)}model_version={ODD_MODEL}", args)
        path.write_text(json.dumps(data), encoding="utf-8")
        renamed += 1
    assert renamed
    return work, _export_official(root / "results", root / "export", work), demo


def test_round_trip_of_a_model_name_with_slash_underscore_dash_and_dot(exported_odd_name, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    work, out, demo = exported_odd_name
    names = sorted(p.name for p in out.rglob("*") if p.is_file() and p.parent.name != "vanilla")  # not the copied counting questions
    # the model as each official scorer will read it back: `/` made `_` (PC-VID: `-`, the scorer cuts at `_`)
    assert names and all("org_my_model-v1.5" in n or n.startswith("vid_org-my-model-v1.5_") for n in names), names
    scored = out.parent / "scored"
    _score_back(out, scored, work, monkeypatch, capsys)
    covered, compared = _compare(scored, lambda path: (ODD_MODEL, _run_results(demo, DEMO_MODELS[0])))
    assert _run_tasks(_run_results(demo, DEMO_MODELS[0])) <= covered[ODD_MODEL], sorted(_run_tasks(_run_results(demo, DEMO_MODELS[0])) - covered[ODD_MODEL])
    assert compared > 125  # every metric of one model x (9 + 12 + 4) files


def test_exported_files_are_in_the_official_layout_and_encoding(exported) -> None:
    work, out, demo = exported
    first, second = DEMO_MODELS
    stamp = demo.runs_of(first)[0].results_path.name[: -len("_results.json")]
    gc = out / "vlm2_bench/code/gc/test/test_res/test_mat" / f"{first}_{stamp}_answers.jsonl"
    lines = gc.read_text(encoding="ascii").splitlines()
    assert list(json.loads(lines[0])) == ["q_id", "task", "question", "edit_prompt", "model_answer", "gt_answer"]
    assert all(line == json.dumps(json.loads(line)) for line in lines)  # default json.dumps: ASCII escapes, ", " / ": "
    cpr = out / "vlm2_bench/code/pc/image/test/test_res/test_cpr" / f"{first}_{stamp}_answers.jsonl"
    assert list(json.loads(cpr.read_text(encoding="ascii").splitlines()[0])) == ["q_id", "type", "question", "model_answer", "gt_answer"]
    vid = sorted((out / "vlm2_bench/code/pc/video/test/test_res/test_pc_v_open-ended").glob("*.jsonl"))
    assert sorted(re.match(r"(vid_[^_]+)", p.name).group(1) for p in vid) == sorted(f"vid_{m}" for m in DEMO_MODELS)  # the scorer's model names
    assert (out / "vlm2_bench/jsonl/oc/vanilla/oc_cnt.jsonl").read_bytes() == (work / "data/vlm2_bench/jsonl/oc/vanilla/oc_cnt.jsonl").read_bytes()
    names = {p.name for p in (out / "humaneval_v").iterdir()}
    for exp in ("V2C", "V2C-CoT", "GT-T2C", "V2T2C_T2C", "V2T2C-4o_T2C", "V2T"):
        assert {f"{m}_{exp}_sample_{n}.json" for m in DEMO_MODELS for n in (1, 6)} <= names, exp
    assert {p.name for p in (out / "humaneval_v1").iterdir()} == {f"{m}_sample_{n}.json" for m in DEMO_MODELS for n in (1, 20)}
    v1_entries = json.loads((out / "humaneval_v1" / f"{first}_sample_20.json").read_text(encoding="utf-8"))
    assert all(list(e) == ["qid", "predictions"] and len(e["predictions"]) == 20 for e in v1_entries)  # v1's inference.py
    v2c = out / "humaneval_v" / f"{second}_V2C_sample_6.json"
    entries = json.loads(v2c.read_text(encoding="utf-8"))
    assert v2c.read_text(encoding="utf-8") == json.dumps(entries, indent=4)  # the official dump_json
    assert all(list(e) == ["qid", "prompt", "predictions"] and len(e["predictions"]) == 6 for e in entries)
    t2c = json.loads((out / "humaneval_v" / f"{first}_V2T2C_T2C_sample_6.json").read_text(encoding="utf-8"))
    assert all(len(e["predictions"]) == 1 for e in t2c) and len(t2c) == 6 * len(entries)  # one entry per description
    header = (out / "haerae_vision/outputs" / f"{first}-original_1.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "question_idx,category,source,images,question_original,question_explicit,checklist,answer,response,question_type,question_used"
    scores_header = (out / "haerae_vision/scores" / f"{second}-explicit_1.csv").read_text(encoding="utf-8").splitlines()[0]
    assert scores_header == header + ",judge_response,score"


def test_a_failed_export_writes_nothing(exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    work, out, _ = exported
    for key, value in _data_env(work).items():
        monkeypatch.setenv(key, value)
    assert cli.export_main([str(work / "results"), "--out", str(out)]) == 2  # not a new directory
    assert "exists and is not an empty directory" in capsys.readouterr().err
    empty = tmp_path / "no_data"
    empty.mkdir()
    monkeypatch.setenv("HAERAE_VISION_DATA", str(empty))  # the last benchmark's data is missing: fails after others were written
    target = tmp_path / "export"
    assert cli.export_main([str(work / "results"), "--out", str(target)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "HAERAE_VISION_DATA" in errors[0]
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["no_data"]
