"""What every section of the report is made of: a section, a headline metric, the ± column (shared by the
benchmarks' modules and `sections`; names no benchmark)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_tasks.utils.commands.report import plots
from lmms_tasks.utils.commands.report.runs import Run, stderr
from lmms_tasks.utils.commands.report.tables import Table

PLUS = " ±"  # suffix of a column holding 1.96 standard errors of the column before it
ERROR_NOTE = "`±`: `1.96` × the metric's standard error (`<metric>_stderr_clt` in the results), half the width of a 95% interval; N/A where the results give none (runs before lmms-tasks reported standard errors)."


@dataclass
class Section:
    anchor: str
    title: str
    intro: str = ""
    blocks: list[Table | plots.Plot | str] = field(default_factory=list)


@dataclass(frozen=True)
class Headline:
    """A task's headline metric for the paired comparison between runs."""

    metric: str  # the metric whose per-document items carry the unit score
    unit: str  # what one unit is: "pair", "task" or "item"
    scale: float  # the metric's maximum (100 for 0-100 scores, 1 for 0-1)
    decimals: int


def run_labels(runs: Sequence[Run]) -> list[str]:
    return [run.label for run in runs]


def colour_of(runs: Sequence[Run], run: Run) -> str:
    return plots.run_colour(list(runs).index(run))


def half_width(section: Mapping[str, Any] | None, name: str) -> float | None:
    """1.96 × the metric's standard error (the ± column and the error bar); None without one."""
    se = stderr(section, name)
    return plots.Z95 * se if se is not None else None
