"""The report's sections: which numbers go in which table and plot, read from the runs' files.

Rules every builder follows (the report's tests check them): a number comes from one place in one file
(results.json's "groups"/"results" sections, a judgement or execution summary, or a published-numbers
module) and is formatted by `tables.fmt`; a group-level number (a benchmark's overall, its gap) is read
from the group, never from its subtasks; metrics are found by name whatever their filter (`pass@3,n6`
and `pass@3,none`); nothing is summed, averaged or subtracted for printing. A `<column> ±` column holds
1.96 × the metric's `_stderr_clt` (a 95% interval's half-width, on the metric's scale), the same number the
plots draw as error bars. Plots show the same values. The one exception: the paired differences between
runs are computed from the samples files (`paired.py`).

Each benchmark's section lives in the module named after it (`vlm2_bench.py`, ...); this module holds what
they share: the runs, the data each task loaded, the paired differences, cost and health.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.commands.report import plots
from lmms_tasks.utils.commands.report.common import ERROR_NOTE, PLUS, Headline, Section, half_width
from lmms_tasks.utils.commands.report.paired import paired_difference
from lmms_tasks.utils.commands.report.runs import (
    IDENTITY_FIELDS,
    Run,
    SamplesError,
    Summary,
    judge_info_of,
    metric,
    summaries,
    unit_scale,
    unit_scores,
)
from lmms_tasks.utils.commands.report.tables import COUNT, NA, SECONDS, Table, fmt

# Each benchmark's section is the module of the same name beside this one (`section`, `headline`, `PLOTS`,
# `BENCHMARK`, `UNIT_NOTE`); this module names none of them.
BENCHMARK_MODULES: tuple[ModuleType, ...] = tuple(importlib.import_module(f"{__package__}.{name}") for name in BENCHMARKS)
# Every plot the report can draw (the report tests check the demo's report draws exactly these).
PLOT_NAMES = tuple(name for module in BENCHMARK_MODULES for name in module.PLOTS) + ("health",)


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


# -- paired differences -------------------------------------------------------------------------------------

P_VALUE = 4  # decimals of a p-value


def headline_of(task: str) -> Headline | None:
    """The headline metric of one of our tasks and what its unit scores stand for (its benchmark's module
    says); None for others."""
    return next((found for module in BENCHMARK_MODULES if (found := module.headline(task)) is not None), None)


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
        f"unit scores of the headline metric in the samples files (a unit is {', '.join(m.UNIT_NOTE for m in BENCHMARK_MODULES)}), paired by `doc_id`. Difference: the mean of run minus baseline over the units both scored, on the "
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
                "Scores on the metric's scale (the Unit column's metric: 0-100, or 0-1 where the benchmark scores so). "
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
    et = Table("health-exec", "Code executions", ["Run", "Task", "Sandbox", *(c for c, _, _ in _EXEC_COLUMNS), "Record"])
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
        *(module.section(runs, judge) for module in BENCHMARK_MODULES),
        paired_section(runs),
        health_section(runs, judge),
    ]
    return [s for s in found if s is not None]


__all__ = ["ERROR_NOTE", "Headline", "PLOT_NAMES", "PLUS", "Section", "build_sections", "half_width", "headline_of", "judge_rows"]
