"""The report's sections: which numbers go in which table and plot, read from the runs' files.

Rules every builder follows (the report's tests check them): a number comes from one place in one file
(results.json's "groups"/"results" sections, a judgement or execution summary, or a published-numbers
module) and is formatted by `tables.fmt`; a group-level number (Avg, Δhuman, the HAERAE gap) is read
from the group, never from its subtasks; metrics are found by name whatever their filter (`pass@3,n6`
and `pass@3,none`); nothing is summed, averaged or subtracted for printing. A `<column> ±` column holds
1.96 × the metric's `_stderr_clt` (a 95% interval's half-width, on the metric's scale), the same number the
plots draw as error bars. Plots show the same values. The one exception: the paired differences between
runs are computed from the samples files (`paired.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_tasks.utils.commands.report import plots
from lmms_tasks.utils.commands.report.paired import paired_difference
from lmms_tasks.utils.commands.report.runs import (
    IDENTITY_FIELDS,
    Run,
    SamplesError,
    Summary,
    breakdown,
    is_number,
    judge_info_of,
    metric,
    metric_names,
    stderr,
    summaries,
    unit_scale,
    unit_scores,
)
from lmms_tasks.utils.commands.report.tables import COUNT, NA, NONE, OFFICIAL, SCORE, SECONDS, UNIT, Table, fmt
from lmms_tasks.utils.commands.tasks import benchmark_of, declared_variants
from lmms_tasks.utils.haerae_vision import GROUP as HAERAE_GROUP
from lmms_tasks.utils.haerae_vision import VARIANTS as HAERAE_VARIANTS
from lmms_tasks.utils.haerae_vision import published as haerae_published
from lmms_tasks.utils.haerae_vision import task_name as haerae_task
from lmms_tasks.utils.humaneval_v import published as humaneval_published
from lmms_tasks.utils.humaneval_v import v1 as humaneval_v1
from lmms_tasks.utils.humaneval_v.prompts import TABLE as HUMANEVAL_TABLE
from lmms_tasks.utils.vlm2_bench import SUBTASKS, task_name
from lmms_tasks.utils.vlm2_bench import published as vlm2_published

# Every plot the report can draw (the report tests check the demo's report draws exactly these).
PLUS = " ±"  # suffix of a column holding 1.96 standard errors of the column before it
PLOT_NAMES = ("vlm2_subtasks", "humaneval_v_passk", "humaneval_v_by_task_type", "humaneval_v_by_capability", "haerae_vision_gap", "health")


@dataclass
class Section:
    anchor: str
    title: str
    intro: str = ""
    blocks: list[Table | plots.Plot | str] = field(default_factory=list)


def _labels(runs: Sequence[Run]) -> list[str]:
    return [run.label for run in runs]


def _colour(runs: Sequence[Run], run: Run) -> str:
    return plots.run_colour(list(runs).index(run))


def half_width(section: Mapping[str, Any] | None, name: str) -> float | None:
    """1.96 × the metric's standard error (the ± column and the error bar); None without one."""
    se = stderr(section, name)
    return plots.Z95 * se if se is not None else None


ERROR_NOTE = "`±`: `1.96` × the metric's standard error (`<metric>_stderr_clt` in the results), half the width of a 95% interval; N/A where the results give none (runs before lmms-tasks reported standard errors)."


# -- runs ---------------------------------------------------------------------------------------------------


def runs_section(runs: Sequence[Run]) -> Section:
    table = Table("runs", "Runs (per model and input directory)", ["Run", "Model", "Backend", "Input", "lmms-eval results files"])
    for run in runs:
        backend = str((run.files[0].data.get("config") or {}).get("model") or NA)
        files = "; ".join(f"`{f.path.relative_to(run.source) if run.source.is_dir() else f.path.name}`" for f in run.files)
        table.add(run.label, f"`{run.model}`", f"`{backend}`", f"`{run.source}`", files)
    section = Section(
        "runs",
        "Runs",
        "Each run is one model's lmms-eval results read from one input directory. A model evaluated again on a task it already has "
        "(another `--limit`, other settings) is a further run beside the first, labelled `<model> @ <timestamp of its first results file>`, "
        "with its own scores and records.",
        [table],
    )
    data = data_table(runs)
    if data.rows:
        section.blocks.append(data)
    return section


def data_table(runs: Sequence[Run]) -> Table:
    """What each task of each run loaded, as the run recorded it (`configs.<task>.metadata.data_source`)."""
    from lmms_tasks.utils.services.data import PROVENANCE_KEY

    table = Table("data", "Data each task loaded", ["Run", "Task", "Source", "Revision", "Commit", "Files (sha256)"])
    for run in runs:
        for task in sorted(run.owner):
            config = (run.owner[task].data.get("configs") or {}).get(task) or {}
            record = (config.get("metadata") or {}).get(PROVENANCE_KEY) if isinstance(config, Mapping) else None
            if not isinstance(record, Mapping):
                continue
            if record.get("source") == "local":
                files = "; ".join(f"`{name}` `{digest}`" for name, digest in sorted((record.get("files") or {}).items())) or NA
                table.add(run.label, f"`{task}`", f"`{record.get('env_var')}={record.get('root')}`", "local copy", NA, files)
            else:
                commit = f"`{record['commit']}`" if record.get("commit") else "not reported"
                table.add(run.label, f"`{task}`", f"`hf://datasets/{record.get('repo_id')}`", f"`{record.get('revision')}`", commit, NA)
    table.note = (
        "Recorded by each task's loader in results.json (`configs.<task>.metadata.data_source`): the Hugging Face revision asked for and "
        "the commit it resolved to, or the sha256 of every data file a local copy (`<BENCH>_DATA`) provided. Runs made before lmms-tasks "
        "recorded it have no row."
    )
    table.collapsed = True
    return table


# -- VLM2-Bench ---------------------------------------------------------------------------------------------

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
                plots.vlm2_subtasks,
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


# -- HumanEval-V --------------------------------------------------------------------------------------------

HUMANEVAL_PREFIX = "humaneval_v_"
# (setting label, task stem, strong coder?), from the settings' table (humaneval_v/settings.csv), in its order: V2T's
# pass@k is its strong coder's (V2T itself writes descriptions)
HUMANEVAL_SETTINGS = tuple((row["report_label"], stem, stem == "v2t") for stem, row in HUMANEVAL_TABLE.items())


def humaneval_source(stem: str, strong: bool, k: int) -> tuple[str, str]:
    """(task, metric) holding pass@k of a setting."""
    task = declared_variants("humaneval_v", ("setting", "k")).get((stem, k), f"{HUMANEVAL_PREFIX}{stem}")  # as its YAML declares
    return task, (f"strong_coder_pass_at_{k}" if strong else f"pass@{k}")


# v1 (the original 108-task release): (column, task, metric)
HUMANEVAL_V1 = tuple(
    (f"pass@{k}", task, f"pass@{k}") for (setting, k), task in sorted(declared_variants("humaneval_v", ("setting", "k")).items()) if setting == humaneval_v1.SETTING
)


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
                series=[(f"{run.label} pass@{k}", _colour(runs, run), k == 3, series[(run.label, k)]) for run in have for k in (1, 3)],
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
            anchor, f"HumanEval-V pass@k by {what} (mean per-task pass@k, 0-100)", ["Setting", "Metric", what.capitalize(), *_labels(have)]
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
                    panels.append((label, categories, [(run.label, _colour(runs, run), False, dicts.get(run.label, {})) for run in have]))
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


# -- HAERAE-Vision ------------------------------------------------------------------------------------------

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
        original = {plots.OVERALL: values["original"], **per_run[run.label]["original"]}
        explicit = {plots.OVERALL: values["explicit"], **per_run[run.label]["explicit"]}
        plot_runs.append((run.label, _colour(runs, run), original, explicit))
        plot_errors.append({plots.OVERALL: (values["original±"], values["explicit±"])})
    section.blocks += [
        plots.Plot(
            "haerae_vision_gap",
            "HAERAE-Vision overall (first row, with ±`1.96` SE error bars where the results give a standard error) and by category: "
            "hollow marker = original question, filled = explicit rewrite, arrow = the under-specification gap, one colour per run.",
            functools.partial(plots.original_vs_explicit, categories=[plots.OVERALL, *categories], runs=plot_runs, errors=plot_errors),
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


# -- paired differences -------------------------------------------------------------------------------------

P_VALUE = 4  # decimals of a p-value


@dataclass(frozen=True)
class Headline:
    metric: str  # the metric whose per-document items carry the unit score
    unit: str  # what one unit is: "pair", "task" or "item"
    scale: float  # the metric's maximum (100 for 0-100 scores, 1 for 0-1)
    decimals: int


def headline_of(task: str) -> Headline | None:
    """The headline metric of one of our tasks and what its unit scores stand for; None for others."""
    prefix = task_name("")
    if task.startswith(prefix) and task[len(prefix) :] in SUBTASKS:
        kind = SUBTASKS[task[len(prefix) :]][1]
        return Headline("vlm2_score", "pair" if kind in ("tf_gc", "tf_cpr") else "item", 100.0, SCORE)
    for _, stem, strong in HUMANEVAL_SETTINGS:
        for k in (1, 3):
            found, name = humaneval_source(stem, strong, k)
            if task == found:
                return Headline(name, "task", 100.0, SCORE)
    if task in dict(HAERAE_TASKS).values():
        return Headline("haerae_vision_score", "item", 1.0, UNIT)
    return None


def _same_document(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(x is None or y is None or x == y for x, y in zip(a, b))


def paired_section(runs: Sequence[Run]) -> Section | None:
    """Each run after the first against the first (the baseline), task by task, on the units both scored."""
    if len(runs) < 2:
        return None
    baseline = runs[0]
    section = Section(
        "paired",
        "Paired differences between runs",
        f"Each run against the first one ({baseline.label}) on the same documents: for every task both ran, the per-document "
        "unit scores of the headline metric in the samples files (a unit is a VLM2-Bench question pair or item, a HumanEval-V task, "
        "a HAERAE-Vision item), paired by `doc_id`. Difference: the mean of run minus baseline over the units both scored, on the "
        "metric's scale; SE: the standard deviation of the differences over the square root of n; the interval: difference "
        "± the t quantile (n − 1 degrees of freedom) × SE; p: the two-sided paired t-test. *Within noise*: the interval contains zero.",
    )
    problems: list[str] = []
    for index, other in enumerate(runs[1:], start=2):
        table = Table(
            f"paired-{index}",
            f"Paired differences: {other.label} minus {baseline.label}",
            [
                "Task",
                "Metric",
                "Unit",
                "n",
                baseline.label,
                other.label,
                "Difference",
                "SE",
                "95% CI low",
                "95% CI high",
                "p",
                "Within noise",
            ],
        )
        for task in sorted(set(baseline.owner) & set(other.owner)):
            head = headline_of(task)
            if head is None:
                continue
            try:
                a, b = unit_scores(baseline, task, head.metric), unit_scores(other, task, head.metric)
            except SamplesError as exc:
                problems.append(f"- `{task}`: {exc}; not compared")
                continue
            if a is None or b is None:
                continue
            if a.metric != b.metric:
                problems.append(f"- `{task}`: the runs score different metrics (`{a.metric}`, `{b.metric}`); not compared")
                continue
            shared = sorted(set(a.scores) & set(b.scores), key=lambda d: (str(type(d)), d))
            different = [d for d in shared if not _same_document(a.identity[d], b.identity[d])]
            if different:
                fields = ", ".join(f for f, x, y in zip(IDENTITY_FIELDS, a.identity[different[0]], b.identity[different[0]]) if x != y)
                problems.append(
                    f"- `{task}` ({other.label}): `doc_id` {different[0]} is another document in each run ({fields}); not compared"
                )
                continue
            if not shared:
                problems.append(f"- `{task}` ({other.label}): no document scored in both runs")
                continue
            scale = unit_scale(
                [(a.scores.values(), metric(baseline.section(task), a.metric)), (b.scores.values(), metric(other.section(task), b.metric))],
                head.scale,
            )
            result = paired_difference([a.scores[d] for d in shared], [b.scores[d] for d in shared], scale)
            noise = {True: "yes", False: "no", None: NA}[result.within_noise]
            d = head.decimals
            table.add(
                f"`{task}`",
                f"`{a.metric}`",
                head.unit,
                fmt(result.n, COUNT),
                fmt(result.mean_baseline, d),
                fmt(result.mean_run, d),
                fmt(result.difference, d),
                fmt(result.se, d),
                fmt(result.ci_low, d),
                fmt(result.ci_high, d),
                fmt(result.p_value, P_VALUE),
                noise,
            )
        if table.rows:
            table.note = (
                "Means over the n units both runs scored (they equal the headline metric when both runs scored the same documents). "
                "Scores on the metric's scale: 0-100 for VLM2-Bench and HumanEval-V, 0-1 for HAERAE-Vision. "
                "Within noise: `yes` when the 95% interval contains zero (p ≥ `0.05`); N/A with a single unit."
            )
            section.blocks.append(table)
    if not any(isinstance(block, Table) for block in section.blocks):
        section.blocks.append(
            "No two runs have per-document unit scores for the same documents (samples files whose headline items carry a `score`; "
            "runs without `--log_samples`, or made before lmms-tasks recorded unit scores, have none), so no paired comparison is made."
        )
    if problems:
        section.blocks.append("Tasks not compared:\n\n" + "\n".join(problems))
    return section


# -- cost and health ----------------------------------------------------------------------------------------

_JUDGE_COLUMNS = (
    ("Requests", "requests"),
    ("Cache hits", "cache_hits"),
    ("Transport failures", "failed"),
    ("Parse failures", "unparsed"),
    ("Retries", "retries"),
    ("Input tokens", "input_tokens"),
    ("Output tokens", "output_tokens"),
    ("Cached input tokens", "cached_input_tokens"),
    ("Cached output tokens", "cached_output_tokens"),
)
_EXEC_COLUMNS = (
    ("Programs", "programs", COUNT),
    ("Unique", "unique_programs", COUNT),
    ("Gated", "gated", COUNT),
    ("Passed", "passed", COUNT),
    ("Timeouts", "timeouts", COUNT),
    ("Cache hits", "exec_cache_hits", COUNT),
    ("Workers", "workers", COUNT),
    ("Lint (s)", "gate_s", SECONDS),
    ("Wall (s)", "wall_s", SECONDS),
)
_CHECKED = ("requests", "failed", "unparsed", "cache_hits", "input_tokens", "output_tokens")


def judge_rows(runs: Sequence[Run]) -> dict[tuple[str, str], dict[str, Any]]:
    """(run label, summary task) -> the judge numbers to print and where they come from.

    A judgement summary is used when it belongs to the run's results file and agrees with the task's
    `judge_info` metric; otherwise the numbers `judge_info` carries are used and the others are N/A.
    """
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        found: dict[str, Summary] = {s.task: s for s in summaries(run, "judgements")}
        judged_tasks = sorted(
            name for name, owner in run.owner.items() if name in (owner.data.get("results") or {}) and judge_info_of(run.section(name))
        )
        for task in sorted(set(found) | set(judged_tasks)):
            summary = found.get(task)
            info = judge_info_of(run.section(task)) if task in judged_tasks else {}
            agrees = summary is not None and not summary.stale and all(summary.data.get(k) == info[k] for k in _CHECKED if k in info)
            if agrees:
                rows[(run.label, task)] = dict(summary.data, record=f"`{summary.path.parent.name}/{summary.path.name}`")
            else:
                why = (
                    "summary missing"
                    if summary is None
                    else ("summary overwritten by a later run" if summary.stale else "summary disagrees")
                )
                rows[(run.label, task)] = dict(info, record=f"`judge_info` ({why})")
    return rows


def health_section(runs: Sequence[Run], judge: Mapping[tuple[str, str], dict[str, Any]]) -> Section:
    section = Section(
        "cost-health",
        "Cost and health",
        "What the evaluation cost and what went wrong: judge requests, cache hits, failures and tokens; code "
        "executions, timeouts and programs stopped by the pylint gate; tokens by source and wall time per phase, "
        "where the files record them.",
    )
    jt = Table("health-judge", "Judge requests", ["Run", "Task", "Judge model", *(c for c, _ in _JUDGE_COLUMNS), "Wall (s)", "Record"])
    for (label, task), row in judge.items():
        jt.add(
            label,
            f"`{task}`",
            f"`{row.get('judge_model', NA)}`",
            *(fmt(row.get(key), COUNT) for _, key in _JUDGE_COLUMNS),
            fmt(row.get("wall_s"), SECONDS),
            row["record"],
        )
    jt.note = "From `judgements/<task>.summary.json` beside the results (tokens of fresh requests; cached requests' tokens separately), or the task's `judge_info` metric."
    et = Table("health-exec", "Code executions (HumanEval-V)", ["Run", "Task", "Sandbox", *(c for c, _, _ in _EXEC_COLUMNS), "Record"])
    exec_plot: list[tuple[str, dict[str, Any]]] = []
    for run in runs:
        for summary in summaries(run, "executions"):
            record = f"`{summary.path.parent.name}/{summary.path.name}`"
            if summary.stale:
                et.add(run.label, f"`{summary.task}`", NA, *(NA for _ in _EXEC_COLUMNS), record + " (overwritten by a later run)")
                continue
            level = summary.data.get("sandbox") or "bubblewrap"  # the only level before levels were recorded
            et.add(run.label, f"`{summary.task}`", f"`{level}`", *(fmt(summary.data.get(key), d) for _, key, d in _EXEC_COLUMNS), record)
            exec_plot.append((f"{run.label}: {summary.task}", summary.data))
    et.note = (
        "From `executions/<task>.summary.json`: sandbox = the isolation level the programs ran at (`HUMANEVAL_V_SANDBOX`: `process` has no "
        "namespace isolation); gated = stopped by the pylint gate before running; lint and wall times of the scoring step."
    )
    ut = Table(
        "health-usage",
        "Tokens by source (lmms-eval usage block)",
        ["Run", "Results file", "Source", "Input tokens", "Output tokens", "API calls"],
    )
    tt = Table("health-time", "Wall time per lmms-eval run", ["Run", "Results file", "Tasks", "Evaluation (s)", "Generation (s)"])
    for run in runs:
        for results_file in run.files:
            where = f"`{_file_label(run, results_file)}`"
            usage = results_file.data.get("usage") or {}
            for source, numbers in sorted((usage.get("by_source") or {}).items()):
                if isinstance(numbers, dict):
                    ut.add(
                        run.label,
                        where,
                        f"`{source}`",
                        fmt(numbers.get("input_tokens"), COUNT),
                        fmt(numbers.get("output_tokens"), COUNT),
                        fmt(numbers.get("n_api_calls"), COUNT),
                    )
            tasks = ", ".join(f"`{n}`" for n in sorted(results_file.data.get("results") or {}) if run.owner.get(n) is results_file)
            throughput = results_file.data.get("throughput") or {}
            tt.add(
                run.label,
                where,
                tasks or NA,
                fmt(results_file.data.get("total_evaluation_time_seconds"), SECONDS),
                fmt(throughput.get("total_elapsed_time"), SECONDS),
            )
    ut.note = "`usage.by_source` of each results file: the model under test and the judge (judge tokens cover fresh requests only)."
    tt.note = "Evaluation: lmms-eval's `total_evaluation_time_seconds`; generation: `throughput.total_elapsed_time`. Judging and execution times are in the tables above."
    health_panels = []
    if judge:
        health_panels.append(
            (
                "judge requests",
                [f"{label}: {task}" for label, task in judge],
                [
                    (name, colour, [row.get(key) for row in judge.values()])
                    for name, colour, key in (
                        ("requests", "#6baed6", "requests"),
                        ("cache hits", "#c6dbef", "cache_hits"),
                        ("parse failures", "#fd8d3c", "unparsed"),
                        ("transport failures", "#d62728", "failed"),
                        ("retries", "#9e9ac8", "retries"),
                    )
                ],
            )
        )
    if exec_plot:
        health_panels.append(
            (
                "executed programs",
                [label for label, _ in exec_plot],
                [
                    (name, colour, [d.get(key) for _, d in exec_plot])
                    for name, colour, key in (
                        ("programs", "#74c476", "programs"),
                        ("passed", "#238b45", "passed"),
                        ("gated by pylint", "#fd8d3c", "gated"),
                        ("timed out", "#d62728", "timeouts"),
                    )
                ],
            )
        )
    if health_panels:
        rows = sum(len(p[1]) for p in health_panels)
        section.blocks.append(
            plots.Plot(
                "health",
                "Judge requests (with cache hits, parse and transport failures, retries) and executed programs (passed, gated by pylint, timed out) per run and task.",
                functools.partial(plots.grouped_counts, panels=health_panels),
                (9.0, 1.0 + 0.45 * rows + 0.6 * len(health_panels)),
            )
        )
    section.blocks += [t for t in (jt, et, ut, tt) if t.rows]
    return section


def _file_label(run: Run, results_file: Any) -> str:
    try:
        return str(results_file.path.relative_to(run.source)) if run.source.is_dir() else results_file.path.name
    except ValueError:
        return results_file.path.name


def build_sections(runs: Sequence[Run]) -> list[Section]:
    judge = judge_rows(runs)
    found = [
        runs_section(runs),
        vlm2_section(runs),
        humaneval_section(runs),
        haerae_section(runs, judge),
        paired_section(runs),
        health_section(runs, judge),
    ]
    return [s for s in found if s is not None]


__all__ = ["Headline", "PLUS", "Section", "build_sections", "haerae_overall", "half_width", "headline_of", "humaneval_source", "judge_rows"]
