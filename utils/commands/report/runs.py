"""Reading lmms-eval output directories: results files, grouped into runs (one model each), and the
judgement and execution summaries our tasks write beside them.

Layout read (lmms-eval 0.7.3): `<output_path>/<model>/<ts>_results.json` (or `<output_path>/<ts>_results.json`
when no model name is known) with `<ts>_samples_<task>.jsonl` beside it, and the run's own records folder its
results file names (`<output_path>/<model>/records_<ts>_<id>/judgements/<task>.summary.json` and `executions/`;
`services.records`; the previous layout's `<output_path>/judgements/` where one run has the task). Nothing here computes a metric: every value is read
as the file holds it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks.utils.services.records import recorded_dir

RESULTS_SUFFIX = "_results.json"
_MODEL_KEYS = ("model_version", "pretrained", "model", "model_name", "model_id")
_STDERR = re.compile(r"_stderr(_clt|_clustered)?$")


class ReportInputError(ValueError):
    """An input directory holds nothing a report can be made of; the message says which and why."""


@dataclass
class ResultsFile:
    """One lmms-eval invocation: its `*_results.json`, parsed, and the output path beside it."""

    path: Path
    data: dict[str, Any]
    output_path: Path

    @property
    def stamp(self) -> str:
        return self.path.name[: -len(RESULTS_SUFFIX)]

    @property
    def date(self) -> str:
        """lmms-eval's `date` (a `YYYYMMDD_HHMMSS` string), else the file name's timestamp."""
        return str(self.data.get("date") or self.stamp)

    @property
    def model(self) -> str:
        return model_identity(self.data)

    def section(self, name: str) -> dict[str, Any] | None:
        """A task's or group's metrics: the "groups" section first (group-level numbers), then "results"."""
        for part in ("groups", "results"):
            found = (self.data.get(part) or {}).get(name)
            if isinstance(found, dict):
                return found
        return None

    def names(self) -> set[str]:
        return set(self.data.get("results") or {}) | set(self.data.get("groups") or {})


def model_identity(data: Mapping[str, Any]) -> str:
    """The model under test: `model_version`/`pretrained`/`model` from `config.model_args`, else
    lmms-eval's `model_name`, else the backend name; a re-score's run (`score`) is "<model> (re-scored)", so
    the report shows it beside the original."""
    name = _model_name(data)
    return f"{name} (re-scored)" if data.get("lmms_tasks_rescore") else name


def _model_name(data: Mapping[str, Any]) -> str:
    config = data.get("config") or {}
    args = config.get("model_args")
    if isinstance(args, Mapping):
        for key in _MODEL_KEYS:
            if args.get(key):
                return str(args[key])
    elif isinstance(args, str):
        for key in _MODEL_KEYS:
            match = re.search(rf"(?:^|,)\s*{key}=([^,]+)", args)
            if match and match.group(1).strip():
                return match.group(1).strip()
    return str(data.get("model_name") or config.get("model") or "unknown model")


def output_path_of(results_path: Path, data: Mapping[str, Any]) -> Path:
    """The `--output_path` a results file was written under (where the run's judgements/ and executions/
    go), from what the run recorded: lmms-eval writes `<output_path>/<model_name_sanitized>/<ts>_results.json`,
    so the parent of that per-model folder. Which folders happen to sit beside the file decides nothing (a
    re-score's own records never pass for the run's)."""
    parent = results_path.parent
    return parent.parent if parent.name == data.get("model_name_sanitized") else parent


def read_results_file(path: Path) -> ResultsFile:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: not a readable lmms-eval results file: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ReportInputError(f"{path}: no 'results' section; is this an lmms-eval results file?")
    return ResultsFile(Path(path), data, output_path_of(Path(path), data))


def find_results_files(root: Path) -> list[Path]:
    root = Path(root)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*" + RESULTS_SUFFIX) if p.is_file())


@dataclass
class Run:
    """One run of one model, from one input directory: the lmms-eval invocations (results files) of that model
    whose tasks do not repeat one another. A model run again on a task it already has (another `--limit`, other
    settings) is a further run, shown beside the first (`split_runs`)."""

    label: str
    model: str
    source: Path
    files: list[ResultsFile] = field(default_factory=list)
    owner: dict[str, ResultsFile] = field(default_factory=dict)  # task or group -> the file it is read from
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def section(self, name: str) -> dict[str, Any] | None:
        owner = self.owner.get(name)
        return owner.section(name) if owner else None

    def has(self, name: str) -> bool:
        return name in self.owner


def _assign_owners(run: Run) -> None:
    """Each task/group is read from the results file of the run that has it (one: `split_runs`)."""
    for results_file in run.files:
        for name in results_file.names():
            run.owner[name] = results_file


def split_runs(files: Iterable[ResultsFile]) -> list[list[ResultsFile]]:
    """One model's results files, oldest first, cut into runs: a file joins the latest run unless that run
    already has one of its tasks or groups, then it starts a new one. Invocations of different tasks (the
    V2T2C second run, one benchmark after another) make one run; the same task again (two runs into one
    folder, e.g. with another `--limit`) makes two, each read from its own results and records."""
    out: list[list[ResultsFile]] = []
    names: set[str] = set()
    for results_file in sorted(files, key=lambda f: (f.date, str(f.path))):
        mine = results_file.names()
        if not out or names & mine:
            out.append([])
            names = set()
        out[-1].append(results_file)
        names |= mine
    return out


def single_file_run(run: Run, results_file: ResultsFile) -> Run:
    """One results file of a run as a run of its own (its tasks read from it and its own records)."""
    one = Run(label=run.label, model=run.model, source=run.source, files=[results_file])
    _assign_owners(one)
    return one


def load_runs(inputs: Iterable[Path | str]) -> list[Run]:
    """Runs in input order: the results files under each input, grouped by model, a model's files cut into
    runs by `split_runs`. A model with several runs in one input labels each `<model> @ <timestamp>` (its first
    results file's); two runs with the same label get the input directory's name appended (and a counter if
    that is still ambiguous)."""
    runs: list[Run] = []
    for raw in inputs:
        source = Path(raw)
        if not source.exists():
            raise ReportInputError(f"{source}: no such file or directory")
        paths = find_results_files(source)
        if not paths:
            raise ReportInputError(f"{source}: no lmms-eval results file (*{RESULTS_SUFFIX}) found under it")
        by_model: dict[str, list[ResultsFile]] = {}
        for path in paths:
            results_file = read_results_file(path)
            by_model.setdefault(results_file.model, []).append(results_file)
        for model, files in by_model.items():
            parts = split_runs(files)
            for part in parts:
                label = f"{model} @ {part[0].stamp}" if len(parts) > 1 else model
                runs.append(Run(label=label, model=model, source=source, files=part))
    for run in runs:
        _assign_owners(run)
    _disambiguate(runs)
    return runs


def _disambiguate(runs: list[Run]) -> None:
    def duplicated() -> set[str]:
        labels = [r.label for r in runs]
        return {label for label in labels if labels.count(label) > 1}

    clash = duplicated()
    for run in runs:
        if run.label in clash:
            name = run.source.name if run.source.is_dir() else run.source.parent.name
            run.label = f"{run.label} ({name})"
    clash = duplicated()
    counters: dict[str, int] = {}
    for run in runs:
        if run.label in clash:
            counters[run.label] = counters.get(run.label, 0) + 1
            run.label = f"{run.label} #{counters[run.label]}"


# -- metric lookup ---------------------------------------------------------------------------------------


def metric_keys(section: Mapping[str, Any], name: str) -> list[str]:
    """Every `"<name>,<filter>"` key of a section (never the stderr companions), "none" filter first."""
    keys = [k for k in section if "," in k and k.split(",", 1)[0] == name]
    return sorted(keys, key=lambda k: (k.split(",", 1)[1] != "none", k))


def metric(section: Mapping[str, Any] | None, name: str, filter_name: str | None = None) -> Any:
    """A metric's value whatever its filter (`pass@3,n6` or `pass@3,none`); None when absent."""
    if not section:
        return None
    if filter_name is not None and f"{name},{filter_name}" in section:
        return section[f"{name},{filter_name}"]
    keys = metric_keys(section, name)
    return section[keys[0]] if keys else None


def metric_names(section: Mapping[str, Any]) -> list[str]:
    """Metric names of a section in file order, without stderr companions and the alias."""
    names: list[str] = []
    for key in section:
        if "," not in key:
            continue
        name = key.split(",", 1)[0]
        if _STDERR.search(name) or name in names:
            continue
        names.append(name)
    return names


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # NaN is not a number here


def stderr(section: Mapping[str, Any] | None, name: str) -> float | None:
    """A metric's standard error, lmms-eval's CLT one `<name>_stderr_clt,<filter>` for the filter the metric
    is read with: the batch step writes each unit's score on the metric's own scale, so it is on that scale
    (groups: their aggregation's combination of the subtasks'); None when absent, "N/A" or not a number
    (runs before the statistics layer). `<name>_stderr`, lmms-eval's bootstrap route, is "N/A" for our
    task-defined aggregations and is not read."""
    if not section:
        return None
    keys = metric_keys(section, name)
    filters = (
        [keys[0].split(",", 1)[1]] if keys else sorted(k.split(",", 1)[1] for k in section if k.split(",", 1)[0] == f"{name}_stderr_clt")
    )
    value = section.get(f"{name}_stderr_clt,{filters[0]}") if filters else None
    return float(value) if is_number(value) else None


# -- judgement and execution summaries -------------------------------------------------------------------


@dataclass
class Summary:
    """A `<task>.summary.json` from judgements/ or executions/, attributed to the results file that owns it."""

    kind: str  # "judgements" | "executions"
    task: str  # the summary's task name (may be `<lmms-eval task>_<suffix>`, e.g. ..._strong_coder)
    owner_task: str  # the lmms-eval task it belongs to
    path: Path
    data: dict[str, Any]
    results_file: ResultsFile
    stale: bool = False  # kept for callers; a run's own records are never rewritten by a later run


def _owner_task(summary_task: str, names: Iterable[str]) -> str | None:
    candidates = [n for n in names if summary_task == n or summary_task.startswith(n + "_")]
    return max(candidates, key=len) if candidates else None


def _sibling_results(output_path: Path) -> list[ResultsFile]:
    found = []
    for path in sorted(list(output_path.glob("*" + RESULTS_SUFFIX)) + list(output_path.glob("*/*" + RESULTS_SUFFIX))):
        try:
            found.append(read_results_file(path))
        except ReportInputError:
            continue
    return found


def records_dir(results_file: ResultsFile, kind: str) -> Path | None:
    """Where the run of a results file keeps its `kind` records ("judgements" | "executions"): the folder its
    results file names (`configs.<task>.metadata.records`, `services.records`); for a run of the previous
    layout (none named), `<output_path>/<kind>/`, read only when no other run of the previous layout in that
    output path has one of its tasks (ReportInputError otherwise: whose records they are cannot be told)."""
    named = recorded_dir(results_file.path, results_file.data)
    if named is not None:
        return named / kind
    directory = results_file.output_path / kind
    if not directory.is_dir():
        return None
    mine = set(results_file.data.get("results") or {})
    sharing = [
        s
        for s in _sibling_results(results_file.output_path)
        if recorded_dir(s.path, s.data) is None
        and s.path.resolve() != results_file.path.resolve()
        and mine & set(s.data.get("results") or {})
    ]
    if sharing:
        raise ReportInputError(
            f"{directory}: records of the previous layout shared by {len(sharing) + 1} runs of the same task(s) "
            f"({results_file.path.name}, {', '.join(s.path.name for s in sharing)}): whose they are cannot be told; "
            f"run the evaluations again (each run now keeps its own records beside its results file)"
        )
    return directory


def summaries(run: Run, kind: str) -> list[Summary]:
    """The run's judgement or execution summaries, in task order, each from the records folder of the results
    file that owns its task (`records_dir`): a later run into the same output path never changes them."""
    out: list[Summary] = []
    for results_file in run.files:
        directory = records_dir(results_file, kind)
        if directory is None or not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.summary.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            task = str(data.get("task") or path.name[: -len(".summary.json")])
            owner = _owner_task(task, results_file.data.get("results") or {})
            if owner is None or run.owner.get(owner) is not results_file:
                continue
            out.append(Summary(kind, task, owner, path, data, results_file))
    return sorted(out, key=lambda s: s.task)


def summary_of(run: Run, kind: str, task: str) -> Summary | None:
    """The run's current (not overwritten) judgement or execution summary of `task`, if any."""
    key = ("summaries", kind)
    if key not in run.cache:
        run.cache[key] = {s.task: s for s in summaries(run, kind)}
    found = run.cache[key].get(task)
    return found if found is not None and not found.stale else None


def breakdown(run: Run, kind: str, task: str, key: str) -> Any:
    """A dict-valued breakdown of an execution summary (`by_task_type`, `by_capability`): from the task's
    summary, where runs with standard errors keep it, else from results.json (older runs). HAERAE-Vision's
    `category_scores` is read from results.json itself (`metric`)."""
    summary = summary_of(run, kind, task)
    if summary is not None and key in summary.data:
        return summary.data[key]
    return metric(run.section(task), key)


# -- per-document unit scores (samples files) -------------------------------------------------------------

# fields of a per-document item that identify the document; two runs pair a doc_id only when they agree
IDENTITY_FIELDS = ("task", "subtask", "variant", "doc_index", "q_id", "qid", "question_idx", "sample_index")


class SamplesError(ValueError):
    """A samples file cannot be read; the message names the file and line."""


@dataclass
class UnitScores:
    """The unit scores of one task in one run: doc_id -> score (as the file holds it, usually 0-1)."""

    task: str
    metric: str
    path: Path
    scores: dict[Any, float]
    identity: dict[Any, tuple[Any, ...]]


def samples_path(results_file: ResultsFile, task: str) -> Path:
    return results_file.path.with_name(f"{results_file.stamp}_samples_{task}.jsonl")


def score_key(results_file: ResultsFile, task: str, default: str) -> str:
    """The headline metric whose per-document items carry `score`: the task config's `score_key` when it
    names a metric (lmms-eval's default "score" does not), else `default`."""
    config = (results_file.data.get("configs") or {}).get(task) or {}
    key = config.get("score_key") if isinstance(config, Mapping) else None
    return str(key) if isinstance(key, str) and key and key != "score" else default


def unit_scores(run: Run, task: str, default_metric: str) -> UnitScores | None:
    """The per-document unit scores of a task, from the samples file beside the results file that owns
    it; None when there is no samples file or no document carries a score. Raises SamplesError for a
    file that is not JSON lines or that repeats a doc_id."""
    owner = run.owner.get(task)
    if owner is None or task not in (owner.data.get("results") or {}):
        return None
    path = samples_path(owner, task)
    if not path.is_file():
        return None
    key = score_key(owner, task, default_metric)
    scores: dict[Any, float] = {}
    identity: dict[Any, tuple[Any, ...]] = {}
    seen: set[Any] = set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SamplesError(f"{path}: not readable: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as exc:
            raise SamplesError(f"{path} line {number}: not JSON ({exc})") from exc
        if not isinstance(sample, dict) or "doc_id" not in sample:
            raise SamplesError(f"{path} line {number}: no doc_id")
        doc_id = sample["doc_id"]
        if doc_id in seen:
            raise SamplesError(f"{path} line {number}: doc_id {doc_id!r} appears twice")
        seen.add(doc_id)
        item = sample.get(key)
        value = item.get("score") if isinstance(item, dict) else item
        if is_number(value):
            scores[doc_id] = float(value)
            fields = item if isinstance(item, dict) else {}
            identity[doc_id] = tuple(fields.get(name) for name in IDENTITY_FIELDS)
    return UnitScores(task, key, path, scores, identity) if scores else None


def unit_scale(runs: Sequence[tuple[Iterable[float], Any]], metric_max: float) -> float:
    """The factor (1 or `metric_max`) from one task's unit scores to its metric's scale, given each run's
    (unit scores, headline metric): the factor that makes the units' means closest to the headlines the
    results print; where that does not decide (no headline, all zero), `metric_max` when every unit score
    lies in [0, 1] (lmms-eval's 0/1 convention), else 1."""
    candidates = sorted({1.0, float(metric_max)})
    errors = {f: 0.0 for f in candidates}
    values_all: list[float] = []
    for scores, headline in runs:
        values = list(scores)
        values_all += values
        if is_number(headline) and values:
            mean = math.fsum(values) / len(values)
            for f in candidates:
                errors[f] += abs(mean * f - float(headline))
    best = min(errors.values())
    chosen = [f for f in candidates if errors[f] == best]
    if len(chosen) == 1:
        return chosen[0]
    return float(metric_max) if all(0.0 <= v <= 1.0 for v in values_all) else 1.0


_INFO_FIELDS = {
    "n": "requests",
    "failed": "failed",
    "unparsed": "unparsed",
    "cached": "cache_hits",
    "tokens_in": "input_tokens",
    "tokens_out": "output_tokens",
}


def parse_judge_info(text: Any) -> dict[str, Any]:
    """The counts of a `judge_info` metric string (`judge=M@host prompt_sha256=… n=5 failed=0 …`), under
    the summary file's field names; plus `judge_model`."""
    if not isinstance(text, str):
        return {}
    out: dict[str, Any] = {}
    for key, value in re.findall(r"(\w+)=(\S+)", text):
        if key == "judge":
            out["judge_model"] = value.rsplit("@", 1)[0]
        elif key in _INFO_FIELDS and re.fullmatch(r"\d+", value):
            out[_INFO_FIELDS[key]] = int(value)
    return out


def judge_info_of(section: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parsed `judge_info` (or `<x>_judge_info`) metric of a task section, {} without one."""
    if not section:
        return {}
    for name in metric_names(section):
        if name == "judge_info" or name.endswith("_judge_info"):
            return parse_judge_info(metric(section, name))
    return {}


__all__ = [
    "IDENTITY_FIELDS",
    "ReportInputError",
    "ResultsFile",
    "Run",
    "SamplesError",
    "Summary",
    "UnitScores",
    "breakdown",
    "find_results_files",
    "is_number",
    "judge_info_of",
    "load_runs",
    "metric",
    "metric_keys",
    "metric_names",
    "model_identity",
    "parse_judge_info",
    "read_results_file",
    "records_dir",
    "samples_path",
    "single_file_run",
    "split_runs",
    "score_key",
    "stderr",
    "summaries",
    "summary_of",
    "unit_scale",
    "unit_scores",
]
