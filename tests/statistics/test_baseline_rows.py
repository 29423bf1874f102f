"""`--baseline` (issue 29): lmms-eval compares one metric per task (its `score_key`, the headline), so the
printed table shows Baseline, Diff, CI and P_Value only on that metric's row; every other row of the task
(judge_failures, judge_unparsed, the counts) shows N/A there, not "its value minus the headline's baseline
mean" with the headline's CI. Two identical runs through the real CLI: the headline's Diff is +0.0%."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_tasks.utils.compat import baselines
from lmms_tasks.utils.compat.baselines import compared_rows_only
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, offline_env, printed_tables, run_lmms_eval
from lmms_tasks.utils.testing.fixtures import haerae_vision as hv_fixture
from lmms_tasks.utils.testing.fixtures import vlm2_bench as vlm2_fixture
from lmms_tasks.utils.testing.openai_server import StandInServer

PAIRED_COLUMNS = ("Baseline", "Diff", "CI", "P_Value")
TASKS = ("haerae_vision_original", "vlm2_bench_oc_cpr")


def test_the_comparison_stays_on_the_compared_metric() -> None:
    from lmms_eval.utils import make_table

    results = {
        "results": {
            "t": {
                "alias": "t",
                "score,none": 40.0,
                "score_stderr,none": 2.0,
                "failures,none": 0,
                "paired_baseline": "base",
                "paired_baseline_score": 30.0,
                "paired_ci_lower": 5.0,
                "paired_ci_upper": 15.0,
                "paired_pvalue": 0.01,
            },
            "u": {"alias": "u", "score,none": 1.0},
        },
        "configs": {"t": {"score_key": "score"}},
        "n-shot": {"t": 0, "u": 0},
        "higher_is_better": {"t": {"score": True, "failures": False}, "u": {"score": True}},
    }
    (header, body), *_ = printed_tables(make_table(compared_rows_only(results)))
    rows = {(r[0], r[header.index("Metric")]): dict(zip(header, r)) for r in body}
    assert rows[("t", "score")]["Diff"] == "+10.0%" and rows[("t", "score")]["CI"] == "[+5.0%, +15.0%]"
    assert rows[("t", "score")]["P_Value"] == "0.0100*" and rows[("t", "score")]["Stderr"] == "2"  # its own stderr kept
    assert all(rows[("t", "failures")][c] == "N/A" for c in PAIRED_COLUMNS)  # not 0 - 30 = -30.0%
    assert all(rows[("u", "score")][c] == "N/A" for c in PAIRED_COLUMNS)
    assert results["results"]["t"]["alias"] == "t"  # the results themselves are left as they are


@pytest.mark.e2e
def test_two_identical_runs_under_baseline(tmp_path: Path) -> None:
    hv = hv_fixture.write(tmp_path / "hv")
    vlm2 = vlm2_fixture.write(tmp_path / "vlm2")
    scores = ["<score>1/2</score>", "<score>2/2</score>", "<score>0/2</score>"]
    replies = iter(range(10**6))

    def reply(request: object) -> str:
        if request.model == STAND_IN_JUDGE:  # type: ignore[attr-defined]
            return scores[next(replies) % len(scores)]  # cached: the second run gets the first run's verdicts
        return "T"

    with StandInServer(default_reply=reply) as server:
        env = offline_env(server.base_url, tmp_path, {**hv.env, **vlm2.env})
        first = run_lmms_eval(list(TASKS), server.base_url, tmp_path / "a", env=env, in_process=True).check()
        second = run_lmms_eval(list(TASKS), server.base_url, tmp_path / "b", env=env, extra_args=["--baseline", str(tmp_path / "a")], in_process=True).check()
    (header, body), *_ = [t for t in printed_tables(second.stdout) if t[0][0] == "Tasks"]
    assert set(PAIRED_COLUMNS) <= set(header), header
    rows = [dict(zip(header, cells)) for cells in body]
    for task in TASKS:
        headline = second.results["configs"][task]["score_key"]
        assert second.results["results"][task]["paired_baseline_score"] == pytest.approx(first.results["results"][task][f"{headline},none"])
        name = second.results["results"][task].get("alias", task)  # the table shows a task by its alias
        mine = [r for r in rows if r["Tasks"].strip("- ") == name]
        compared = [r for r in mine if r["Metric"] == headline]
        others = [r for r in mine if r["Metric"] != headline]
        assert len(compared) == 1 and compared[0]["Diff"] == "+0.0%" and compared[0]["CI"] != "N/A", compared
        se = second.results["results"][task][f"{headline}_stderr_clt,none"]  # issue 43: the row keeps its standard error
        assert isinstance(se, float) and compared[0]["Stderr_CLT"] == f"{se:.4f}", (compared, se)
        assert others and all(r[c] == "N/A" for r in others for c in PAIRED_COLUMNS), others
    judge_rows = [r for r in rows if r["Metric"] in ("judge_failures", "judge_unparsed")]
    assert len(judge_rows) == 2 and all(r["Diff"] == "N/A" for r in judge_rows)


# -- issue 43: every column of the compared metric stays on its row ---------------------------------------------

COMPARED_KEYS = [  # each statistic lmms-eval writes for a metric, under the metric's filter
    "vlm2_score,none",
    "vlm2_score_stderr,none",
    "vlm2_score_stderr_clt,none",
    "vlm2_score_stderr_clustered,none",
    "vlm2_score_expected_accuracy,none",
    "vlm2_score_consensus_accuracy,none",
    "vlm2_score_internal_variance,none",
    "vlm2_score_consistency_rate,none",
]
OTHER_KEYS = ["vlm2_pos_acc,none", "vlm2_pos_acc_stderr_clt,none", "judge_failures,none", "judge_failures_stderr,none", "vlm2_score_n,none"]


@pytest.mark.parametrize("key", COMPARED_KEYS)
def test_each_statistic_of_the_compared_metric_stays_on_its_row(key: str) -> None:
    values = {"alias": "t", **dict.fromkeys(COMPARED_KEYS + OTHER_KEYS, 1.5), "paired_baseline": "b", "paired_pvalue": 0.5}
    split = compared_rows_only({"results": {"t": values}, "configs": {"t": {"score_key": "vlm2_score"}}})["results"]
    mine, others = split["t"], split["t\u200b"]
    assert key in mine and key not in others
    assert set(mine) == {"alias", "paired_baseline", "paired_pvalue", *COMPARED_KEYS}
    assert set(others) == {"alias", *OTHER_KEYS}


def test_dict_valued_results_stay_in_the_results_and_out_of_the_printed_table() -> None:
    """HAERAE-Vision's `category_scores` / `item_scores` are dicts in results.json (issue 40); the table the
    run prints (the compat `make_table`, the one the CLI and `score` call) has no row for them."""
    from lmms_eval import utils as lmms_utils

    results = {
        "results": {
            "t": {
                "alias": "t",
                "score,none": 0.5,
                "score_stderr_clt,none": 0.1,
                "category_scores,none": {"게임": 0.75, "과학": 0.0},
                "category_scores_stderr_clt,none": "N/A",
                "item_scores,none": {"1": 0.5},
            },
            "u": {"alias": "u", "score,none": 1.0},
        },
        "n-shot": {"t": 0, "u": 0},
        "higher_is_better": {"t": {"score": True, "category_scores": True, "item_scores": True}, "u": {"score": True}},
    }
    printable = baselines.numbers_only(results)
    assert set(printable["results"]["t"]) == {"alias", "score,none", "score_stderr_clt,none", "category_scores_stderr_clt,none"}
    assert printable["results"]["u"] is results["results"]["u"]  # a task without dicts is passed as it is
    assert results["results"]["t"]["category_scores,none"] == {"게임": 0.75, "과학": 0.0}  # the results keep them
    wrapped = baselines._table_with_compared_rows_only(getattr(lmms_utils.make_table, "__wrapped__", lmms_utils.make_table))
    (header, body), *_ = printed_tables(wrapped(results))
    assert [(r[0], r[header.index("Metric")], r[header.index("Value")]) for r in body] == [("t", "score", "0.5"), ("u", "score", "1.0")]
