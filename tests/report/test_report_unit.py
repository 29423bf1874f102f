"""The report on small hand-written lmms-eval output directories: metric names old and new, filters found
by scanning keys, N/A for missing and non-numeric values, run labels (a model run twice: two runs), stale records,
deterministic files, the CLI, the demo's last step, and a clear failure without matplotlib."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.commands.report import ReportDependencyError, write_report
from lmms_tasks.utils.commands.report import cli as report_cli
from lmms_tasks.utils.commands.report.runs import ReportInputError, load_runs, metric, model_identity, parse_judge_info, summaries
from lmms_tasks.utils.commands.report.tables import fmt
from lmms_tasks.utils.testing import demo as demo_module
from lmms_tasks.utils.vlm2_bench import TABLE as VLM2_TABLE

VLM2_SUBTASKS = tuple(VLM2_TABLE)  # the subtask table's order


def _results_file(
    output_path: Path,
    model: str,
    stamp: str,
    results: dict[str, Any],
    groups: dict[str, Any] | None = None,
    judgements: dict[str, dict[str, Any]] | None = None,
    executions: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """Write `<output_path>/<model>/<stamp>_results.json` (+ judgements/ and executions/ summaries) as lmms-eval and our tasks do."""
    data = {
        "results": results,
        "groups": groups or {},
        "config": {"model": "openai", "model_args": f"model_version={model},base_url=http://127.0.0.1:1/v1,api_key=[REDACTED]"},
        "date": stamp,
        "model_name": model,
        "model_name_sanitized": model,  # lmms-eval writes into <output_path>/<model_name_sanitized>/
        "total_evaluation_time_seconds": "1.25",
        "throughput": {"total_elapsed_time": 0.5},
        "usage": {"by_source": {"model": {"input_tokens": 10, "output_tokens": 2, "n_api_calls": 1}}},
    }
    path = output_path / model / f"{stamp}_results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    for kind, found in (("judgements", judgements or {}), ("executions", executions or {})):
        for task, summary in found.items():
            (output_path / kind).mkdir(exist_ok=True)
            (output_path / kind / f"{task}.summary.json").write_text(json.dumps({"task": task, **summary}), encoding="utf-8")
    return path


def _vlm2(score: float, new_names: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    results = {}
    for index, subtask in enumerate(VLM2_SUBTASKS):
        section = {"alias": subtask, "vlm2_score,none": score + index, "vlm2_score_stderr_clt,none": "N/A", "tf_n_pairs,none": 3}
        # the new layout makes the subtask rows of the group-only metrics strings
        section["vlm2_img8_score,none"] = "group only" if new_names else score + index
        results[f"vlm2_bench_{subtask}"] = section
    group = {
        "vlm2_score,none": score + 4,
        "vlm2_img8_score,none": score + 3.5,
        "vlm2_gap_to_human,none": score + 4 - 95.16,
        "alias": "vlm2_bench",
    }
    if new_names:
        group.update({"vlm2_exact_score,none": score + 1.125, "vlm2_exact_img8_score,none": score + 0.5})
    results["vlm2_bench"] = dict(group)
    return results, {"vlm2_bench": group}


def _humaneval(new_names: bool) -> dict[str, Any]:
    results: dict[str, Any] = {
        "humaneval_v_v2c": {
            "pass@1,none": 50.0,
            "parse_success_rate,none": 75.0,
            "by_task_type,none": {"Aggregation": 100.0, "Iteration": 0.0},
        },
        "humaneval_v_v2c_pass3": {"pass@3,n6": 57.5, "parse_success_rate,n6": 87.5, "by_task_type,n6": {"Aggregation": 100.0}},
        "humaneval_v_t2c_pass3": {"pass@3,none": 62.5},
        "humaneval_v_v2t": {"description_rate,none": 100.0, "strong_coder_pass_at_1,none": None},
        "humaneval_v_v2t_pass3": {"description_rate,n6": 100.0, "strong_coder_pass_at_3,n6": None},
    }
    if new_names:
        results["humaneval_v_v2c"].update({"pass@1_unrounded,none": 50.0, "parse_success_rate_unrounded,none": 75.0})
        results["humaneval_v_v2c_pass3"].update({"pass@3_unrounded,n6": 57.54166})
    return results


def _haerae(original: float, explicit: float, info: str) -> tuple[dict[str, Any], dict[str, Any]]:
    group = {
        "score_original,none": original,
        "score_explicit,none": explicit,
        "underspec_gap,none": explicit - original,
        "judge_failures,none": 1,
    }
    tasks = {
        "haerae_vision_original": {
            "haerae_vision_score,none": original,
            "judge_failures,none": 1,
            "category_scores,none": {"게임": original},
            "judge_info,none": info,
            "underspec_gap,none": "original: 2 items scored; the gap is reported by group haerae_vision",
        },
        "haerae_vision_explicit": {
            "haerae_vision_score,none": explicit,
            "judge_failures,none": 0,
            "category_scores,none": {"게임": explicit},
        },
    }
    return {**tasks, "haerae_vision": dict(group)}, {"haerae_vision": group}


JUDGE_INFO = "judge=j@127.0.0.1:1 prompt_sha256=abc n=2 failed=0 unparsed=1 cached=0 tokens_in=40 tokens_out=4"
JUDGE_SUMMARY = {
    "judge_model": "j",
    "requests": 2,
    "failed": 0,
    "unparsed": 1,
    "cache_hits": 0,
    "input_tokens": 40,
    "output_tokens": 4,
    "retries": 0,
    "wall_s": 0.25,
}


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    """Two models in their own directories: the first with today's metric names, the second with the new ones."""
    dirs = []
    for index, (model, new) in enumerate((("model-a", False), ("model-b", True))):
        root = tmp_path / f"run{index}"
        vlm2_results, vlm2_groups = _vlm2(40.0 + 10 * index, new)
        haerae_results, haerae_groups = _haerae(0.25 + index / 10, 0.5, JUDGE_INFO)
        _results_file(root / "vlm2", model, "20260101_000000", vlm2_results, vlm2_groups)
        _results_file(
            root / "hev",
            model,
            "20260101_000100",
            _humaneval(new),
            executions={"humaneval_v_v2c": {"programs": 4, "gated": 1, "passed": 2, "timeouts": 1, "wall_s": 2.5}},
        )
        _results_file(
            root / "haerae", model, "20260101_000200", haerae_results, haerae_groups, judgements={"haerae_vision_original": JUDGE_SUMMARY}
        )
        dirs.append(root)
    return dirs


def _table(markdown: str, anchor: str) -> list[list[str]]:
    """Body rows of the table after `<!-- table: anchor -->`."""
    lines = markdown.split(f"<!-- table: {anchor} -->\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[c.strip() for c in row.strip().strip("|").split("|")] for row in lines[start + 2 : end]]


def test_fmt_prints_fixed_decimals_and_na() -> None:
    assert [fmt(93.51851851851853, 2), fmt(75.0, 1), fmt(0.2583333, 4), fmt(3, 0), fmt("2.833193", 3)] == [
        "93.52",
        "75.0",
        "0.2583",
        "3",
        "2.833",
    ]
    assert [fmt(None, 2), fmt("N/A", 2), fmt(True, 0), fmt(float("nan"), 2), fmt({"a": 1}, 2)] == ["N/A"] * 5
    assert fmt(-0.001, 2) == "0.00" and fmt(-1.64148, 2) == "-1.64"


def test_metric_is_found_whatever_its_filter() -> None:
    section = {"pass@3,n6": 57.5, "pass@3_stderr_clt,n6": "N/A", "pass@3_unrounded,n6": 57.54, "alias": "x"}
    assert metric(section, "pass@3") == 57.5 and metric(section, "pass@3_unrounded") == 57.54
    assert metric({"pass@3,none": 62.5}, "pass@3") == 62.5 and metric(section, "pass@1") is None and metric(None, "pass@3") is None
    assert metric({"m,n6": 1, "m,none": 2}, "m") == 2 and metric({"m,n6": 1, "m,none": 2}, "m", "n6") == 1


def test_model_identity_and_judge_info() -> None:
    assert (
        model_identity(
            {"config": {"model_args": "pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_new_tokens=1,limit_mm_per_prompt={'image':4}"}}
        )
        == "Qwen/Qwen2.5-VL-7B-Instruct"
    )
    assert model_identity({"config": {"model_args": {"model": "m"}}}) == "m"
    assert model_identity({"config": {"model": "openai"}, "model_name": "x"}) == "x"
    info = parse_judge_info(JUDGE_INFO)
    assert info == {"judge_model": "j", "requests": 2, "failed": 0, "unparsed": 1, "cache_hits": 0, "input_tokens": 40, "output_tokens": 4}


def test_old_and_new_metric_names_side_by_side(two_runs: list[Path], tmp_path: Path) -> None:
    written = write_report(two_runs, tmp_path / "out")
    md = written.markdown.read_text(encoding="utf-8")
    assert [r.label for r in written.runs] == ["model-a", "model-b"]
    table1 = {row[0]: row for row in _table(md, "vlm2-table1")}
    # Avg(8 img) and Δhuman come from the group, whether the subtask rows are numbers or strings
    assert table1["model-a"][2:] == [
        "40.00",
        "41.00",
        "42.00",
        "43.00",
        "44.00",
        "45.00",
        "46.00",
        "47.00",
        "48.00",
        "44.00",
        "N/A",  # Avg(9) ±: these results have no standard errors
        "43.50",
        "-51.16",
    ]
    assert table1["model-b"][11:] == ["54.00", "N/A", "53.50", "-41.16"]
    exact = {row[0]: row[1:] for row in _table(md, "vlm2-exact")}
    assert exact == {"model-a": ["N/A"] * 6, "model-b": ["N/A", "N/A", "51.12", "N/A", "50.50", "N/A"]}
    passk = {row[0]: row[1::2] for row in _table(md, "hev-passk")}  # the values; the ± columns in between are N/A
    assert all(cell == "N/A" for row in _table(md, "hev-passk") for cell in row[2::2])
    assert passk["V2C"] == ["50.0", "57.5", "50.0", "57.5"]
    assert passk["V2T2C"] == ["N/A", "62.5", "N/A", "62.5"]  # humaneval_v_t2c_pass3 reports pass@3,none
    assert passk["V2T2C w/ strong coder"] == ["N/A"] * 4  # strong coder off: None
    unrounded = {row[0]: row[1::2] for row in _table(md, "hev-passk-unrounded")}
    assert unrounded["V2C"] == ["N/A", "N/A", "50.00", "57.54"]
    assert ["model-b", "`humaneval_v_v2c`", "`parse_success_rate_unrounded`", "75.00"] in _table(md, "hev-health")
    gap = {row[0]: row[1:] for row in _table(md, "haerae-overall")}
    assert gap["model-a"] == ["0.2500", "N/A", "0.5000", "N/A", "0.2500", "N/A", "1"]
    assert gap["model-b"] == ["0.3500", "N/A", "0.5000", "N/A", "0.1500", "N/A", "1"]
    judge = _table(md, "haerae-judge")
    assert judge[0][2:6] == ["2", "1", "0", "1"] and judge[1][2:6] == ["N/A", "N/A", "N/A", "0"]  # explicit: no judge record
    # a summary written before levels were recorded: bubblewrap, the only level then
    assert ["model-a", "`humaneval_v_v2c`", "`bubblewrap`", "4", "N/A", "1", "2", "1", "N/A", "N/A", "N/A", "2.500"] == _table(
        md, "health-exec"
    )[0][:12]
    assert "humaneval_v_v2t" not in "".join(r[0] for r in _table(md, "hev-task-type"))


def test_labels_are_disambiguated(tmp_path: Path) -> None:
    for parent in ("x", "y"):
        for name in ("run", "other"):
            _results_file(tmp_path / parent / name, "same-model", "20260101_000000", {"vlm2_bench_gc_mat": {"vlm2_score,none": 1.0}})
    runs = load_runs([tmp_path / "x" / "run", tmp_path / "x" / "other"])
    assert [r.label for r in runs] == ["same-model (run)", "same-model (other)"]
    runs = load_runs([tmp_path / "x" / "run", tmp_path / "y" / "run"])
    assert [r.label for r in runs] == ["same-model (run) #1", "same-model (run) #2"]
    # one input holding two models becomes two runs
    _results_file(tmp_path / "x" / "run", "second-model", "20260101_000000", {"vlm2_bench_gc_mat": {"vlm2_score,none": 2.0}})
    assert [r.label for r in load_runs([tmp_path / "x" / "run"])] == ["same-model", "second-model"]


def test_records_of_the_previous_layout_shared_by_two_runs_are_refused(tmp_path: Path) -> None:
    """Two models judged into one output path by the previous layout (one `judgements/<task>.summary.json` for
    the folder): whose records they are cannot be told, so the report refuses with one line (issue 52)."""
    out = tmp_path / "shared_output"
    tasks, groups = _haerae(0.25, 0.5, JUDGE_INFO)
    _results_file(out, "early", "20260101_000000", tasks, groups, judgements={"haerae_vision_original": dict(JUDGE_SUMMARY, requests=2)})
    later_info = JUDGE_INFO.replace("unparsed=1", "unparsed=0")
    later_tasks, later_groups = _haerae(0.3, 0.6, later_info)
    _results_file(
        out, "later", "20260102_000000", later_tasks, later_groups, judgements={"haerae_vision_original": dict(JUDGE_SUMMARY, unparsed=0)}
    )
    early, _ = load_runs([out])
    with pytest.raises(ReportInputError, match="shared by 2 runs") as caught:
        summaries(early, "judgements")
    assert "\n" not in str(caught.value)
    with pytest.raises(ReportInputError, match="shared by 2 runs"):
        write_report([out], tmp_path / "report")


def test_a_model_run_again_on_a_task_is_a_further_run_beside_the_first(tmp_path: Path) -> None:
    """Issue 52: the same model evaluated twice on a task in one input is two runs, each with its own scores,
    labelled by its first results file's timestamp; invocations of other tasks join the latest run."""
    x = tmp_path / "x"
    _results_file(x / "a", "m", "20260101_000000", {"vlm2_bench_gc_mat": {"vlm2_score,none": 10.0}})
    _results_file(x / "a", "m", "20260102_000000", {"humaneval_v_v2c": {"pass@1,none": 40.0}})  # another task: same run
    _results_file(x / "b", "m", "20260105_000000", {"vlm2_bench_gc_mat": {"vlm2_score,none": 20.0}})
    _results_file(x / "b", "other", "20260105_000000", {"vlm2_bench_gc_mat": {"vlm2_score,none": 30.0}})
    runs = load_runs([x])
    assert [r.label for r in runs] == ["m @ 20260101_000000", "m @ 20260105_000000", "other"]
    assert [metric(r.section("vlm2_bench_gc_mat"), "vlm2_score") for r in runs] == [10.0, 20.0, 30.0]
    assert [metric(r.section("humaneval_v_v2c"), "pass@1") for r in runs] == [40.0, None, None]
    assert [len(r.files) for r in runs] == [2, 1, 1]
    # two inputs holding the same runs: the directory's name is appended to each label
    shutil.copytree(x, tmp_path / "y")
    assert [r.label for r in load_runs([x, tmp_path / "y"])][2:4] == ["other (x)", "m @ 20260101_000000 (y)"]
    md = write_report([x], tmp_path / "out").markdown.read_text(encoding="utf-8")
    assert [row[0] for row in _table(md, "runs")] == ["m @ 20260101_000000", "m @ 20260105_000000", "other"]


def test_output_is_deterministic(two_runs: list[Path], tmp_path: Path) -> None:
    first, second = write_report(two_runs, tmp_path / "one"), write_report(two_runs, tmp_path / "two")
    assert first.markdown.read_bytes() == second.markdown.read_bytes()
    assert first.html.read_bytes() == second.html.read_bytes()
    for name, files in first.plots.items():
        assert files["svg"].read_bytes() == second.plots[name]["svg"].read_bytes(), name
        assert files["svg"].stat().st_size > 1000


def test_png_plots_on_request(two_runs: list[Path], tmp_path: Path) -> None:
    written = write_report(two_runs[:1], tmp_path / "out", formats=("png",))
    assert written.plots and all(files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for files in written.plots.values())
    assert "(plots/vlm2_subtasks.png)" in written.markdown.read_text(encoding="utf-8")
    assert "data:image/png;base64," in written.html.read_text(encoding="utf-8")


def test_bad_inputs_exit_2_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_cli.main([str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert report_cli.main([str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "no lmms-eval results file" in capsys.readouterr().err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x_results.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ReportInputError, match="x_results.json"):
        load_runs([tmp_path / "bad"])


def test_without_matplotlib_report_exits_non_zero_naming_the_extra(
    two_runs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ReportDependencyError):
        write_report(two_runs, tmp_path / "out")
    assert report_cli.main([str(two_runs[0]), "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "pip install 'lmms-tasks[report]'" in err and "matplotlib" in err
    assert not (tmp_path / "out" / "report.md").exists()
    demo_module._write_report(two_runs, tmp_path / "demo_report")  # the demo says why and goes on
    assert "no results report" in capsys.readouterr().out


def test_cli_through_python_m(two_runs: list[Path], tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lmms_tasks", "report", *map(str, two_runs), "--out", str(tmp_path / "out")],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"report: {tmp_path / 'out' / 'report.html'}" in out.stdout and "runs: model-a, model-b" in out.stdout
    assert (tmp_path / "out" / "report.md").stat().st_size > 0


def test_demo_ends_with_a_report_and_prints_its_path(
    two_runs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m lmms_tasks demo` (its lmms-eval runs replaced by the two prepared runs) writes the report last."""
    calls = []

    def fake_run_demo(benchmarks: list[str], work_dir: Path, num_processes: int = 1, quiet: bool = False, models: int = 1) -> Any:
        calls.append(models)
        for run in two_runs:  # both models' runs in one results folder, as the demo writes them
            shutil.copytree(run, tmp_path / "results" / run.name, dirs_exist_ok=True)
        return demo_module.DemoOutcome(run_dirs=dict(zip(demo_module.DEMO_MODELS, two_runs)), results_dir=tmp_path / "results")

    monkeypatch.setattr(demo_module, "run_demo", fake_run_demo)
    assert demo_module.main(["--models", "2", "--work-dir", str(tmp_path / "work")]) == 0
    printed = capsys.readouterr().out
    assert calls == [2] and f"results report: {tmp_path / 'work' / 'report' / 'report.html'}" in printed
    runs = _table((tmp_path / "work" / "report" / "report.md").read_text(encoding="utf-8"), "runs")
    assert [(row[0], row[3]) for row in runs] == [(model, f"`{tmp_path / 'results'}`") for model in ("model-a", "model-b")]  # one input: the results folder
    assert demo_module.main(["--no-report", "--work-dir", str(tmp_path / "w2")]) == 0
    assert "results report" not in capsys.readouterr().out and not (tmp_path / "w2" / "report").exists()
