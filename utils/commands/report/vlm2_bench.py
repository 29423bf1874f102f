"""The report's VLM2-Bench section: the nine subtasks, the cue-type groups and the overall beside paper Table 1."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_tasks.utils.commands.report import plots
from lmms_tasks.utils.commands.report.common import ERROR_NOTE, PLUS, Headline, Section, half_width
from lmms_tasks.utils.commands.report.runs import (
    Run,
    is_number,
    metric,
    metric_names,
)
from lmms_tasks.utils.commands.report.tables import COUNT, NONE, SCORE, Table, fmt
from lmms_tasks.utils.commands.tasks import declared_variants
from lmms_tasks.utils.vlm2_bench import SUBTASKS, task_name
from lmms_tasks.utils.vlm2_bench import published as vlm2_published

PLOTS = ("vlm2_subtasks",)
BENCHMARK = "VLM2-Bench"
UNIT_NOTE = "a VLM2-Bench question pair or item"

VLM2_GROUP = "vlm2_bench"
VLM2_FAMILIES = (("GC", "vlm2_bench_gc"), ("OC", "vlm2_bench_oc"), ("PC", "vlm2_bench_pc"))
VLM2_HEADLINE_METRICS = ("vlm2_score", "vlm2_img8_score", "vlm2_gap_to_human")


def _vlm2_runs(runs: Sequence[Run]) -> list[Run]:
    return [run for run in runs if run.has(VLM2_GROUP) or any(run.has(task_name(s)) for s in SUBTASKS)]


def vlm2_section(runs: Sequence[Run]) -> Section | None:
    have = _vlm2_runs(runs)
    if not have:
        return None
    labels = vlm2_published.COLUMN_LABELS
    section = Section(
        "vlm2-bench",
        "VLM2-Bench",
        f"Per-subtask scores (0-100) of each run next to the published rows of {vlm2_published.CITATION}, "
        f"<{vlm2_published.PAPER_URL}>. Avg(9) is the unweighted mean of the nine subtasks (the paper's overall), "
        "Avg(8 img) the mean of the eight image subtasks and Δhuman = Avg(9) minus the human Avg(9), each read "
        f"from the `{VLM2_GROUP}` group of the results.",
    )
    table = Table(
        "vlm2-table1",
        "VLM2-Bench: runs and paper Table 1",
        ["Row", "Source", *labels.values(), "Avg(9)", "Avg(9)" + PLUS, "Avg(8 img)", "Δhuman"],
    )
    run_values: list[tuple[str, dict[str, Any]]] = []
    run_errors: list[dict[str, Any]] = []
    for run in have:
        group = run.section(VLM2_GROUP)
        values = {s: metric(run.section(task_name(s)), "vlm2_score") for s in SUBTASKS}
        values["Avg(9)"] = metric(group, "vlm2_score")
        run_values.append((run.label, {labels[s]: values[s] for s in SUBTASKS} | {"Avg(9)": values["Avg(9)"]}))
        run_errors.append(
            {labels[s]: half_width(run.section(task_name(s)), "vlm2_score") for s in SUBTASKS} | {"Avg(9)": half_width(group, "vlm2_score")}
        )
        table.add(
            run.label,
            "run",
            *(fmt(values[s], SCORE) for s in SUBTASKS),
            fmt(values["Avg(9)"], SCORE),
            fmt(run_errors[-1]["Avg(9)"], SCORE),
            fmt(metric(group, "vlm2_img8_score"), SCORE),
            fmt(metric(group, "vlm2_gap_to_human"), SCORE),
        )
    published_values: list[tuple[str, dict[str, Any]]] = []
    for row in vlm2_published.TABLE1:
        table.add(
            row.name,
            "Table 1",
            *(fmt(row.scores[s], SCORE) if row.scores[s] is not None else NONE for s in SUBTASKS),
            fmt(row.avg, SCORE) if row.avg is not None else NONE,
            NONE,
            fmt(row.avg8, SCORE) if row.avg8 is not None else NONE,
            fmt(row.delta_human, SCORE),
        )
        if row.kind == "model":
            published_values.append((row.name, {labels[s]: row.scores[s] for s in SUBTASKS} | {"Avg(9)": row.avg}))
    table.note = (
        f"Source: runs from their results files; published rows from {vlm2_published.CITATION}. "
        "The chance row has no PC-VID score and Table 1 gives its average over the eight image subtasks, "
        "shown under Avg(8 img). `–`: not in Table 1; N/A: not in the run's results. The subtasks' intervals are in the next table. "
        + ERROR_NOTE
    )
    human, chance = vlm2_published.row("Human"), vlm2_published.row("Chance")
    section.blocks += [
        plots.Plot(
            "vlm2_subtasks",
            "VLM2-Bench per subtask and overall: runs (colours, with ±`1.96` SE error bars where the results give a standard error) "
            "and the published models of Table 1 (grey), with the human (dashed) and chance (dotted) levels.",
            functools.partial(
                vlm2_subtasks,
                panels=[*labels.values(), "Avg(9)"],
                runs=run_values,
                published=published_values,
                human={labels[s]: human.scores[s] for s in SUBTASKS} | {"Avg(9)": human.avg},
                chance={labels[s]: chance.scores[s] for s in SUBTASKS},
                errors=run_errors,
            ),
            (11.0, 2.2 * 2 + 0.3 * (len(run_values) + len(published_values))),
        ),
        table,
        _vlm2_scores_table(have),
    ]
    exact_present = any(
        is_number(metric(run.section(VLM2_GROUP), name)) for run in have for name in ("vlm2_exact_score", "vlm2_exact_img8_score")
    ) or any(is_number(metric(run.section(task_name(s)), "gc_exact_pair_acc")) for run in have for s in ("gc_mat", "gc_trk"))
    if exact_present:
        exact = Table(
            "vlm2-exact",
            "VLM2-Bench with GC scored by exact match (the official GC scorer's mode)",
            ["Run", "GC-Mat exact", "GC-Trk exact", "Avg(9) exact", "Avg(9) exact" + PLUS, "Avg(8 img) exact", "Avg(8 img) exact" + PLUS],
        )
        for run in have:
            group = run.section(VLM2_GROUP)
            exact.add(
                run.label,
                fmt(metric(run.section(task_name("gc_mat")), "gc_exact_pair_acc"), SCORE),
                fmt(metric(run.section(task_name("gc_trk")), "gc_exact_pair_acc"), SCORE),
                fmt(metric(group, "vlm2_exact_score"), SCORE),
                fmt(half_width(group, "vlm2_exact_score"), SCORE),
                fmt(metric(group, "vlm2_exact_img8_score"), SCORE),
                fmt(half_width(group, "vlm2_exact_img8_score"), SCORE),
            )
        exact.note = "GC pair accuracy when only a bare `T`/`F` answer counts (`gc_exact_pair_acc`), and the group averages with it (`vlm2_exact_score`, `vlm2_exact_img8_score`) where the results have them."
        section.blocks.append(exact)
    families = Table(
        "vlm2-groups",
        "VLM2-Bench by cue type (group `vlm2_score`)",
        ["Run", *(h for name, _ in VLM2_FAMILIES for h in (name, name + PLUS))],
    )
    for run in have:
        families.add(
            run.label,
            *(
                text
                for _, group in VLM2_FAMILIES
                for text in (fmt(metric(run.section(group), "vlm2_score"), SCORE), fmt(half_width(run.section(group), "vlm2_score"), SCORE))
            ),
        )
    families.note = ERROR_NOTE
    section.blocks.append(families)
    details = Table("vlm2-details", "VLM2-Bench subtask metrics", ["Run", "Task", "Metric", "Value"], collapsed=True)
    for run in have:
        for s in SUBTASKS:
            sec = run.section(task_name(s))
            if not sec:
                continue
            for name in metric_names(sec):
                value = metric(sec, name)
                if name in VLM2_HEADLINE_METRICS or name.startswith("vlm2_exact") or not is_number(value):
                    continue
                details.add(run.label, f"`{task_name(s)}`", f"`{name}`", fmt(value, COUNT if isinstance(value, int) else SCORE))
    details.note = "Every other numeric metric of each subtask as the results hold it (counts as integers, rates 0-100)."
    section.blocks.append(details)
    return section


def _vlm2_scores_table(have: Sequence[Run]) -> Table:
    """Every VLM2-Bench headline score of each run with its ± column: subtasks, cue types, overall."""
    rows: list[tuple[str, str, str]] = [(vlm2_published.COLUMN_LABELS[s], task_name(s), "vlm2_score") for s in SUBTASKS]
    rows += [(name, group, "vlm2_score") for name, group in VLM2_FAMILIES]
    rows += [
        ("Avg(9)", VLM2_GROUP, "vlm2_score"),
        ("Avg(8 img)", VLM2_GROUP, "vlm2_img8_score"),
        ("Δhuman", VLM2_GROUP, "vlm2_gap_to_human"),
        ("Avg(9) exact", VLM2_GROUP, "vlm2_exact_score"),
        ("Avg(8 img) exact", VLM2_GROUP, "vlm2_exact_img8_score"),
    ]
    table = Table(
        "vlm2-scores",
        "VLM2-Bench scores with 95% intervals",
        ["Score", "Task", "Metric", *(h for run in have for h in (run.label, run.label + PLUS))],
    )
    for label, task, name in rows:
        if not any(metric(run.section(task), name) is not None for run in have):
            continue
        cells = []
        for run in have:
            cells += [fmt(metric(run.section(task), name), SCORE), fmt(half_width(run.section(task), name), SCORE)]
        table.add(label, f"`{task}`", f"`{name}`", *cells)
    table.note = "Each score as the results hold it (0-100; Δhuman: Avg(9) minus the human Avg(9)). " + ERROR_NOTE
    return table


# -- plot ---------------------------------------------------------------------------------------------------


def vlm2_subtasks(
    fig: Any,
    panels: Sequence[str],
    runs: Sequence[tuple[str, Mapping[str, Any]]],
    published: Sequence[tuple[str, Mapping[str, Any]]],
    human: Mapping[str, Any],
    chance: Mapping[str, Any],
    errors: Sequence[Mapping[str, Any]] = (),
) -> None:
    """One panel per subtask (+ the overall): a horizontal bar per run (colour) and per published model
    (grey); the human score as a green dashed line and chance as a grey dotted line. `errors[i][panel]`:
    the half-width of run i's error bar (none where missing)."""
    columns = 5
    rows = (len(panels) + columns - 1) // columns
    axes = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    names = [name for name, _ in runs] + [name for name, _ in published]
    colours = [plots.run_colour(i) for i in range(len(runs))] + [plots.PUBLISHED_COLOUR] * len(published)
    positions = list(range(len(names)))[::-1]
    for index, panel in enumerate(panels):
        ax = axes[index // columns][index % columns]
        values = [plots.number(v.get(panel)) for _, v in runs] + [plots.number(v.get(panel)) for _, v in published]
        ax.barh(positions, [v if v is not None else 0.0 for v in values], color=colours, height=0.75)
        plots.error_bars(
            ax,
            positions[: len(runs)],
            values[: len(runs)],
            [plots.number((errors[i] if i < len(errors) else {}).get(panel)) for i in range(len(runs))],
            horizontal=True,
        )
        for y, v in zip(positions, values):
            if v is None:
                ax.text(1, y, "n/a", va="center", fontsize=6, color="#888888")
        if plots.number(human.get(panel)) is not None:
            ax.axvline(plots.number(human.get(panel)), color=plots.HUMAN_COLOUR, linestyle="--", linewidth=1.0)
        if plots.number(chance.get(panel)) is not None:
            ax.axvline(plots.number(chance.get(panel)), color=plots.CHANCE_COLOUR, linestyle=":", linewidth=1.0)
        ax.set_title(panel)
        ax.set_xlim(0, 105)
        ax.grid(axis="y", visible=False)
    for index in range(len(panels), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    for row_axes in axes:
        row_axes[0].set_yticks(positions, names)
    from matplotlib.lines import Line2D

    fig.legend(
        handles=[
            Line2D([0], [0], color=plots.HUMAN_COLOUR, linestyle="--", label="Human (Table 1)"),
            Line2D([0], [0], color=plots.CHANCE_COLOUR, linestyle=":", label="Chance (Table 1)"),
            Line2D([0], [0], color=plots.PUBLISHED_COLOUR, linewidth=6, label="published model (Table 1)"),
        ],
        loc="outside lower center",
        ncols=3,
    )


def section(runs: Sequence[Run], judge: Mapping[tuple[str, str], dict[str, Any]]) -> Section | None:
    return vlm2_section(runs)


def headline(task: str) -> Headline | None:
    """vlm2_score: a true/false subtask's unit is a question pair, every other's one item."""
    for (_, kind), name in declared_variants("vlm2_bench", ("subtask", "kind")).items():  # as the YAMLs declare
        if task == name:
            return Headline("vlm2_score", "pair" if kind in ("tf_gc", "tf_cpr") else "item", 100.0, SCORE)
    return None
