"""The results report of two demo runs (two stand-in models with different scripted replies), checked
number by number against the files the runs wrote.

How the tracing works: report.md is parsed here (every table follows a `<!-- table: <anchor> -->`
marker). Each anchor has a checker below that knows, independently of the report code, where each of its
cells comes from (a results.json "groups"/"results" entry, a judgement or execution summary, or the
published table of the fidelity spec / README) and compares the printed number with the source value to
the printed precision, with a fixed number of decimals per column. A `<column> ±` cell is 1.96 × the
`<metric>_stderr_clt` beside that metric in the same results section (N/A where it is "N/A" or absent). The
paired-difference tables are recomputed here from the samples files (scipy's `ttest_rel`). A table
without a checker, or a numeric or N/A cell that no checker looked at, fails the test; a decimal number in
the prose fails it too.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.commands.report.sections import PLOT_NAMES
from lmms_tasks.utils.haerae_vision import published as haerae_published
from lmms_tasks.utils.humaneval_v import published as humaneval_published
from lmms_tasks.utils.services.records import recorded_dir
from lmms_tasks.utils.testing.demo import DEMO_MODELS, DemoOutcome
from lmms_tasks.utils.vlm2_bench import published as vlm2_published

pytestmark = pytest.mark.e2e

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
SUBTASK_COLUMNS = {
    "GC-Mat": "gc_mat",
    "GC-Trk": "gc_trk",
    "OC-Cpr": "oc_cpr",
    "OC-Cnt": "oc_cnt",
    "OC-Grp": "oc_grp",
    "PC-Cpr": "pc_cpr",
    "PC-Cnt": "pc_cnt",
    "PC-Grp": "pc_grp",
    "PC-VID": "pc_vid",
}
# setting label -> (task for pass@1, metric), (task for pass@3, metric): the README's mapping, written out here
PASSK = {
    "V2C": (("humaneval_v_v2c", "pass@1"), ("humaneval_v_v2c_pass3", "pass@3")),
    "V2C-CoT": (("humaneval_v_v2c_cot", "pass@1"), ("humaneval_v_v2c_cot_pass3", "pass@3")),
    "V2T2C": (("humaneval_v_t2c", "pass@1"), ("humaneval_v_t2c_pass3", "pass@3")),
    "V2T2C w/ strong coder": (("humaneval_v_v2t", "strong_coder_pass_at_1"), ("humaneval_v_v2t_pass3", "strong_coder_pass_at_3")),
    "GT-T2C": (("humaneval_v_gt_t2c", "pass@1"), ("humaneval_v_gt_t2c_pass3", "pass@3")),
}
EXPECTED_PLOTS = set(PLOT_NAMES)


# -- what the runs wrote, read here without the report code ----------------------------------------------


@dataclass
class RunFiles:
    label: str
    root: Path
    results: list[tuple[Path, dict[str, Any]]]

    def owner(self, name: str) -> tuple[Path, dict[str, Any]]:
        found = [(p, d) for p, d in self.results if name in d.get("results", {}) or name in d.get("groups", {})]
        assert len(found) == 1, f"{self.label}: {name} in {len(found)} results files"
        return found[0]

    def records(self, name: str, kind: str) -> Path:
        """The `kind` records folder of the run that has `name`: the one its results file names (issue 52)."""
        path, data = self.owner(name)
        return recorded_dir(path, data) / kind

    def section(self, name: str) -> dict[str, Any]:
        _, data = self.owner(name)
        return data.get("groups", {}).get(name) or data["results"][name]

    def metric(self, name: str, metric: str) -> Any:
        keys = [k for k in self.section(name) if k.split(",", 1)[0] == metric and "," in k]
        assert len(keys) <= 1, keys
        return self.section(name)[keys[0]] if keys else None

    def plus(self, name: str, metric: str) -> Any:
        """1.96 × the metric's `_stderr_clt` (same filter), None where there is no numeric one."""
        keys = [k for k in self.section(name) if k.split(",", 1)[0] == metric and "," in k]
        if not keys:
            return None
        value = self.section(name).get(f"{metric}_stderr_clt,{keys[0].split(',', 1)[1]}")
        return 1.96 * value if is_value(value) else None

    def breakdown(self, kind: str, task: str, key: str) -> Any:
        """A dict breakdown: from the task's summary file where it has the key (newer runs), else results.json."""
        file = self.records(task, kind) / f"{task}.summary.json"
        if file.is_file():
            data = json.loads(file.read_text(encoding="utf-8"))
            if key in data:
                return data[key]
        return self.metric(task, key)

    def summary(self, kind: str, task: str) -> dict[str, Any]:
        owner_task = next(
            n
            for n in sorted({n for _, d in self.results for n in d["results"]}, key=len, reverse=True)
            if task == n or task.startswith(n + "_")
        )
        return json.loads((self.records(owner_task, kind) / f"{task}.summary.json").read_text(encoding="utf-8"))

    def summaries(self, kind: str) -> dict[str, dict[str, Any]]:
        out = {}
        for path, data in self.results:
            for file in sorted((recorded_dir(path, data) / kind).glob("*.summary.json")):
                data = json.loads(file.read_text(encoding="utf-8"))
                out[data["task"]] = data
        return out

    def results_file(self, relative: str) -> dict[str, Any]:
        return next(d for p, d in self.results if p.relative_to(self.root).as_posix() == relative)


def read_run(label: str, root: Path, folder: Path) -> RunFiles:
    """The results files of one model (its folder `folder` in the demo's one results folder `root`)."""
    files = sorted(folder.rglob("*_results.json"))
    return RunFiles(label, root, [(p, json.loads(p.read_text(encoding="utf-8"))) for p in files])


# -- report.md, parsed -------------------------------------------------------------------------------------


def parse_tables(markdown: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    lines = markdown.splitlines()
    tables: dict[str, tuple[list[str], list[list[str]]]] = {}
    for index, line in enumerate(lines):
        match = re.fullmatch(r"<!-- table: ([\w-]+) -->", line)
        if not match:
            continue
        j = index + 1
        while not lines[j].startswith("|"):
            j += 1
        split = lambda row: [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]
        header, body = split(lines[j]), []
        j += 2
        while j < len(lines) and lines[j].startswith("|"):
            body.append(split(lines[j]))
            j += 1
        assert match.group(1) not in tables, f"table anchor {match.group(1)} twice"
        tables[match.group(1)] = (header, body)
    return tables


def code(cell: str) -> str:
    return cell.strip("`")


def is_value(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


@dataclass
class Checker:
    anchor: str
    header: list[str]
    rows: list[list[str]]
    checked: set[tuple[int, int]] = field(default_factory=set)

    def number(self, r: int, c: int, source: Any, decimals: int) -> None:
        cell, where = self.rows[r][c], f"{self.anchor} row {self.rows[r][:3]} column {self.header[c]!r}"
        self.checked.add((r, c))
        if not is_value(source):
            assert cell == "N/A", f"{where}: {cell!r} printed for a source value {source!r}"
            return
        assert NUMBER.fullmatch(cell), f"{where}: {cell!r} is not a number (source {source!r})"
        assert len(cell.partition(".")[2]) == decimals, f"{where}: {cell!r} should have {decimals} decimals"
        assert abs(float(cell) - float(source)) <= 0.5 * 10**-decimals + 1e-9, f"{where}: printed {cell}, file has {source!r}"

    def published(self, r: int, c: int, text: str | None, decimals: int) -> None:
        """A published cell: `–` where the reference has none, else the reference's number."""
        if text is None or text.strip() in ("–", "-"):
            self.checked.add((r, c))
            assert self.rows[r][c] == "–", f"{self.anchor} row {self.rows[r][0]}: {self.rows[r][c]!r} where the reference has none"
            return
        value = float(re.match(r"-?\d+(?:\.\d+)?", text.replace("**", "").replace("−", "-").strip()).group(0))
        self.number(r, c, value, decimals)

    def unchecked(self) -> list[str]:
        return [
            f"{self.anchor}[{r}][{self.header[c]}]={cell!r}"
            for r, row in enumerate(self.rows)
            for c, cell in enumerate(row)
            if (NUMBER.fullmatch(cell) or cell == "N/A") and (r, c) not in self.checked
        ]


# -- the demo, once for the module ------------------------------------------------------------------------


@dataclass
class Demo:
    outcome: DemoOutcome
    out: Path
    markdown: str
    html: str
    tables: dict[str, tuple[list[str], list[list[str]]]]
    runs: dict[str, RunFiles]
    plots: dict[str, dict[str, Path]]


@pytest.fixture(scope="module")
def demo(demo_two_models: tuple[Path, DemoOutcome], demo_report: Any) -> Demo:
    work, outcome = demo_two_models
    written = demo_report
    markdown = written.markdown.read_text(encoding="utf-8")
    runs = {model: read_run(model, outcome.results_dir, folder) for model, folder in outcome.run_dirs.items()}
    return Demo(outcome, work / "report", markdown, written.html.read_text(encoding="utf-8"), parse_tables(markdown), runs, written.plots)


# -- one checker per table --------------------------------------------------------------------------------


def check_runs(t: Checker, demo: Demo, refs: Any) -> None:
    assert [row[0] for row in t.rows] == list(DEMO_MODELS)
    for row in t.rows:
        run = demo.runs[row[0]]
        assert code(row[1]) == row[0]
        listed = sorted(code(p.strip()) for p in row[4].split(";"))
        assert listed == sorted(p.relative_to(run.root).as_posix() for p, _ in run.results)


def check_vlm2_table1(t: Checker, demo: Demo, refs: Any) -> None:
    assert t.header[2:] == [*SUBTASK_COLUMNS, "Avg(9)", "Avg(9) ±", "Avg(8 img)", "Δhuman"]
    run_rows = [r for r, row in enumerate(t.rows) if row[1] == "run"]
    assert [t.rows[r][0] for r in run_rows] == list(DEMO_MODELS), "both runs, side by side"
    for r in run_rows:
        run = demo.runs[t.rows[r][0]]
        for c, column in enumerate(t.header[2:11], start=2):
            t.number(r, c, run.metric(f"vlm2_bench_{SUBTASK_COLUMNS[column]}", "vlm2_score"), 2)
        t.number(r, 11, run.metric("vlm2_bench", "vlm2_score"), 2)
        t.number(r, 12, run.plus("vlm2_bench", "vlm2_score"), 2)
        t.number(r, 13, run.metric("vlm2_bench", "vlm2_img8_score"), 2)
        t.number(r, 14, run.metric("vlm2_bench", "vlm2_gap_to_human"), 2)
    for source, reference in refs["table1"]:
        published = [r for r, row in enumerate(t.rows) if row[1] == "Table 1"]
        assert [t.rows[r][0] for r in published] == list(reference), source
        for r in published:
            cells = reference[t.rows[r][0]]
            for c, column in enumerate(t.header[2:11], start=2):
                t.published(r, c, cells[column], 2)
            chance = "(8" in cells["Avg(9)"]
            t.published(r, 11, None if chance else cells["Avg(9)"], 2)
            t.published(r, 12, None, 2)  # the paper gives no interval
            t.published(r, 13, cells["Avg(9)"] if chance else None, 2)
            t.published(r, 14, cells["Δhuman"], 2)


def check_vlm2_exact(t: Checker, demo: Demo, refs: Any) -> None:
    assert t.header == ["Run", "GC-Mat exact", "GC-Trk exact", "Avg(9) exact", "Avg(9) exact ±", "Avg(8 img) exact", "Avg(8 img) exact ±"]
    for r, row in enumerate(t.rows):
        run = demo.runs[row[0]]
        t.number(r, 1, run.metric("vlm2_bench_gc_mat", "gc_exact_pair_acc"), 2)
        t.number(r, 2, run.metric("vlm2_bench_gc_trk", "gc_exact_pair_acc"), 2)
        t.number(r, 3, run.metric("vlm2_bench", "vlm2_exact_score"), 2)
        t.number(r, 4, run.plus("vlm2_bench", "vlm2_exact_score"), 2)
        t.number(r, 5, run.metric("vlm2_bench", "vlm2_exact_img8_score"), 2)
        t.number(r, 6, run.plus("vlm2_bench", "vlm2_exact_img8_score"), 2)


def check_vlm2_groups(t: Checker, demo: Demo, refs: Any) -> None:
    assert t.header == ["Run", "GC", "GC ±", "OC", "OC ±", "PC", "PC ±"]
    for r, row in enumerate(t.rows):
        for c, family in zip((1, 3, 5), ("gc", "oc", "pc")):
            t.number(r, c, demo.runs[row[0]].metric(f"vlm2_bench_{family}", "vlm2_score"), 2)
            t.number(r, c + 1, demo.runs[row[0]].plus(f"vlm2_bench_{family}", "vlm2_score"), 2)


def check_vlm2_scores(t: Checker, demo: Demo, refs: Any) -> None:
    """Score | Task | Metric | then a value and a ± column per run."""
    assert t.header[3::2] == list(DEMO_MODELS) and t.header[4::2] == [f"{m} ±" for m in DEMO_MODELS]
    for r, row in enumerate(t.rows):
        task, name = code(row[1]), code(row[2])
        for c in range(3, len(t.header), 2):
            run = demo.runs[t.header[c]]
            t.number(r, c, run.metric(task, name), 2)
            t.number(r, c + 1, run.plus(task, name), 2)
    listed = {(code(row[1]), code(row[2])) for row in t.rows}
    assert {(f"vlm2_bench_{s}", "vlm2_score") for s in SUBTASK_COLUMNS.values()} | {("vlm2_bench", "vlm2_score")} <= listed


def check_long_format(t: Checker, demo: Demo, decimals: Any) -> None:
    """Run | Task | Metric | Value rows: the value of that metric of that task."""
    for r, (label, task, name, _) in enumerate(t.rows):
        value = demo.runs[label].metric(code(task), code(name))
        t.number(r, 3, value, decimals(code(name), value))


def check_vlm2_details(t: Checker, demo: Demo, refs: Any) -> None:
    check_long_format(t, demo, lambda name, value: 0 if isinstance(value, int) else 2)
    for label, run in demo.runs.items():  # complete: every other numeric subtask metric is listed
        for column in SUBTASK_COLUMNS.values():
            task = f"vlm2_bench_{column}"
            expected = {
                k.split(",")[0]
                for k, v in run.section(task).items()
                if "," in k
                and "_stderr" not in k
                and is_value(v)
                and not k.startswith(("vlm2_score", "vlm2_img8", "vlm2_gap", "vlm2_exact"))
            }
            assert {code(row[2]) for row in t.rows if row[0] == label and code(row[1]) == task} == expected, (label, task)


def check_hev_passk(t: Checker, demo: Demo, refs: Any, suffix: str = "", decimals: int = 1) -> None:
    assert [row[0] for row in t.rows] == list(PASSK)
    for c, head in enumerate(t.header[1:], start=1):
        label, k = head.rsplit(" pass@", 1)
        plus = k.endswith(" ±")
        for r, row in enumerate(t.rows):
            task, name = PASSK[row[0]][0 if k.startswith("1") else 1]
            run = demo.runs[label]
            if not plus:
                t.number(r, c, run.metric(task, name + suffix), decimals)
            else:  # the rounded number's interval is the unrounded one's where only that has a standard error
                error = run.plus(task, name + suffix)
                t.number(r, c, run.plus(task, name + "_unrounded") if error is None and not suffix else error, decimals)
    assert {h.rsplit(" pass@", 1)[0] for h in t.header[1:]} == set(DEMO_MODELS)


def check_hev_passk_unrounded(t: Checker, demo: Demo, refs: Any) -> None:
    check_hev_passk(t, demo, refs, "_unrounded", 2)


def check_hev_health(t: Checker, demo: Demo, refs: Any) -> None:
    check_long_format(t, demo, lambda name, value: 1 if name == "parse_success_rate" else 2)


def check_breakdown(key: str) -> Any:
    def check(t: Checker, demo: Demo, refs: Any) -> None:
        for r, row in enumerate(t.rows):
            (task, _), (task3, _) = PASSK[row[0]]
            for c, label in enumerate(t.header[3:], start=3):
                found = demo.runs[label].breakdown("executions", task if row[1] == "pass@1" else task3, key)
                t.number(r, c, (found or {}).get(row[2]), 2)

    return check


def check_hev_published(t: Checker, demo: Demo, refs: Any) -> None:
    for source, text in refs["humaneval"]:
        for r, row in enumerate(t.rows):
            found = re.search(rf"{re.escape(row[0])},? (\d+\.\d) ?% pass@1", text.replace("**", ""))
            assert found, (source, row[0])
            t.number(r, 1, float(found.group(1)), 1)


def check_hev_v1(t: Checker, demo: Demo, refs: Any) -> None:
    """v1 runs (pass@1 of humaneval_v1, pass@10 of humaneval_v1_pass10) beside the published v1 rows."""
    assert t.header == ["Model", "Source", "pass@1", "pass@10", "pass@1 unrounded", "pass@10 unrounded"]
    run_rows = [r for r, row in enumerate(t.rows) if row[1] == "run"]
    assert [t.rows[r][0] for r in run_rows] == list(DEMO_MODELS)
    for r in run_rows:
        run = demo.runs[t.rows[r][0]]
        t.number(r, 2, run.metric("humaneval_v1", "pass@1"), 1)
        t.number(r, 3, run.metric("humaneval_v1_pass10", "pass@10"), 1)
        t.number(r, 4, run.metric("humaneval_v1", "pass@1_unrounded"), 2)
        t.number(r, 5, run.metric("humaneval_v1_pass10", "pass@10_unrounded"), 2)
    published = [r for r, row in enumerate(t.rows) if row[1] == "published v1"]
    assert len(published) + len(run_rows) == len(t.rows)
    for source, table in refs["humaneval_v1"]:
        assert [t.rows[r][0] for r in published] == list(table), source
        for r in published:
            cells = table[t.rows[r][0]]
            t.published(r, 2, cells["pass@1"], 1)
            t.published(r, 3, cells["pass@10"], 1)
            t.published(r, 4, None, 2)
            t.published(r, 5, None, 2)


def check_haerae_overall(t: Checker, demo: Demo, refs: Any) -> None:
    gap = "Gap (explicit - original)"
    sources = {"Original": "score_original", "Explicit": "score_explicit", gap: "underspec_gap"}
    assert t.header[:8] == ["Run", "Original", "Original ±", "Explicit", "Explicit ±", gap, f"{gap} ±", "Judge failures"]
    for r, row in enumerate(t.rows):
        run = demo.runs[row[0]]
        for c, head in enumerate(t.header[1:7], start=1):
            name = sources[head.removesuffix(" ±")]
            t.number(r, c, run.plus("haerae_vision", name) if head.endswith(" ±") else run.metric("haerae_vision", name), 4)
        t.number(r, 7, run.metric("haerae_vision", "judge_failures"), 0)
        if len(t.header) > 8:
            assert t.header[8] == "Judge unparsed"
            t.number(r, 8, run.metric("haerae_vision", "judge_unparsed"), 0)


def check_haerae_category(t: Checker, demo: Demo, refs: Any) -> None:
    for c, head in enumerate(t.header[1:], start=1):
        label, variant = head.rsplit(" ", 1)
        scores = demo.runs[label].metric(f"haerae_vision_{variant}", "category_scores")  # results.json, not a summary
        assert isinstance(scores, dict) and scores and {row[0] for row in t.rows} >= set(scores)
        assert "category_scores" not in demo.runs[label].summary("judgements", f"haerae_vision_{variant}")
        for r, row in enumerate(t.rows):
            t.number(r, c, scores.get(row[0]), 4)


def check_haerae_judge(t: Checker, demo: Demo, refs: Any) -> None:
    for r, row in enumerate(t.rows):
        run, task = demo.runs[row[0]], code(row[1])
        summary = run.summary("judgements", task)
        t.number(r, 2, summary["requests"], 0)
        t.number(r, 3, summary["unparsed"], 0)
        t.number(r, 4, summary["failed"], 0)
        t.number(r, 5, run.metric(task, "judge_failures"), 0)
        t.number(r, 6, run.metric(task, "judge_unparsed"), 0)


def check_haerae_published(t: Checker, demo: Demo, refs: Any) -> None:
    for source, table in refs["haerae"]:
        assert [row[0] for row in t.rows] == list(table), source
        for r, row in enumerate(t.rows):
            t.number(r, 1, table[row[0]], 4)


JUDGE_KEYS = {
    "Requests": "requests",
    "Cache hits": "cache_hits",
    "Transport failures": "failed",
    "Parse failures": "unparsed",
    "Retries": "retries",
    "Input tokens": "input_tokens",
    "Output tokens": "output_tokens",
    "Cached input tokens": "cached_input_tokens",
    "Cached output tokens": "cached_output_tokens",
}


def check_health_judge(t: Checker, demo: Demo, refs: Any) -> None:
    listed = set()
    for r, row in enumerate(t.rows):
        run, task = demo.runs[row[0]], code(row[1])
        summary = run.summary("judgements", task)
        listed.add((row[0], task))
        assert code(row[2]) == summary["judge_model"]
        for c, head in enumerate(t.header):
            if head in JUDGE_KEYS:
                t.number(r, c, summary[JUDGE_KEYS[head]], 0)
        t.number(r, t.header.index("Wall (s)"), summary["wall_s"], 3)
    assert listed == {(label, task) for label, run in demo.runs.items() for task in run.summaries("judgements")}


EXEC_KEYS = {
    "Programs": ("programs", 0),
    "Unique": ("unique_programs", 0),
    "Gated": ("gated", 0),
    "Passed": ("passed", 0),
    "Timeouts": ("timeouts", 0),
    "Cache hits": ("exec_cache_hits", 0),
    "Workers": ("workers", 0),
    "Lint (s)": ("gate_s", 3),
    "Wall (s)": ("wall_s", 3),
}


def check_health_exec(t: Checker, demo: Demo, refs: Any) -> None:
    listed = set()
    for r, row in enumerate(t.rows):
        run, task = demo.runs[row[0]], code(row[1])
        summary = run.summary("executions", task)
        listed.add((row[0], task))
        for c, head in enumerate(t.header):
            if head in EXEC_KEYS:
                key, decimals = EXEC_KEYS[head]
                t.number(r, c, summary[key], decimals)
    assert listed == {(label, task) for label, run in demo.runs.items() for task in run.summaries("executions")}


def check_health_usage(t: Checker, demo: Demo, refs: Any) -> None:
    for r, row in enumerate(t.rows):
        numbers = demo.runs[row[0]].results_file(code(row[1]))["usage"]["by_source"][code(row[2])]
        for c, key in ((3, "input_tokens"), (4, "output_tokens"), (5, "n_api_calls")):
            t.number(r, c, numbers[key], 0)


def check_health_time(t: Checker, demo: Demo, refs: Any) -> None:
    assert len(t.rows) == sum(len(run.results) for run in demo.runs.values())
    for r, row in enumerate(t.rows):
        data = demo.runs[row[0]].results_file(code(row[1]))
        t.number(r, 3, float(data["total_evaluation_time_seconds"]), 3)  # lmms-eval writes it as a string
        t.number(r, 4, data["throughput"]["total_elapsed_time"], 3)


UNIT_SCALE = {"vlm2_bench_": 100.0, "humaneval_v_": 100.0, "haerae_vision_": 1.0}


def unit_scores_of(run: RunFiles, task: str) -> tuple[str, dict[Any, float], dict[Any, dict[str, Any]]] | None:
    """(score key, doc_id -> unit score, doc_id -> item) from the samples file beside the task's results."""
    path, data = run.owner(task)
    samples = path.with_name(path.name.replace("_results.json", f"_samples_{task}.jsonl"))
    if not samples.is_file():
        return None
    key = (data.get("configs", {}).get(task) or {}).get("score_key")
    if not key or key == "score":  # lmms-eval's default names no metric: the task's headline
        passk = {name for pair in PASSK.values() for t, name in pair if t == task}
        key = (
            "vlm2_score"
            if task.startswith("vlm2_bench_")
            else "haerae_vision_score"
            if task.startswith("haerae")
            else next(iter(passk), None)
        )
    scores, items = {}, {}
    for line in samples.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        item = sample.get(key) if key else None
        if isinstance(item, dict) and is_value(item.get("score")):
            scores[sample["doc_id"]], items[sample["doc_id"]] = float(item["score"]), item
    return (key, scores, items) if scores else None


def check_paired(t: Checker, demo: Demo, refs: Any) -> None:
    """Recomputed here from the samples files: the units both runs scored, paired by doc_id."""
    from scipy import stats

    assert t.header[:4] == ["Task", "Metric", "Unit", "n"] and t.header[6:] == [
        "Difference",
        "SE",
        "95% CI low",
        "95% CI high",
        "p",
        "Within noise",
    ]
    baseline, other = demo.runs[t.header[4]], demo.runs[t.header[5]]
    assert baseline.label == DEMO_MODELS[0]
    for r, row in enumerate(t.rows):
        task = code(row[0])
        (key, a, _), (key_b, b, _) = unit_scores_of(baseline, task), unit_scores_of(other, task)
        assert code(row[1]) == key == key_b
        shared = sorted(set(a) & set(b))
        scale = next(v for prefix, v in UNIT_SCALE.items() if task.startswith(prefix))
        if scale == 100.0 and max(list(a.values()) + list(b.values())) > 1.0:
            scale = 1.0  # unit scores already on the 0-100 scale
        decimals = 2 if task.startswith(("vlm2", "humaneval")) else 4
        xs, ys = [a[d] * scale for d in shared], [b[d] * scale for d in shared]
        diffs = [y - x for x, y in zip(xs, ys)]
        t.number(r, 3, len(shared), 0)
        t.number(r, 4, sum(xs) / len(xs), decimals)
        t.number(r, 5, sum(ys) / len(ys), decimals)
        t.number(r, 6, sum(diffs) / len(diffs), decimals)
        if len(shared) < 2:  # no spread: no SE, interval or p-value
            for c in range(7, 12):
                t.number(r, c, None, decimals)
            continue
        mean = sum(diffs) / len(diffs)
        se = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)) ** 0.5 / len(diffs) ** 0.5
        t.number(r, 7, se, decimals)
        if se > 0:
            test = stats.ttest_rel(ys, xs)
            low, high = test.confidence_interval(0.95)
            t.number(r, 8, low, decimals)
            t.number(r, 9, high, decimals)
            t.number(r, 10, test.pvalue, 4)
            assert row[11] == ("yes" if low <= 0 <= high else "no"), row
        else:
            t.number(r, 8, mean, decimals)
            t.number(r, 9, mean, decimals)
            t.number(r, 10, 1.0 if mean == 0 else 0.0, 4)


def check_data(t: Checker, demo: Demo, refs: Any) -> None:
    """Every task of every run has a row with what its loader recorded; the demo's data are local fixtures,
    so each row lists every fixture file the task read with its sha256, computed here from the file."""
    assert t.header == ["Run", "Task", "Source", "Revision", "Commit", "Files (sha256)"]
    seen = set()
    for r, row in enumerate(t.rows):
        run = demo.runs[row[0]]
        task = code(row[1])
        _, data = run.owner(task)
        record = data["configs"][task]["metadata"]["data_source"]
        assert record["source"] == "local" and code(row[2]) == f"{record['env_var']}={record['root']}"
        root = Path(record["root"])
        files = dict(re.findall(r"`([^`]+)` `([0-9a-f]{64})`", row[5]))
        assert files == {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in record["files"]}
        assert files, row
        t.checked.add((r, 4))
        assert row[4] == "N/A"
        seen.add((row[0], task))
    expected = {(label, name) for label, run in demo.runs.items() for _, d in run.results for name in d.get("configs", {})}
    assert seen == expected


CHECKERS = {
    "runs": check_runs,
    "data": check_data,
    "vlm2-table1": check_vlm2_table1,
    "vlm2-scores": check_vlm2_scores,
    "vlm2-exact": check_vlm2_exact,
    "vlm2-groups": check_vlm2_groups,
    "vlm2-details": check_vlm2_details,
    "hev-passk": check_hev_passk,
    "hev-passk-unrounded": check_hev_passk_unrounded,
    "hev-health": check_hev_health,
    "hev-task-type": check_breakdown("by_task_type"),
    "hev-capability": check_breakdown("by_capability"),
    "hev-published": check_hev_published,
    "hev-v1": check_hev_v1,
    "haerae-overall": check_haerae_overall,
    "haerae-category": check_haerae_category,
    "haerae-judge": check_haerae_judge,
    "haerae-published": check_haerae_published,
    "health-judge": check_health_judge,
    "health-exec": check_health_exec,
    "health-usage": check_health_usage,
    "health-time": check_health_time,
}


# -- the tests --------------------------------------------------------------------------------------------


def test_every_number_in_the_report_comes_from_the_runs_files(
    demo: Demo, table1_references, haerae_references, humaneval_references, humaneval_v1_references
) -> None:
    refs = {"table1": table1_references, "haerae": haerae_references, "humaneval": humaneval_references, "humaneval_v1": humaneval_v1_references}
    checkers = dict(CHECKERS) | {anchor: check_paired for anchor in demo.tables if re.fullmatch(r"paired-\d+", anchor)}
    unknown = sorted(set(demo.tables) - set(checkers))
    assert not unknown, f"tables without a checker: {unknown}"
    unchecked: list[str] = []
    checked = 0
    for anchor, (header, rows) in demo.tables.items():
        checker = Checker(anchor, header, rows)
        assert rows, f"table {anchor} is empty"
        checkers[anchor](checker, demo, refs)
        unchecked += checker.unchecked()
        checked += len(checker.checked)
    assert not unchecked, f"numbers no checker traced: {unchecked[:20]}"
    assert checked > 500


def test_every_section_and_main_table_is_there(demo: Demo) -> None:
    for anchor in (
        "runs",
        "vlm2-table1",
        "vlm2-scores",
        "vlm2-groups",
        "hev-passk",
        "hev-task-type",
        "hev-capability",
        "hev-v1",
        "haerae-overall",
        "haerae-category",
        "haerae-judge",
        "health-judge",
        "health-exec",
        "health-usage",
        "health-time",
    ):
        assert anchor in demo.tables, anchor
    for heading in (
        "## Runs",
        "## VLM2-Bench",
        "## HumanEval-V",
        "## HAERAE-Vision",
        "## Paired differences between runs",
        "## Cost and health",
    ):
        assert heading in demo.markdown


def test_no_number_hides_in_the_prose(demo: Demo) -> None:
    prose = "\n".join(line for line in demo.markdown.splitlines() if not line.startswith("|"))
    for cited in (vlm2_published.CITATION, humaneval_published.CITATION, haerae_published.CITATION, haerae_published.CAVEAT):
        prose = prose.replace(cited, "")
    prose = re.sub(r"`[^`]*`|<https?://[^>]*>|\]\([^)]*\)", "", prose)
    assert not re.findall(r"\d+\.\d+", prose)


def test_the_two_models_differ_as_scripted(demo: Demo) -> None:
    """The second model's scripted differences (fixtures' `script_demo_second_model`) reach the report."""
    header, rows = demo.tables["hev-passk"]
    b = {row[0]: dict(zip(header[1:], row[1:])) for row in rows}
    assert (b["V2C"]["stand-in-vlm-b pass@1"], b["V2C"]["stand-in-vlm-b pass@3"], b["V2C-CoT"]["stand-in-vlm-b pass@1"]) == (
        "50.0",
        "57.5",
        "25.0",
    )
    assert (b["V2C"]["stand-in-vlm pass@1"], b["V2T2C w/ strong coder"]["stand-in-vlm-b pass@1"]) == ("75.0", "50.0")
    header, rows = demo.tables["health-exec"]
    exec_rows = {(row[0], code(row[1])): dict(zip(header, row)) for row in rows}
    assert exec_rows[("stand-in-vlm-b", "humaneval_v_v2c_cot")]["Timeouts"] == "1"
    assert exec_rows[("stand-in-vlm-b", "humaneval_v_v2c")]["Gated"] == "1"
    header, rows = demo.tables["health-judge"]
    judge_rows = {(row[0], code(row[1])): dict(zip(header, row)) for row in rows}
    explicit_b = judge_rows[("stand-in-vlm-b", "haerae_vision_explicit")]
    assert (explicit_b["Parse failures"], explicit_b["Retries"], explicit_b["Cache hits"]) == ("1", "1", "1")
    assert judge_rows[("stand-in-vlm-b", "vlm2_bench_pc_vid")]["Parse failures"] == "1"
    header, rows = demo.tables["vlm2-table1"]
    avg = {row[0]: row[header.index("Avg(9)")] for row in rows if row[1] == "run"}
    assert avg["stand-in-vlm"] != avg["stand-in-vlm-b"]


def test_every_plot_is_written_non_empty_and_referenced(demo: Demo) -> None:
    assert set(demo.plots) == EXPECTED_PLOTS
    files = sorted((demo.out / "plots").iterdir())
    assert [f.name for f in files] == sorted(f"{name}.svg" for name in EXPECTED_PLOTS)
    referenced = re.findall(r"!\[[^\]]*\]\((plots/[^)]+)\)", demo.markdown)
    assert sorted(referenced) == sorted(f"plots/{name}.svg" for name in EXPECTED_PLOTS)
    for file in files:
        text = file.read_text(encoding="utf-8")
        assert file.stat().st_size > 2000 and "<svg" in text and "</svg>" in text, file
        assert "<dc:date>" not in text, f"{file}: a timestamp makes the output non-deterministic"
    for name in ("vlm2_subtasks", "humaneval_v_passk", "haerae_vision_gap"):
        text = (demo.out / "plots" / f"{name}.svg").read_text(encoding="utf-8")
        assert all(model in text for model in DEMO_MODELS), f"{name}: both runs are drawn"
    assert "GPT-4o" in (demo.out / "plots" / "vlm2_subtasks.svg").read_text(encoding="utf-8")


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.current: str | None = None
        self.images: list[str] = []
        self.external: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.current = a.get("id")
            self.tables[self.current] = []
        elif tag == "tr" and self.current:
            self.tables[self.current].append([])
        elif tag in ("td", "th") and self.current:
            self._cell = []
        if tag == "img":
            self.images.append(a.get("src") or "")
        resource = [a.get(k) or "" for k in ("src", "href") if k in a]
        if tag != "a" and any(not value.startswith(("data:", "#")) for value in resource):
            self.external.append(f"{tag} {a}")  # a file or URL the page would need besides itself

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.current:
            self.tables[self.current][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self.current = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_html_is_self_contained_and_shows_the_same_tables(demo: Demo) -> None:
    parsed = _Tables()
    parsed.feed(demo.html)
    assert not parsed.external, parsed.external
    assert len(parsed.images) == len(EXPECTED_PLOTS)
    embedded = {base64.b64decode(src.split(",", 1)[1]) for src in parsed.images if src.startswith("data:image/svg+xml;base64,")}
    assert embedded == {(demo.out / "plots" / f"{name}.svg").read_bytes() for name in EXPECTED_PLOTS}
    assert set(parsed.tables) == set(demo.tables)
    for anchor, (header, rows) in demo.tables.items():
        assert parsed.tables[anchor] == [[code(c) for c in header]] + [[c.replace("`", "") for c in row] for row in rows], anchor


def test_the_demo_runs_both_models_into_one_results_folder(demo: Demo) -> None:
    """`demo --models 2` writes as users compare models (issue 52): every run into one `--output_path`, each model's
    results in lmms-eval's `results/<model>/`, each run with its own records folder; the report reads that folder."""
    outcome = demo.outcome
    results = outcome.results_dir
    assert results == demo.out.parent / "results" and {run.output_dir for run in outcome.runs} == {results}
    assert {model: {run.results_path.parent for run in outcome.runs_of(model)} for model in DEMO_MODELS} == {
        model: {results / model} for model in DEMO_MODELS
    }
    records = [recorded_dir(run.results_path, run.results) for run in outcome.runs]
    assert len(set(records)) == len(outcome.runs) and all(r.parent == run.results_path.parent for r, run in zip(records, outcome.runs))
    assert {row[3] for row in demo.tables["runs"][1]} == {f"`{results}`"}
