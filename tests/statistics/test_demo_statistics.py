"""Standard errors, the printed table, `--baseline` and `--repeats`, checked on real lmms-eval runs.

The session's two-model demo (`demo_two_models`) gives the results and samples of every task and group;
one more run compares the second model with the first (`--baseline`), and one small run samples three
responses per question (`--repeats 3`). Every expected number is computed here from the samples files and
the scripted replies: the standard error of a mean over units is SD(unit scores, ddof=1) / sqrt(n).
"""

from __future__ import annotations

import importlib
import math
import re
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from lmms_tasks.utils.testing.demo import DEMO_ENV, DEMO_MODELS
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL, RunResult, offline_env, printed_tables, run_lmms_eval
from lmms_tasks.utils.testing.openai_server import StandInServer

pytestmark = pytest.mark.e2e

COUNTS = {"judge_failures", "judge_unparsed"}  # group metrics that are counts, not estimates


def _se(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def _runs(demo: tuple[Path, Any], model: str) -> list[RunResult]:
    return demo[1].runs_of(model)


def _sections(run: RunResult) -> dict[str, dict[str, Any]]:
    return {**run.results.get("results", {}), **run.results.get("groups", {})}


def _headline_key(run: RunResult, task: str) -> str:
    """`<score_key>,<filter>` of a task: its headline metric (the YAML's score_key) under its filter."""
    score_key = run.results["configs"][task]["score_key"]
    (key,) = [k for k in run.results["results"][task] if k.split(",")[0] == score_key]
    return key


def _unit_scores(run: RunResult, task: str, score_key: str) -> list[float]:
    return [s[score_key][score_key] for s in run.samples[task] if isinstance(s.get(score_key), dict) and score_key in s[score_key]]


def test_every_headline_has_its_standard_error_computed_from_the_units(demo_two_models: tuple[Path, Any]) -> None:
    checked = []
    for run in _runs(demo_two_models, DEMO_MODELS[0]):
        for task in run.results["results"]:
            if task not in run.results["configs"]:
                continue  # a group
            key = _headline_key(run, task)
            metric, flt = key.split(",")
            units = _unit_scores(run, task, metric)
            assert len(units) >= 2, task
            row = run.results["results"][task]
            # lmms-eval's CLT over the per-unit scores in the samples file, on the metric's scale: the one route
            # (its bootstrap `_stderr` is N/A for task-defined aggregations: no second route)
            assert row[f"{metric}_stderr_clt,{flt}"] == pytest.approx(_se(units)), task
            assert row[f"{metric}_stderr,{flt}"] == "N/A", task
            # and the units' mean is the headline (pass@k and description rate: before the official rounding)
            assert sum(units) / len(units) == pytest.approx(row[key], abs=0.05), task
            checked.append(task)
    assert len(checked) == 9 + 10 + 2 + 2  # every task of the three benchmarks, HumanEval-V v1 included


def test_every_group_estimate_has_a_numeric_standard_error(demo_two_models: tuple[Path, Any]) -> None:
    seen = set()
    for run in _runs(demo_two_models, DEMO_MODELS[0]):
        sections = _sections(run)
        for group, subtasks in run.results.get("group_subtasks", {}).items():
            if not subtasks or group not in run.results.get("groups", {}):
                continue
            for key in run.results["groups"][group]:
                metric, _, flt = key.partition(",")
                if not flt or "_stderr" in metric or metric in COUNTS:
                    continue
                se = run.results["groups"][group][f"{metric}_stderr_clt,{flt}"]
                assert isinstance(se, float), (group, metric, se)
                seen.add((group, metric))
        # VLM2-Bench groups: independent subtasks, sqrt(sum se_i^2) / k over their leaf subtasks
        for group in ("vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc"):
            if group in sections:
                leaves = run.results["group_subtasks"][group]
                expected = math.sqrt(sum(sections[t]["vlm2_score_stderr_clt,none"] ** 2 for t in leaves)) / len(leaves)
                assert sections[group]["vlm2_score_stderr_clt,none"] == pytest.approx(expected)
        # HAERAE-Vision's gap: paired by question_idx over the items both variants had judged
        if "haerae_vision" in sections:
            scores = {
                variant: {s["haerae_vision_score"]["question_idx"]: s["haerae_vision_score"]["haerae_vision_score"] for s in run.samples[f"haerae_vision_{variant}"]}
                for variant in ("original", "explicit")
            }
            diffs = [scores["explicit"][q] - scores["original"][q] for q in scores["original"]]
            assert sections["haerae_vision"]["underspec_gap,none"] == pytest.approx(sum(diffs) / len(diffs))
            assert sections["haerae_vision"]["underspec_gap_stderr_clt,none"] == pytest.approx(_se(diffs))
    assert {("vlm2_bench", "vlm2_score"), ("vlm2_bench", "vlm2_gap_to_human"), ("haerae_vision", "underspec_gap")} <= seen


NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$")
NUMERIC_COLUMNS = ("Value", "Stderr", "Stderr_CLT", "Stderr_Clustered", "EA", "CA", "IV", "CR")


def test_the_printed_tables_hold_only_numbers(demo_two_models: tuple[Path, Any]) -> None:
    """No string or dict in a value cell of the task and group tables, for both demo models; a group that
    reports no number (humaneval_v: no cross-setting average) is a heading row with no metric."""
    rows = 0
    for model in DEMO_MODELS:
        for run in _runs(demo_two_models, model):
            tables = [t for t in printed_tables(run.stdout) if t[0][0] in ("Tasks", "Groups")]
            assert tables and tables[0][0][0] == "Tasks", run.stdout[-2000:]
            for header, body in tables:
                for cells in body:
                    row = dict(zip(header, cells))
                    if not row["Metric"]:
                        assert row[header[0]].strip("- ") == "humaneval_v" and row["Value"] == "", cells
                        continue
                    rows += 1
                    for column in NUMERIC_COLUMNS:
                        if column in row:
                            assert NUMBER.match(row[column]) or (column != "Value" and row[column] == "N/A"), (column, cells)
    assert rows > 150


# -- --baseline ----------------------------------------------------------------------------------------------

BASELINE_TASKS = ("vlm2_bench_oc_cpr", "humaneval_v_v2c", "haerae_vision_original")


def _script_demo_server(server: StandInServer, root: Path) -> dict[str, str]:
    """The demo's fixtures and replies for both models, as `run_demo` scripts them; the data environment."""
    env: dict[str, str] = {}
    for benchmark in ("vlm2_bench", "humaneval_v", "haerae_vision"):
        module = importlib.import_module(f"lmms_tasks.utils.testing.fixtures.{benchmark}")
        fixtures = module.write(root / benchmark)
        module.script_demo_second_model(server, fixtures, DEMO_MODELS[1])
        module.script_demo(server, fixtures)
        env.update(fixtures.env)
    return env


@pytest.fixture(scope="module")
def compared(demo_two_models: tuple[Path, Any], tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The second demo model again, on one task per benchmark, with `--baseline` the first model's output."""
    work = tmp_path_factory.mktemp("baseline")
    first = demo_two_models[1].run_dirs[DEMO_MODELS[0]]
    with StandInServer(default_reply="") as server:
        data_env = _script_demo_server(server, work / "data")
        env = offline_env(server.base_url, work, data_env=data_env, extra=DEMO_ENV)
        run = run_lmms_eval(list(BASELINE_TASKS), server.base_url, work / "out", env=env, model_version=DEMO_MODELS[1], extra_args=["--baseline", str(first)], in_process=True)
    return run.check()


def _paired_by_hand(baseline_run: RunResult, current: RunResult, task: str) -> dict[str, float]:
    """lmms-eval's paired t-test done by hand: per unit, current score - baseline score (both as `score` / 100)."""
    metric = _headline_key(current, task).split(",")[0]
    base = {s["doc_id"]: s["unit_score"] for s in baseline_run.samples[task] if "unit_score" in s}
    pairs = [(s[metric]["score"], base[s["doc_id"]]) for s in current.samples[task] if "score" in s.get(metric, {}) and s["doc_id"] in base]
    n = len(pairs)
    diffs = [c - b for c, b in pairs]
    mean = sum(diffs) / n
    se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)
    t_crit = stats.t.ppf(0.975, n - 1)
    return {
        "n": n,
        "baseline": 100 * sum(b for _, b in pairs) / n,
        "lower": 100 * (mean - t_crit * se),
        "upper": 100 * (mean + t_crit * se),
        "p": 2 * (1 - stats.t.cdf(abs(mean / se), n - 1)),
        "diff": 100 * mean,
    }


def test_baseline_compares_the_same_units_and_prints_a_row_per_task(compared: RunResult, demo_two_models: tuple[Path, Any]) -> None:
    first = {task: run for run in _runs(demo_two_models, DEMO_MODELS[0]) for task in run.samples}
    for task in BASELINE_TASKS:
        expected = _paired_by_hand(first[task], compared, task)
        row = compared.results["results"][task]
        key = _headline_key(compared, task)
        assert expected["n"] >= 2
        assert row["paired_baseline"] == DEMO_MODELS[0]  # lmms-eval names a local baseline by its file or directory
        assert row["paired_baseline_score"] == pytest.approx(expected["baseline"]), task
        assert row["paired_ci_lower"] == pytest.approx(expected["lower"]), task
        assert row["paired_ci_upper"] == pytest.approx(expected["upper"]), task
        assert row["paired_pvalue"] == pytest.approx(expected["p"]), task
        # the units' means are the two headlines (on the metric's scale), so the difference is theirs
        assert row["paired_baseline_score"] == pytest.approx(first[task].results["results"][task][key], abs=0.05), task
        assert expected["diff"] == pytest.approx(row[key] - row["paired_baseline_score"], abs=0.05), task
    # the printed table shows the comparison on each task's row
    (tasks_table,) = [t for t in printed_tables(compared.stdout) if t[0][0] == "Tasks"]
    header, body = tasks_table
    assert {"Baseline", "Diff", "CI", "P_Value"} <= set(header)
    compared_rows = [dict(zip(header, cells)) for cells in body if dict(zip(header, cells))["Baseline"] != "N/A"]
    assert {r["Tasks"].strip("- ") for r in compared_rows} >= {"vlm2_bench_oc_cpr", "humaneval_v_v2c"}


# -- --repeats (k-samples stability) -------------------------------------------------------------------------


def test_repeats_give_stability_metrics_and_leave_the_headline_alone(tmp_path: Path) -> None:
    from lmms_tasks.utils.testing.fixtures import haerae_vision as hv
    from lmms_tasks.utils.testing.fixtures import vlm2_bench as vlm2

    vlm2_set = vlm2.write(tmp_path / "vlm2")
    hv_set = hv.write(tmp_path / "hv")
    # OC-Cpr pairs 1 and 2 (3_p is incomplete, oc_4_p is dropped): three responses each, in turn
    cpr = {("1_p", "T"): ["T", "T", "F"], ("1_n", "F"): ["F", "F", "F"], ("2_p", "F"): ["T", "F", "F"], ("2_n", "T"): ["T", "T", "T"]}
    hv_items = hv_set.records[hv.RECORDS_KEY][:4]
    judge_scores = {0: ["1/2", "1/2", "2/2"], 1: ["0/2", "2/2", "0/2"], 2: ["2/2"] * 3, 3: ["0/2"] * 3}  # per item, per response
    with StandInServer(default_reply="T") as server:
        for (q_id, gt), replies in cpr.items():
            server.script(lambda r, t=vlm2.question_tag("oc_cpr", q_id, gt): r.model == STAND_IN_MODEL and t in r.text, replies)
        for index, item in enumerate(hv_items):
            question = item["question_original"].strip()
            server.script(lambda r, q=question: r.model == STAND_IN_MODEL and q in r.text, [f"답 {index}-{k}" for k in range(3)])
            for k, score in enumerate(judge_scores[index]):
                server.script(lambda r, q=item["question_original"], a=f"답 {index}-{k}": r.model == STAND_IN_JUDGE and f"[INPUT]\n{q}\n" in r.text and a in r.text, f"<score>{score}</score>")
        env = offline_env(server.base_url, tmp_path, data_env={**vlm2_set.env, **hv_set.env})
        run = run_lmms_eval(
            ["vlm2_bench_oc_cpr", "haerae_vision_original"], server.base_url, tmp_path / "out", env=env, limit=4, num_concurrent=1, extra_args=["--repeats", "3"], in_process=True
        ).check()
    # OC-Cpr: per response k, pair correct iff both members are: pair 1 [1, 1, 0], pair 2 [0, 1, 1]
    cpr_row = run.results["results"]["vlm2_bench_oc_cpr"]
    assert cpr_row["vlm2_score,none"] == pytest.approx(50.0)  # the headline: first responses only (pair 1 yes, 2 no)
    per_unit = [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]
    assert cpr_row["vlm2_score_expected_accuracy,none"] == pytest.approx(4 / 6)
    assert cpr_row["vlm2_score_consensus_accuracy,none"] == pytest.approx(1.0)  # both pairs right in 2 of 3
    assert cpr_row["vlm2_score_consistency_rate,none"] == pytest.approx(0.0)
    iv = sum(_se(u) ** 2 * len(u) for u in per_unit) / len(per_unit)  # mean within-unit variance (ddof=1)
    assert cpr_row["vlm2_score_internal_variance,none"] == pytest.approx(iv)
    # HAERAE-Vision: every item is a unit; judge scores per response: 0.5 0.5 1 | 0 1 0 | 1 1 1 | 0 0 0
    hv_row = run.results["results"]["haerae_vision_original"]
    assert hv_row["haerae_vision_score,none"] == pytest.approx((0.5 + 0.0 + 1.0 + 0.0) / 4)  # first responses
    assert hv_row["haerae_vision_score_expected_accuracy,none"] == pytest.approx(6 / 12)
    assert hv_row["haerae_vision_score_consensus_accuracy,none"] == pytest.approx(0.5)  # sums 2 and 3 exceed 1.5
    assert hv_row["haerae_vision_score_consistency_rate,none"] == pytest.approx(0.5)  # the last two items
    # the responses' judgements are kept apart from the run's own
    assert len(list((tmp_path / "out").rglob("repeats/*/judgements/haerae_vision_original.jsonl"))) == 3
