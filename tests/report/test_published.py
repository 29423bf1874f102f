"""The published numbers the report prints come from one data module per benchmark; these tests pin them
against the fidelity spec's tables (../shared/reference/benchmarks_spec.md, parsed in conftest.py) and
the package READMEs, so a typo in either place fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lmms_tasks.utils.haerae_vision import published as haerae
from lmms_tasks.utils.humaneval_v import published as humaneval
from lmms_tasks.utils.vlm2_bench import HUMAN_OVERALL, SUBTASKS
from lmms_tasks.utils.vlm2_bench import published as vlm2


def _num(text: str) -> float | None:
    cleaned = text.replace("**", "").replace("−", "-").strip()
    if cleaned in ("–", ""):
        return None
    return float(re.match(r"^-?\d+(?:\.\d+)?", cleaned).group(0))


def test_table1_matches_every_reference(table1_references) -> None:
    assert len(table1_references) >= 1
    for source, table in table1_references:
        assert [r.name for r in vlm2.TABLE1] == list(table), source
        for row in vlm2.TABLE1:
            cells = table[row.name]
            for subtask in SUBTASKS:
                assert row.scores[subtask] == _num(cells[vlm2.COLUMN_LABELS[subtask]]), (source, row.name, subtask)
            avg_text = cells["Avg(9)"]
            if "(8" in avg_text:  # the chance row: "33.72 (8 tasks)" is an 8-subtask average
                assert (row.avg, row.avg8) == (None, _num(avg_text)), (source, row.name)
            else:
                assert (row.avg, row.avg8) == (_num(avg_text), None), (source, row.name)
            assert row.delta_human == _num(cells["Δhuman"]), (source, row.name)


def test_the_spec_is_among_the_references_when_it_sits_beside_the_checkout(table1_references) -> None:
    spec = Path(__file__).resolve().parents[3] / "shared" / "reference" / "benchmarks_spec.md"
    names = [name for name, _ in table1_references]
    assert ("benchmarks_spec.md" in names) == spec.is_file()


def test_rows_are_self_consistent() -> None:
    """Every row's Avg is the unweighted mean of its scores and Δhuman = Avg - the human Avg, to Table 1's
    rounding (the chance row averages its 8 image subtasks)."""
    for row in vlm2.TABLE1:
        scores = [v for v in row.scores.values() if v is not None]
        avg = row.avg if row.avg is not None else row.avg8
        assert avg == pytest.approx(sum(scores) / len(scores), abs=0.006), row.name
        assert row.delta_human == pytest.approx(avg - HUMAN_OVERALL, abs=0.006), row.name
    assert vlm2.row("Human").avg == HUMAN_OVERALL and vlm2.row("Chance").scores["pc_vid"] is None
    assert "2502.12084" in vlm2.CITATION and "Table 1" in vlm2.CITATION


def test_humaneval_headline_numbers_match_every_reference(humaneval_references) -> None:
    assert humaneval_references
    for source, text in humaneval_references:
        for model, value in humaneval.HEADLINE_PASS_AT_1:
            assert re.search(rf"{re.escape(model)},? {value} ?% pass@1", text.replace("**", "")), (source, model, value)


def test_humaneval_v1_rows_match_every_reference(humaneval_v1_references) -> None:
    assert len(humaneval_v1_references) == (2 if (Path(__file__).resolve().parents[3] / "shared").is_dir() else 1)
    for source, table in humaneval_v1_references:
        assert [name for name, _, _ in humaneval.V1_PASS_AT_K] == list(table), source
        for name, pass1, pass10 in humaneval.V1_PASS_AT_K:
            assert (pass1, pass10) == (float(table[name]["pass@1"]), float(table[name]["pass@10"])), (source, name)
    assert "not comparable" in humaneval.V1_CITATION and "108 tasks" in humaneval.V1_CITATION


def test_haerae_notebook_table_matches_every_reference(haerae_references) -> None:
    assert haerae_references
    for source, table in haerae_references:
        assert dict(haerae.NOTEBOOK_OVERALL) == table, source
    assert "not comparable" in haerae.CAVEAT
