"""The report's HumanEval-V section: pass@k per setting (v2), v1's two metrics, breakdowns, execution health."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_tasks.utils.commands.report import plots
from lmms_tasks.utils.commands.report.common import ERROR_NOTE, PLUS, Headline, Section, colour_of, half_width, run_labels
from lmms_tasks.utils.commands.report.runs import (
    Run,
    breakdown,
    is_number,
    metric,
)
from lmms_tasks.utils.commands.report.tables import NONE, OFFICIAL, SCORE, Table, fmt
from lmms_tasks.utils.commands.tasks import benchmark_of, declared_variants, humaneval_v1_tasks
from lmms_tasks.utils.humaneval_v import published as humaneval_published
from lmms_tasks.utils.humaneval_v.prompts import TABLE as HUMANEVAL_TABLE

PLOTS = ("humaneval_v_passk", "humaneval_v_by_task_type", "humaneval_v_by_capability")
BENCHMARK = "HumanEval-V"
UNIT_NOTE = "a HumanEval-V task"

HUMANEVAL_PREFIX = "humaneval_v_"
# (setting label, task stem, strong coder?), from the settings' table (humaneval_v/settings.csv), in its order: V2T's
# pass@k is its strong coder's (V2T itself writes descriptions)
HUMANEVAL_SETTINGS = tuple((row["report_label"], stem, stem == "v2t") for stem, row in HUMANEVAL_TABLE.items())


def humaneval_source(stem: str, strong: bool, k: int) -> tuple[str, str]:
    """(task, metric) holding pass@k of a setting."""
    task = declared_variants("humaneval_v", ("setting", "k")).get((stem, k), f"{HUMANEVAL_PREFIX}{stem}")  # as its YAML declares
    return task, (f"strong_coder_pass_at_{k}" if strong else f"pass@{k}")


# v1 (the original 108-task release): (column, task, metric)
HUMANEVAL_V1 = tuple((f"pass@{k}", task, f"pass@{k}") for k, task in humaneval_v1_tasks().items())


def _is_humaneval(task: str) -> bool:
    """Whether HumanEval-V's folder declares the task (by its YAML's place, never by its name)."""
    return benchmark_of(task) == "humaneval_v"


def _humaneval_runs(runs: Sequence[Run]) -> list[Run]:
    """Runs with a v2 task (a HumanEval-V task that is not one of v1's)."""
    v1_tasks = {task for _, task, _ in HUMANEVAL_V1}
    return [run for run in runs if any(_is_humaneval(name) and name not in v1_tasks for name in run.owner)]


def _humaneval_v1_runs(runs: Sequence[Run]) -> list[Run]:
    return [run for run in runs if any(run.has(task) for _, task, _ in HUMANEVAL_V1)]


def humaneval_section(runs: Sequence[Run]) -> Section | None:
    have, have_v1 = _humaneval_runs(runs), _humaneval_v1_runs(runs)
    if not have and not have_v1:
        return None
    section = Section(
        "humaneval-v",
        "HumanEval-V",
        "v2: pass@1 (greedy) and pass@3 (6 samples) per setting; v1 (the original 108 tasks, not comparable with v2): "
        "pass@1 (greedy) and pass@10 (20 samples); all as the official scorers round them (0-100). N/A where a run did "
        "not evaluate the setting or the metric is None (the strong coder off, or fewer samples than k).",
    )
    if have:
        _humaneval_v2_blocks(section, runs, have)
    if have_v1:
        section.blocks.append(_humaneval_v1_table(have_v1))
    _humaneval_health(section, [run for run in runs if run in have or run in have_v1])
    if have:
        published = Table("hev-published", "HumanEval-V published v2 headline numbers", ["Model", "pass@1"])
        for name, value in humaneval_published.HEADLINE_PASS_AT_1:
            published.add(name, fmt(value, OFFICIAL))
        published.note = f"Source: {humaneval_published.CITATION}; per-model table: <{humaneval_published.LEADERBOARD_URL}>."
        section.blocks.append(published)
    return section


def _humaneval_v1_table(have: Sequence[Run]) -> Table:
    """v1 runs beside the published v1 rows (pass@1, pass@10; the runs' unrounded values too)."""
    table = Table(
        "hev-v1",
        "HumanEval-V v1 (108 tasks): runs and the published v1 numbers",
        ["Model", "Source", "pass@1", "pass@10", "pass@1 unrounded", "pass@10 unrounded"],
    )
    for run in have:
        rounded = [fmt(metric(run.section(task), name), OFFICIAL) for _, task, name in HUMANEVAL_V1]
        raw = [fmt(metric(run.section(task), f"{name}_unrounded"), SCORE) for _, task, name in HUMANEVAL_V1]
        table.add(run.label, "run", *rounded, *raw)
    for name, pass1, pass10 in humaneval_published.V1_PASS_AT_K:
        table.add(name, "published v1", fmt(pass1, OFFICIAL), fmt(pass10, OFFICIAL), NONE, NONE)
    table.note = (
        "Sources: runs: `pass@1` of `humaneval_v1`, `pass@10` of `humaneval_v1_pass10` (and their `_unrounded` companions); "
        f"published: {humaneval_published.V1_CITATION}."
    )
    return table


def _humaneval_health(section: Section, runs: Sequence[Run]) -> None:
    health = Table("hev-health", "HumanEval-V parse success and descriptions", ["Run", "Task", "Metric", "Value"])
    for run in runs:
        for task in sorted(n for n in run.owner if _is_humaneval(n)):
            sec = run.section(task)
            for name, decimals in (("parse_success_rate", OFFICIAL), ("parse_success_rate_unrounded", SCORE), ("description_rate", SCORE)):
                value = metric(sec, name)
                if value is not None:
                    health.add(run.label, f"`{task}`", f"`{name}`", fmt(value, decimals))
    health.note = "`parse_success_rate`: share of samples passing the pylint gate (officially rounded); `description_rate`: non-empty V2T descriptions (%)."
    if health.rows:
        section.blocks.append(health)


def _humaneval_v2_blocks(section: Section, runs: Sequence[Run], have: Sequence[Run]) -> None:
    present = [s for s in HUMANEVAL_SETTINGS if any(run.has(humaneval_source(s[1], s[2], k)[0]) for run in have for k in (1, 3))]
    header = ["Setting", *(h for run in have for k in (1, 3) for h in (f"{run.label} pass@{k}", f"{run.label} pass@{k}{PLUS}"))]
    table = Table("hev-passk", "HumanEval-V pass@k per setting", header)
    unrounded = Table("hev-passk-unrounded", "HumanEval-V pass@k per setting, unrounded", list(header))
    any_unrounded = False
    series: dict[tuple[str, int], list[Any]] = {(run.label, k): [] for run in have for k in (1, 3)}
    errors: dict[tuple[str, int], list[Any]] = {(run.label, k): [] for run in have for k in (1, 3)}
    for label, stem, strong in present:
        cells, raw = [], []
        for run in have:
            for k in (1, 3):
                task, name = humaneval_source(stem, strong, k)
                value = metric(run.section(task), name)
                # the rounded number's standard error is the unrounded one's (the results carry it under both names)
                error = half_width(run.section(task), name)
                if error is None:
                    error = half_width(run.section(task), f"{name}_unrounded")
                cells += [fmt(value, OFFICIAL), fmt(error, OFFICIAL)]
                series[(run.label, k)].append(value)
                errors[(run.label, k)].append(error)
                extra = metric(run.section(task), f"{name}_unrounded")
                any_unrounded |= is_number(extra)
                raw += [fmt(extra, SCORE), fmt(half_width(run.section(task), f"{name}_unrounded"), SCORE)]
        table.add(label, *cells)
        unrounded.add(label, *raw)
    table.note = (
        "Sources: `pass@1` of `humaneval_v_<setting>`, `pass@3` of `humaneval_v_<setting>_pass3`; V2T2C is step 2 "
        "(`humaneval_v_t2c*`), the strong-coder row `strong_coder_pass_at_1` / `_3` of `humaneval_v_v2t` / `humaneval_v_v2t_pass3`. "
        + ERROR_NOTE
    )
    references = [(f"{name} (published v2 headline, setting unverified)", value) for name, value in humaneval_published.HEADLINE_PASS_AT_1]
    section.blocks += [
        plots.Plot(
            "humaneval_v_passk",
            "HumanEval-V pass@1 (filled) and pass@3 (hatched) per setting and run, with ±`1.96` SE error bars where the results give a standard error; "
            "dotted lines: the published v2 headline pass@1 numbers (setting unverified).",
            functools.partial(
                plots.grouped_bars,
                categories=[s[0] for s in present],
                series=[(f"{run.label} pass@{k}", colour_of(runs, run), k == 3, series[(run.label, k)]) for run in have for k in (1, 3)],
                ylabel="pass@k (%)",
                references=references,
                errors=[errors[(run.label, k)] for run in have for k in (1, 3)],
            ),
            (9.0, 3.6),
        ),
        table,
    ]
    if any_unrounded:
        unrounded.note = "The `_unrounded` companions of the same metrics, where the results have them. " + ERROR_NOTE
        section.blocks.append(unrounded)

    for key, anchor, what in (("by_task_type", "hev-task-type", "task type"), ("by_capability", "hev-capability", "capability aspect")):
        by_table = Table(
            anchor,
            f"HumanEval-V pass@k by {what} (mean per-task pass@k, 0-100)",
            ["Setting", "Metric", what.capitalize(), *run_labels(have)],
        )
        panels = []
        for label, stem, strong in present:
            if strong:
                continue
            for k in (1, 3):
                task = humaneval_source(stem, strong, k)[0]
                dicts = {run.label: breakdown(run, "executions", task, key) for run in have}
                dicts = {name: value for name, value in dicts.items() if isinstance(value, dict)}
                if not dicts:
                    continue
                categories = sorted({c for value in dicts.values() for c in value})
                for category in categories:
                    by_table.add(label, f"pass@{k}", category, *(fmt(dicts.get(run.label, {}).get(category), SCORE) for run in have))
                if k == 1:
                    panels.append((label, categories, [(run.label, colour_of(runs, run), False, dicts.get(run.label, {})) for run in have]))
        if not by_table.rows:
            continue
        by_table.collapsed = True
        by_table.note = (
            f"`{key}` of each task, from `executions/<task>.summary.json` (older runs: the results file); not an official metric, "
            "and no standard error is recorded for it; the strong-coder setting reports none."
        )
        if panels:
            n_categories = max(len(p[1]) for p in panels)
            section.blocks.append(
                plots.Plot(
                    f"humaneval_v_{key}",
                    f"HumanEval-V pass@1 by {what}, one panel per setting (no error bars: the runs record no standard error per {what}).",
                    functools.partial(plots.breakdown_panels, panels=panels, xlabel="pass@1 (%)"),
                    (3.2 * len(panels) + 1.5, 1.2 + 0.28 * n_categories * max(1, len(have))),
                )
            )
        section.blocks.append(by_table)


def section(runs: Sequence[Run], judge: Mapping[tuple[str, str], dict[str, Any]]) -> Section | None:
    return humaneval_section(runs)


def headline(task: str) -> Headline | None:
    """pass@k (the strong coder's for V2T): one unit per task."""
    for _, stem, strong in HUMANEVAL_SETTINGS:
        for k in (1, 3):
            found, name = humaneval_source(stem, strong, k)
            if task == found:
                return Headline(name, "task", 100.0, SCORE)
    return None
