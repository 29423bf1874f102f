"""The report's statistics on hand-written runs in the format of runs with standard errors: `± ` columns
(1.96 × `<metric>_stderr_clt`), error bars, the paired-difference table from the samples files' unit scores,
breakdowns read from the judgement and execution summaries, and Hangul in the plots (PNG and SVG).

Expected numbers are worked out by hand below (and the t-test p-values checked against scipy's
`ttest_rel`, a different function from the one the report uses)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.commands.report import plots
from lmms_tasks.utils.commands.report.paired import paired_difference
from lmms_tasks.utils.commands.report.runs import load_runs, stderr, unit_scale, unit_scores

CATEGORIES = {"게임": (0.25, 0.5), "음식 문화": (0.75, 1.0)}  # the fixture runs' HAERAE categories (conftest.new_format_run)
HANGUL = sorted({c for name in CATEGORIES for c in name if "\uac00" <= c <= "\ud7a3"})


def sections_of(inputs: list[Path]) -> list[Any]:
    from lmms_tasks.utils.commands.report.sections import build_sections

    return build_sections(load_runs(inputs))


def tables_markdown(inputs: list[Path]) -> str:
    """report.md's tables and prose without drawing a plot (cheap)."""
    from lmms_tasks.utils.commands.report.tables import Table, table_markdown

    blocks = [block for section in sections_of(inputs) for block in section.blocks if not isinstance(block, plots.Plot)]
    return "\n".join(table_markdown(block) if isinstance(block, Table) else str(block) for block in blocks)


def render_plots(inputs: list[Path], names: tuple[str, ...], directory: Path, formats: tuple[str, ...]) -> dict[str, dict[str, Path]]:
    """Only the named plots of the report, drawn as `write_report` draws them."""
    found = [block for section in sections_of(inputs) for block in section.blocks if isinstance(block, plots.Plot) and block.name in names]
    assert sorted(block.name for block in found) == sorted(names)
    return {block.name: plots.render(block, directory, formats) for block in found}


def table(markdown: str, anchor: str) -> tuple[list[str], list[list[str]]]:
    lines = markdown.split(f"<!-- table: {anchor} -->\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    split = lambda row: [c.strip() for c in row.strip().strip("|").split("|")]
    return split(lines[start]), [split(row) for row in lines[start + 2 : end]]


def rows_by_first(markdown: str, anchor: str) -> dict[str, dict[str, str]]:
    header, rows = table(markdown, anchor)
    return {row[0]: dict(zip(header, row)) for row in rows}


# -- ± columns -------------------------------------------------------------------------------------------


def test_stderr_is_read_for_the_metrics_filter_and_only_when_numeric() -> None:
    section = {"pass@3,n6": 57.5, "pass@3_stderr_clt,n6": 2.5, "pass@3_stderr,n6": 0.02, "pass@1,none": 1.0, "pass@1_stderr_clt,none": "N/A", "pass@1_stderr,none": 0.5}
    # lmms-eval's CLT column, the one route; `_stderr` (bootstrap, N/A for our aggregations) is never read
    assert stderr(section, "pass@3") == 2.5 and stderr(section, "pass@1") is None and stderr(section, "pass@2") is None
    assert stderr({"m,none": 1.0}, "m") is None and stderr(None, "m") is None and stderr({"m,none": 1, "m_stderr_clt,none": True}, "m") is None


def test_plus_minus_columns_hold_1_96_standard_errors(stats_report: tuple[Any, str]) -> None:
    _, md = stats_report
    table1 = {row[0]: row for row in table(md, "vlm2-table1")[1]}
    header = table(md, "vlm2-table1")[0]
    assert header[11:15] == ["Avg(9)", "Avg(9) ±", "Avg(8 img)", "Δhuman"]
    assert table1["model-a"][11:13] == ["57.50", "5.88"]  # 1.96 × 3.0
    assert table1["Human"][12] == "–"  # the paper gives no interval
    scores = rows_by_first(md, "vlm2-scores")
    assert (scores["GC-Mat"]["model-a"], scores["GC-Mat"]["model-a ±"], scores["GC-Mat"]["model-b"]) == ("75.00", "24.50", "75.00")
    assert (scores["OC-Cnt"]["model-a"], scores["OC-Cnt"]["model-a ±"]) == ("40.00", "N/A")  # "N/A" in the results
    assert (scores["GC"]["model-b ±"], scores["Avg(8 img)"]["model-a ±"], scores["Δhuman"]["model-a ±"]) == ("24.50", "6.86", "5.88")
    assert scores["Avg(9) exact"]["model-a ±"] == "N/A" and "GC-Trk" not in scores  # a subtask no run has is left out
    groups = rows_by_first(md, "vlm2-groups")
    assert (groups["model-a"]["GC"], groups["model-a"]["GC ±"], groups["model-a"]["OC ±"]) == ("75.00", "24.50", "N/A")
    exact = rows_by_first(md, "vlm2-exact")
    assert (exact["model-a"]["Avg(9) exact"], exact["model-a"]["Avg(9) exact ±"]) == ("50.00", "N/A")
    passk = rows_by_first(md, "hev-passk")
    assert (passk["V2C"]["model-a pass@1"], passk["V2C"]["model-a pass@1 ±"], passk["V2C"]["model-b pass@1"]) == ("50.0", "49.0", "75.0")
    assert passk["V2C"]["model-a pass@3 ±"] == "N/A"
    unrounded = rows_by_first(md, "hev-passk-unrounded")
    assert (unrounded["V2C"]["model-a pass@1"], unrounded["V2C"]["model-a pass@1 ±"]) == ("50.00", "49.00")
    overall = rows_by_first(md, "haerae-overall")
    assert [overall["model-a"][h] for h in table(md, "haerae-overall")[0][1:]] == [
        "0.6000",
        "0.1960",
        "0.7500",
        "0.0980",
        "0.1500",
        "0.1568",
        "1",
        "1",
    ]


def test_old_runs_print_na_in_the_plus_minus_columns(new_format_run: Any, tmp_path: Path) -> None:
    run = new_format_run(tmp_path / "old", "old-model", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.5], stderr_value="N/A")
    md = tables_markdown([run])
    assert rows_by_first(md, "vlm2-table1")["old-model"]["Avg(9) ±"] == "N/A"
    assert rows_by_first(md, "hev-passk")["V2C"]["old-model pass@1 ±"] == "N/A"
    assert rows_by_first(md, "haerae-overall")["old-model"]["Original ±"] == "N/A"
    assert "paired" not in [section.anchor for section in sections_of([run])]  # one run: nothing to pair


def test_error_bars_are_drawn_only_where_there_is_a_standard_error(
    stats_report: tuple[Any, str], new_format_run: Any, tmp_path: Path
) -> None:
    written, _ = stats_report
    for name in ("vlm2_subtasks", "humaneval_v_passk", "haerae_vision_gap"):
        assert "LineCollection" in written.plots[name]["svg"].read_text(encoding="utf-8"), f"{name}: no error bars"
    run = new_format_run(tmp_path / "old", "old-model", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.5], stderr_value="N/A")
    old = render_plots([run], ("vlm2_subtasks", "humaneval_v_passk", "haerae_vision_gap"), tmp_path, ("svg",))
    for name, files in old.items():
        assert "LineCollection" not in files["svg"].read_text(encoding="utf-8"), name


# -- breakdowns: HAERAE-Vision categories from the results, HumanEval-V from the execution summaries --------


def test_breakdowns_are_read_from_the_results_and_the_summaries(stats_report: tuple[Any, str]) -> None:
    _, md = stats_report
    categories = rows_by_first(md, "haerae-category")
    assert categories["게임"]["model-a original"] == "0.2500" and categories["음식 문화"]["model-b explicit"] == "1.0000"
    header, rows = table(md, "hev-task-type")
    assert [row[:3] + row[3:] for row in rows] == [
        ["V2C", "pass@1", "Aggregation", "100.00", "100.00"],
        ["V2C", "pass@1", "Iteration", "0.00", "0.00"],
    ]
    header, rows = table(md, "haerae-judge")
    judge = {(row[0], row[1]): dict(zip(header, row)) for row in rows}
    original, explicit = judge[("model-a", "`haerae_vision_original`")], judge[("model-a", "`haerae_vision_explicit`")]
    assert (original["judge_failures"], original["judge_unparsed"], original["Parse failures"], original["Judged"]) == ("0", "1", "1", "5")
    assert (explicit["judge_failures"], explicit["judge_unparsed"]) == ("1", "N/A")  # the task has no judge_unparsed


# -- paired differences ----------------------------------------------------------------------------------


def test_paired_difference_by_hand() -> None:
    # differences 0.3, 0.3, 0.3, 0.1, 0: mean 0.2, SD sqrt(0.08 / 4), SE = SD / sqrt(5) = 0.0632456; t = 3.1623 on 4 df
    result = paired_difference([0.2, 0.4, 0.6, 0.8, 1.0], [0.5, 0.7, 0.9, 0.9, 1.0])
    assert result.n == 5 and result.difference == pytest.approx(0.2) and result.se == pytest.approx(0.0632456, abs=1e-7)
    assert (result.ci_low, result.ci_high) == (
        pytest.approx(0.2 - 2.7764451 * 0.0632456, abs=1e-6),
        pytest.approx(0.2 + 2.7764451 * 0.0632456, abs=1e-6),
    )
    assert result.p_value == pytest.approx(0.0341094, abs=1e-6) and result.within_noise is False
    from scipy import stats as scipy_stats  # a test dependency (the [test] extra)
    assert result.p_value == pytest.approx(scipy_stats.ttest_rel([0.5, 0.7, 0.9, 0.9, 1.0], [0.2, 0.4, 0.6, 0.8, 1.0]).pvalue, rel=1e-9)
    scaled = paired_difference([1, 1, 0, 0], [1, 1, 1, 0], scale=100.0)  # differences 0, 0, 100, 0: SE 25, t = 1 on 3 df
    assert (scaled.mean_baseline, scaled.mean_run, scaled.difference, scaled.se) == (50.0, 75.0, 25.0, 25.0)
    assert scaled.p_value == pytest.approx(0.3910022, abs=1e-6) and scaled.within_noise is True
    same = paired_difference([1, 0], [1, 0])
    assert (same.se, same.p_value, same.within_noise) == (0.0, 1.0, True)
    shifted = paired_difference([0, 0, 0], [1, 1, 1])  # no spread, a difference: outside noise
    assert (shifted.ci_low, shifted.ci_high, shifted.p_value, shifted.within_noise) == (1.0, 1.0, 0.0, False)
    single = paired_difference([0], [1])
    assert (single.se, single.p_value, single.within_noise) == (None, None, None)
    with pytest.raises(ValueError):
        paired_difference([1, 2], [1])


def test_unit_scale_matches_the_headline() -> None:
    assert unit_scale([([1.0, 0.0], 50.0), ([1.0, 1.0], 100.0)], 100.0) == 100.0  # 0/1 units of a 0-100 metric
    assert unit_scale([([50.0, 0.0], 25.0)], 100.0) == 1.0  # units already on the metric's scale
    assert unit_scale([([0.25, 0.75], 0.5)], 1.0) == 1.0
    assert unit_scale([([0.0, 1.0], None)], 100.0) == 100.0 and unit_scale([([0.0, 0.0], 0.0)], 100.0) == 100.0  # undecided: 0/1 convention


def test_the_paired_table_compares_the_units_both_runs_scored(stats_report: tuple[Any, str]) -> None:
    _, md = stats_report
    header, rows = table(md, "paired-2")
    assert header == [
        "Task",
        "Metric",
        "Unit",
        "n",
        "model-a",
        "model-b",
        "Difference",
        "SE",
        "95% CI low",
        "95% CI high",
        "p",
        "Within noise",
    ]
    assert rows == [
        # pair scores a 1,0,1,1 / b 1,1,1,0: differences 0,100,0,-100 (×100: a 0-100 metric), SD 81.65, SE 40.82, t(0.975, 3) = 3.1824
        [
            "`haerae_vision_original`",
            "`haerae_vision_score`",
            "item",
            "5",
            "0.6000",
            "0.8000",
            "0.2000",
            "0.0632",
            "0.0244",
            "0.3756",
            "0.0341",
            "no",
        ],
        ["`humaneval_v_v2c`", "`pass@1`", "task", "4", "50.00", "75.00", "25.00", "25.00", "-54.56", "104.56", "0.3910", "yes"],
        ["`vlm2_bench_gc_mat`", "`vlm2_score`", "pair", "4", "75.00", "75.00", "0.00", "40.82", "-129.92", "129.92", "1.0000", "yes"],
    ]
    assert "Paired differences: model-b minus model-a" in md


def test_unit_scores_skip_documents_without_a_score(new_format_run: Any, tmp_path: Path) -> None:
    root = new_format_run(tmp_path / "a", "model-a", gc=[1, 0, 1], hev=[1], haerae=[0.5])
    (run,) = load_runs([root])
    found = unit_scores(run, "vlm2_bench_gc_mat", "vlm2_score")
    assert found is not None and found.metric == "vlm2_score" and found.scores == {0: 1.0, 2: 0.0, 4: 1.0}
    assert unit_scores(run, "vlm2_bench_oc_cnt", "vlm2_score") is None  # no samples file


def test_runs_of_other_documents_are_not_compared(new_format_run: Any, tmp_path: Path) -> None:
    a = new_format_run(tmp_path / "a", "model-a", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.25])
    b = new_format_run(tmp_path / "b", "model-b", gc=[1, 1], hev=[1, 1], haerae=[0.5, 0.5])
    samples = b / "model-b" / "20260301_120000_samples_vlm2_bench_gc_mat.jsonl"
    samples.write_text(samples.read_text(encoding="utf-8").replace('"q0"', '"other"'), encoding="utf-8")
    broken = b / "model-b" / "20260301_120000_samples_humaneval_v_v2c.jsonl"
    broken.write_text('{"doc_id": 0, "pass@1": {"score": 1}}\nnot json\n', encoding="utf-8")
    md = tables_markdown([a, b])
    tasks = [row[0] for row in table(md, "paired-2")[1]]
    assert tasks == ["`haerae_vision_original`"]
    assert "`vlm2_bench_gc_mat` (model-b): `doc_id` 0 is another document in each run (q_id); not compared" in md
    assert re.search(r"`humaneval_v_v2c`: .*samples_humaneval_v_v2c\.jsonl line 2: not JSON", md)


def test_no_shared_unit_scores_says_why(new_format_run: Any, tmp_path: Path) -> None:
    a = new_format_run(tmp_path / "a", "model-a", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.25])
    b = new_format_run(tmp_path / "b", "model-b", gc=[1, 1], hev=[1, 1], haerae=[0.5, 0.5])
    for path in b.rglob("*_samples_*.jsonl"):
        path.unlink()
    md = tables_markdown([a, b])
    assert "<!-- table: paired" not in md and "no paired comparison is made" in md


# -- Hangul in the plots ---------------------------------------------------------------------------------


def test_korean_labels_are_drawn_with_a_font_that_has_them(stats_report: tuple[Any, str]) -> None:
    """No glyph falls back to an empty box (the report fixture turns MissingGlyphWarning into an error),
    the Korean characters are drawn from NanumGothic (koreanize-matplotlib's), and the SVG carries their
    outlines (text as paths: no font needed to view it)."""
    written, _ = stats_report
    font_file = plots.korean_font_file()
    assert font_file is not None, "koreanize-matplotlib is not installed: pip install -e '.[test]'"
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    # the font matplotlib uses for each character: the first of the fallback list that has it
    chain = font_manager.fontManager._find_fonts_by_props(font_manager.FontProperties(family=plots.font_families()))
    for char in HANGUL:
        used = next((path for path in chain if FT2Font(str(path)).get_char_index(ord(char))), None)
        assert used is not None and Path(used).name == font_file.name, (char, used)
    svg = written.plots["haerae_vision_gap"]["svg"].read_text(encoding="utf-8")
    font = FT2Font(str(font_file))
    name = font.postscript_name
    for char in HANGUL:
        assert f'id="{name}-{font.get_char_index(ord(char)):x}"' in svg, f"no outline of {char!r} in the SVG"
    assert all(category in svg for category in CATEGORIES)  # the labels' text, kept in comments beside the outlines
    png = written.plots["haerae_vision_gap"]["png"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_label_without_a_glyph_warns(new_format_run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: with DejaVu Sans alone, the Korean names have no glyphs."""
    monkeypatch.setattr(plots, "fallback_families", lambda: ())
    run = new_format_run(tmp_path / "a", "model-a", gc=[1], hev=[1], haerae=[0.5])
    with pytest.warns(plots.MissingGlyphWarning, match=r"plot haerae_vision_gap: no font has .*게"):
        render_plots([run], ("haerae_vision_gap",), tmp_path, ("png",))


# -- issue 43: the paired table pairs by doc_id, whatever order the samples files hold -------------------------

PAIRED_ROWS = [  # the rows of test_the_paired_table_compares_the_units_both_runs_scored (same runs)
    ["`haerae_vision_original`", "`haerae_vision_score`", "item", "5", "0.6000", "0.8000", "0.2000", "0.0632", "0.0244", "0.3756", "0.0341", "no"],
    ["`humaneval_v_v2c`", "`pass@1`", "task", "4", "50.00", "75.00", "25.00", "25.00", "-54.56", "104.56", "0.3910", "yes"],
    ["`vlm2_bench_gc_mat`", "`vlm2_score`", "pair", "4", "75.00", "75.00", "0.00", "40.82", "-129.92", "129.92", "1.0000", "yes"],
]


def _reorder(run: Path, order: Any) -> None:
    for path in run.rglob("*_samples_*.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(order(lines)), encoding="utf-8")


@pytest.mark.parametrize(
    ("order_a", "order_b"),
    [
        (list, lambda lines: lines[::-1]),
        (lambda lines: lines[::-1], list),
        (lambda lines: lines[1:] + lines[:1], lambda lines: lines[2:] + lines[:2]),
    ],
    ids=["b reversed", "a reversed", "both rotated"],
)
def test_the_paired_table_pairs_by_document_not_by_line(order_a: Any, order_b: Any, new_format_run: Any, tmp_path: Path) -> None:
    a = new_format_run(tmp_path / "a", "model-a", gc=[1, 0, 1, 1], hev=[1, 1, 0, 0], haerae=[0.2, 0.4, 0.6, 0.8, 1.0])
    b = new_format_run(tmp_path / "b", "model-b", gc=[1, 1, 1, 0], hev=[1, 1, 1, 0], haerae=[0.5, 0.7, 0.9, 0.9, 1.0])
    _reorder(a, order_a)
    _reorder(b, order_b)
    assert table(tables_markdown([a, b]), "paired-2")[1] == PAIRED_ROWS


def test_the_paired_table_pairs_the_documents_both_runs_scored_out_of_order(new_format_run: Any, tmp_path: Path) -> None:
    a = new_format_run(tmp_path / "a", "model-a", gc=[1, 0], hev=[1, 0], haerae=[0.2, 0.4, 0.6, 0.8, 1.0])
    b = new_format_run(tmp_path / "b", "model-b", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.7, 0.9, 0.9, 1.0])
    samples = b / "model-b" / "20260301_120000_samples_haerae_vision_original.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    samples.write_text("".join([lines[3], lines[1], lines[4], lines[2]]), encoding="utf-8")  # doc 0 not scored in b
    rows = {row[0]: row for row in table(tables_markdown([a, b]), "paired-2")[1]}
    # docs 1-4: a 0.4, 0.6, 0.8, 1.0; b 0.7, 0.9, 0.9, 1.0 -> differences 0.3, 0.3, 0.1, 0.0: mean 0.175, SD 0.15, SE 0.075
    assert rows["`haerae_vision_original`"][3:8] == ["4", "0.7000", "0.8750", "0.1750", "0.0750"]


def test_a_category_without_judged_items_is_na_not_zero(new_format_run: Any, tmp_path: Path) -> None:
    """A category none of whose items was judged (all failed) has no mean in the results: the category table
    shows N/A for it, never 0.0000, which would read as 'every answer wrong' (issue 43)."""
    import json

    a = new_format_run(tmp_path / "a", "model-a", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.25])
    b = new_format_run(tmp_path / "b", "model-b", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.25])
    (results,) = (b / "model-b").glob("*_results.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    data["results"]["haerae_vision_explicit"]["category_scores,none"] = {"게임": 0.0}  # 음식 문화: every request failed; 게임: judged, scored 0
    results.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    rows = rows_by_first(tables_markdown([a, b]), "haerae-category")
    assert rows["음식 문화"]["model-b explicit"] == "N/A" and rows["음식 문화"]["model-a explicit"] == "1.0000"
    assert rows["게임"]["model-b explicit"] == "0.0000" and rows["게임"]["model-b original"] == "0.2500"


def test_the_category_table_is_read_from_the_results_not_the_judgement_summary(new_format_run: Any, tmp_path: Path) -> None:
    """HAERAE-Vision's `category_scores` has one home, results.json (issue 40): a judgement summary that
    holds a category table (an older run's, or a stray one) is not read for it, and a run whose results have
    none shows N/A even when its summary has one."""
    import json

    a = new_format_run(tmp_path / "a", "model-a", gc=[1, 0], hev=[1, 0], haerae=[0.5, 0.25])
    summary = a / "judgements" / "haerae_vision_original.summary.json"
    data = json.loads(summary.read_text(encoding="utf-8"))
    summary.write_text(json.dumps({**data, "category_scores": {"게임": 0.9, "수학": 0.1}}, ensure_ascii=False), encoding="utf-8")
    (results,) = (a / "model-a").glob("*_results.json")
    payload = json.loads(results.read_text(encoding="utf-8"))
    del payload["results"]["haerae_vision_explicit"]["category_scores,none"]
    results.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    rows = rows_by_first(tables_markdown([a]), "haerae-category")
    assert set(rows) == set(CATEGORIES)  # no 수학: nothing from the summary
    assert [rows[c]["model-a original"] for c in sorted(CATEGORIES)] == [f"{o:.4f}" for o, _ in (CATEGORIES[c] for c in sorted(CATEGORIES))]
    assert {rows[c]["model-a explicit"] for c in CATEGORIES} == {"N/A"}
