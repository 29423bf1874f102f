"""The report's HAERAE-Vision section: original vs explicit questions, the gap, categories, judge outcomes."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_tasks.utils.commands.report import plots
from lmms_tasks.utils.commands.report.common import ERROR_NOTE, PLUS, Headline, Section, colour_of, half_width
from lmms_tasks.utils.commands.report.runs import (
    Run,
    metric,
)
from lmms_tasks.utils.commands.report.tables import COUNT, NA, UNIT, Table, fmt
from lmms_tasks.utils.haerae_vision import GROUP as HAERAE_GROUP
from lmms_tasks.utils.haerae_vision import VARIANTS as HAERAE_VARIANTS
from lmms_tasks.utils.haerae_vision import published as haerae_published
from lmms_tasks.utils.haerae_vision import task_name as haerae_task

PLOTS = ("haerae_vision_gap",)
BENCHMARK = "HAERAE-Vision"
UNIT_NOTE = "a HAERAE-Vision item"

HAERAE_TASKS = tuple((variant, haerae_task(variant)) for variant in HAERAE_VARIANTS)


def _haerae_runs(runs: Sequence[Run]) -> list[Run]:
    return [run for run in runs if run.has(HAERAE_GROUP) or any(run.has(task) for _, task in HAERAE_TASKS)]


def haerae_overall(run: Run) -> dict[str, Any]:
    """The run's original / explicit / gap / judge failures and unparsed replies, with the ± of the
    three scores: from the group, or (no group) the two tasks' scores and no gap."""
    group = run.section(HAERAE_GROUP)
    if group is not None:
        return {
            "original": metric(group, "score_original"),
            "original±": half_width(group, "score_original"),
            "explicit": metric(group, "score_explicit"),
            "explicit±": half_width(group, "score_explicit"),
            "gap": metric(group, "underspec_gap"),
            "gap±": half_width(group, "underspec_gap"),
            "judge_failures": metric(group, "judge_failures"),
            "judge_unparsed": metric(group, "judge_unparsed"),
        }
    original, explicit = run.section("haerae_vision_original"), run.section("haerae_vision_explicit")
    return {
        "original": metric(original, "haerae_vision_score"),
        "original±": half_width(original, "haerae_vision_score"),
        "explicit": metric(explicit, "haerae_vision_score"),
        "explicit±": half_width(explicit, "haerae_vision_score"),
        "gap": None,
        "gap±": None,
        "judge_failures": None,
        "judge_unparsed": None,
    }


def haerae_section(runs: Sequence[Run], judge_rows: Mapping[tuple[str, str], dict[str, Any]]) -> Section | None:
    have = _haerae_runs(runs)
    if not have:
        return None
    section = Section(
        "haerae-vision",
        "HAERAE-Vision",
        "Judge scores (0-1) on the original (under-specified) questions and on their explicit rewrites; the gap "
        "is the group's `underspec_gap` (explicit minus original on the same items).",
    )
    overall_values = {run.label: haerae_overall(run) for run in have}
    with_unparsed = any(values["judge_unparsed"] is not None for values in overall_values.values())
    gap = "Gap (explicit - original)"
    overall = Table(
        "haerae-overall",
        "HAERAE-Vision original vs explicit",
        ["Run", "Original", "Original" + PLUS, "Explicit", "Explicit" + PLUS, gap, gap + PLUS, "Judge failures"]
        + (["Judge unparsed"] if with_unparsed else []),
    )
    for run in have:
        values = overall_values[run.label]
        overall.add(
            run.label,
            *(fmt(values[key], UNIT) for key in ("original", "original±", "explicit", "explicit±", "gap", "gap±")),
            fmt(values["judge_failures"], COUNT),
            *([fmt(values["judge_unparsed"], COUNT)] if with_unparsed else []),
        )
    overall.note = (
        "From the `haerae_vision` group (`score_original`, `score_explicit`, `underspec_gap`; `judge_failures` and, where the results have it, "
        "`judge_unparsed`: items the judge gave no score, counted 0; runs without `judge_unparsed` count unparsed replies in `judge_failures`). "
        + ERROR_NOTE
    )
    categories: list[str] = []
    per_run: dict[str, dict[str, dict[str, Any]]] = {}
    for run in have:
        per_run[run.label] = {}
        for variant, task in HAERAE_TASKS:
            value = metric(run.section(task), "category_scores")  # results.json, where the task's aggregation wrote it
            per_run[run.label][variant] = value if isinstance(value, dict) else {}
            categories += [c for c in per_run[run.label][variant] if c not in categories]
    categories.sort()
    by_category = Table(
        "haerae-category",
        "HAERAE-Vision by category",
        ["Category", *(f"{run.label} {variant}" for run in have for variant, _ in HAERAE_TASKS)],
    )
    for category in categories:
        by_category.add(category, *(fmt(per_run[run.label][variant].get(category), UNIT) for run in have for variant, _ in HAERAE_TASKS))
    by_category.note = (
        "`category_scores` of `haerae_vision_original` and `haerae_vision_explicit` (mean item score per category over the judged items: a reply without a usable score counts 0, a request that failed after its retries is left out), "
        "from the results file; no standard error is recorded per category."
    )
    judge = Table(
        "haerae-judge",
        "HAERAE-Vision judge outcomes",
        ["Run", "Task", "Judged", "Parse failures", "Transport failures", "judge_failures", "judge_unparsed", "Record"],
    )
    for run in have:
        for _, task in HAERAE_TASKS:
            if not run.has(task):
                continue
            row = judge_rows.get((run.label, task), {})
            judge.add(
                run.label,
                f"`{task}`",
                fmt(row.get("requests"), COUNT),
                fmt(row.get("unparsed"), COUNT),
                fmt(row.get("failed"), COUNT),
                fmt(metric(run.section(task), "judge_failures"), COUNT),
                fmt(metric(run.section(task), "judge_unparsed"), COUNT),
                row.get("record", NA),
            )
    judge.note = (
        "Parse failures: judge replies without a parseable score (counted 0, officially); transport failures: requests that still "
        "failed after the retries (left out of the scores, never counted 0; the run exits with status 3). From `judgements/<task>.summary.json` (or the task's `judge_info`). `judge_failures` and "
        "`judge_unparsed`: the task's own counts (transport failures and unparsed replies; runs without `judge_unparsed` count both in `judge_failures`)."
    )
    plot_runs, plot_errors = [], []
    for run in have:
        values = overall_values[run.label]
        original = {OVERALL: values["original"], **per_run[run.label]["original"]}
        explicit = {OVERALL: values["explicit"], **per_run[run.label]["explicit"]}
        plot_runs.append((run.label, colour_of(runs, run), original, explicit))
        plot_errors.append({OVERALL: (values["original±"], values["explicit±"])})
    section.blocks += [
        plots.Plot(
            "haerae_vision_gap",
            "HAERAE-Vision overall (first row, with ±`1.96` SE error bars where the results give a standard error) and by category: "
            "hollow marker = original question, filled = explicit rewrite, arrow = the under-specification gap, one colour per run.",
            functools.partial(original_vs_explicit, categories=[OVERALL, *categories], runs=plot_runs, errors=plot_errors),
            (8.0, 1.4 + 0.35 * (len(categories) + 1) * max(1, len(have))),
        ),
        overall,
        by_category,
        judge,
    ]
    published = Table("haerae-published", "HAERAE-Vision published numbers (NOT comparable)", ["Model", "Overall (0-1)"], collapsed=True)
    for name, value in haerae_published.NOTEBOOK_OVERALL:
        published.add(name, fmt(value, UNIT))
    published.note = f"Source: {haerae_published.CITATION}. Caveat: {haerae_published.CAVEAT}."
    section.blocks.append(published)
    return section


# -- plot ---------------------------------------------------------------------------------------------------


OVERALL = "(overall)"


def original_vs_explicit(
    fig: Any,
    categories: Sequence[str],
    runs: Sequence[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]],
    errors: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Per category, per run: a hollow marker at the original-question score, a filled one at the
    explicit-question score and an arrow between them (the under-specification gap). `errors[i]` maps
    a category (or `OVERALL`, drawn as the first row when it is one of the categories) to the run's
    (original, explicit) error-bar half-widths."""
    ax = fig.subplots()
    step = 0.7 / max(1, len(runs))
    for index, (label, colour, original, explicit) in enumerate(runs):
        run_errors = errors[index] if index < len(errors) else {}
        for c, category in enumerate(categories):
            y = len(categories) - 1 - c + ((len(runs) - 1) / 2 - index) * step
            o, e = plots.number(original.get(category)), plots.number(explicit.get(category))
            if o is not None and e is not None and o != e:
                ax.annotate("", xy=(e, y), xytext=(o, y), arrowprops={"arrowstyle": "->", "color": colour, "linewidth": 1.2})
            o_error, e_error = (run_errors.get(category) or (None, None))[:2]
            for value, error in ((o, plots.number(o_error)), (e, plots.number(e_error))):
                if value is not None and error is not None:
                    ax.errorbar([value], [y], xerr=[error], fmt="none", ecolor=colour, elinewidth=0.8, capsize=2)
            if o is not None:
                ax.plot([o], [y], marker="o", markerfacecolor="white", markeredgecolor=colour, linestyle="none")
            if e is not None:
                ax.plot([e], [y], marker="o", color=colour, linestyle="none")
        ax.plot([], [], marker="o", color=colour, linestyle="-", label=label)
    ax.plot([], [], marker="o", markerfacecolor="white", markeredgecolor="#444444", linestyle="none", label="original question")
    ax.plot([], [], marker="o", color="#444444", linestyle="none", label="explicit question")
    ax.set_yticks(range(len(categories)), list(categories)[::-1])
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("judge score (0-1)")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


def section(runs: Sequence[Run], judge: Mapping[tuple[str, str], dict[str, Any]]) -> Section | None:
    return haerae_section(runs, judge)


def headline(task: str) -> Headline | None:
    """haerae_vision_score (0-1): one unit per judged item."""
    return Headline("haerae_vision_score", "item", 1.0, UNIT) if task in dict(HAERAE_TASKS).values() else None
