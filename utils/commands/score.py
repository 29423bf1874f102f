"""`python -m lmms_tasks score SAMPLES.jsonl`: re-score a saved lmms-eval samples file without the model.

Inference and scoring are separable: every metric's `process_results` value is saved in the samples
JSONL, so the task's own batch step and aggregation functions (loaded from its YAML by lmms-eval's loader,
`!function` tags resolved) can be re-run on them, judging included (through the judge cache, so a re-score
with the same judge repeats no call, and with `--judge-model` re-judges everything with another judge). The
judge the run used (model, endpoint, cache, recorded in `judgements/<task>.summary.json`) is reused unless
told otherwise. Both go to the batch step inside the task config it is handed (`judge.Handed` in its
metadata), as lmms-eval hands a run's batch step the task's config: no environment variable is set and no
module global is written. `score --from-official BENCH PATH...` scores the official pipelines' prediction files through
the same aggregations (`lmms_tasks.utils.commands.official`).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import re
import sys
from argparse import Namespace
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lmms_tasks import tasks_path
from lmms_tasks.utils.commands.report.runs import ReportInputError, output_path_of, read_results_file, records_dir
from lmms_tasks.utils.commands.tasks import benchmark_of
from lmms_tasks.utils.services import records, stats
from lmms_tasks.utils.services import status as run_status
from lmms_tasks.utils.services.data import iter_jsonl
from lmms_tasks.utils.services.llm_judge import judge
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.records import RECORDS_KEY
from lmms_tasks.utils.services.taskconfig import task_config, task_metadata, task_yaml_path

RESCORED_FOLDER = "rescored"  # a re-score's own place, beside the samples file (never the run's judgements/)
SAMPLES_NAME = re.compile(r"^(?:.*_)?samples_(?P<task>.+)\.jsonl$")

# CLI option -> the judge setting it overrides
JUDGE_OPTIONS = {
    "judge_model": "model",
    "judge_base_url": "base_url",
    "judge_concurrency": "concurrency",
    "judge_cache_dir": "cache_dir",
}
# What a run's judgement summary records that re-scoring reuses (summary field -> judge setting).
RUN_JUDGE_FIELDS = {"judge_model": "model", "base_url": "base_url", "api_version": "api_version", "cache_dir": "cache_dir"}


# Exit statuses of `python -m lmms_tasks score`. With several files the worst wins, in this order
# (`_SEVERITY`, best first): a refusal outranks a metric that could not be computed, which outranks
# judgements or executions still missing (run again to complete them), which outranks success.
EXIT_OK = 0
EXIT_METRIC_FAILED = 1  # a metric could not be computed (the others are still written)
EXIT_UNUSABLE = 2  # refused: unusable samples file or task, a cut file without --allow-partial, no opt-in
EXIT_INCOMPLETE = run_status.EXIT_INCOMPLETE  # judgements or executions failed: numbers are not final
_SEVERITY = [EXIT_OK, EXIT_INCOMPLETE, EXIT_METRIC_FAILED, EXIT_UNUSABLE]

EPILOG = (
    "exit status (with several files the worst wins, in the order 2 > 1 > 3 > 0): 0 every metric computed; "
    "3 some judgements or executions failed (everything else is written; run again to complete them from the "
    "cache); 1 a metric could not be computed; 2 refused, nothing written for that file: an unusable samples "
    "file or task, HumanEval-V without HUMANEVAL_V_ALLOW_CODE_EXECUTION=1, a samples file holding fewer "
    "samples than the run evaluated (cut?) without --allow-partial, or a judge that fails its preflight (no key, a "
    "rejected key, an unknown model, no endpoint; checked before the first request not answered from the cache). The judge the run used (model, endpoint, "
    "API version, cache directory: judgements/<task>.summary.json beside the run) is reused; --judge-* "
    "options override single settings, --ignore-run-judge ignores the recorded ones. "
    "`score --from-official BENCH PATH... [--output-dir DIR] [--task T] [--setting S] [--allow-partial]` scores "
    "the official pipelines' prediction files (see `python -m lmms_tasks score --from-official --help`)."
)


def worst(a: int, b: int) -> int:
    return max(a, b, key=_SEVERITY.index)


class RescoreError(RuntimeError):
    """The samples file or the task cannot be re-scored; the message (one line) names the file, line or metric."""


def read_samples(path: Path) -> list[dict[str, Any]]:
    """The samples JSONL, one dict per line; a bad line is an error naming the file and line number."""
    samples = [sample for _, sample in iter_jsonl(path, RescoreError)]
    if not samples:
        raise RescoreError(f"{path} holds no samples")
    return samples


def infer_task(path: Path, samples: list[dict[str, Any]]) -> str:
    """The task name from `<ts>_samples_<task>.jsonl`, else from the samples' "task" key."""
    match = SAMPLES_NAME.match(path.name)
    if match:
        return match.group("task")
    names = {str(name) for s in samples for name in _task_keys(s)}
    if len(names) == 1:
        return str(names.pop())
    raise RescoreError(f"cannot tell the task of {path}: name it `<ts>_samples_<task>.jsonl` or pass --task (found task keys {sorted(map(str, names))})")


def _task_keys(sample: dict[str, Any]) -> list[Any]:
    """The "task" key of a sample or of the metric values in it (process_results stamps it there)."""
    found = [sample["task"]] if isinstance(sample.get("task"), str) else []
    found += [value["task"] for value in sample.values() if isinstance(value, dict) and isinstance(value.get("task"), str)]
    return found


def default_output_dir(samples_path: Path) -> Path:
    """Where a re-score writes by default: `<samples folder>/rescored/` (its `.rescored.json`, `judgements/`
    and `executions/`), apart from the run's own records in `<output_path>/judgements/`."""
    return samples_path.parent / RESCORED_FOLDER


def results_file_of(samples_path: Path) -> Path | None:
    """The `<ts>_results.json` written with a `<ts>_samples_<task>.jsonl` (None when absent)."""
    stamp = samples_path.name.split("_samples_", 1)[0] if "_samples_" in samples_path.name else None
    results = samples_path.parent / f"{stamp}_results.json" if stamp else None
    return results if results is not None and results.is_file() else None


def expected_samples(task: str, samples_path: Path, root: str, handed: judge.Handed | None = None) -> tuple[int | None, str]:
    """How many documents the run evaluated, and from where: the `n-samples` of the results file written
    with this samples file (`<ts>_results.json`), else the number of documents of the task's data (its own
    loader, handed the task's metadata with `handed` added, so the data must be reachable as for the run);
    (None, why) when neither is known."""
    results = results_file_of(samples_path)
    if results is not None:
        try:
            effective = json.loads(results.read_text(encoding="utf-8"))["n-samples"][task]["effective"]
            return int(effective), f"the run's {results.name} (n-samples)"
        except (OSError, ValueError, KeyError, TypeError):
            pass
    try:
        from lmms_eval.utils import load_yaml_config

        config = load_yaml_config(yaml_path=str(task_yaml_path(task, root)), mode="full")
        loader = config.get("custom_dataset")
        if not callable(loader):
            return None, f"task {task!r} has no custom_dataset loader"
        metadata = judge.hand(config.get("metadata") if isinstance(config.get("metadata"), dict) else {}, handed or judge.Handed())
        docs = loader(metadata=metadata, **(config.get("dataset_kwargs") or {}))  # as lmms-eval calls it
        return len(docs[config.get("test_split") or "test"]), "the task's data"
    except Exception as exc:  # noqa: BLE001 - only the completeness check is lost
        return None, f"the task's data could not be loaded ({type(exc).__name__}: {str(exc)[:300]})"


def load_scoring(task: str, root: str) -> tuple[list[dict[str, Any]], Callable[..., Any] | None, str, dict[str, Any]]:
    """The task's `metric_list`, its `process_results_batch` (None if it has none), its `score_key`
    (lmms-eval's default "score") and its whole config (what the batch step is handed), loaded once by
    lmms-eval's own YAML loader so the `!function` tags resolve."""
    from lmms_eval.utils import load_yaml_config

    try:
        yaml_path = task_yaml_path(task, root)
    except KeyError as exc:
        raise RescoreError(str(exc.args[0]) if exc.args else str(exc)) from exc
    config = load_yaml_config(yaml_path=str(yaml_path), mode="full")
    metric_list = config.get("metric_list")
    if not isinstance(metric_list, list) or not metric_list:
        raise RescoreError(f"{yaml_path}: task {task!r} has no metric_list to re-score")
    batch = config.get("process_results_batch")
    return metric_list, batch if callable(batch) else None, str(config.get("score_key") or "score"), config


def clt_stderr_of(values: list[Any], score_key: str) -> float | str:
    """`<metric>_stderr_clt` as lmms-eval computes it for a run: SD (ddof=1) / sqrt(n) over the metric's
    items that carry `score_key` (plain numbers count as they are); "N/A" for fewer than two."""
    scores = [v if isinstance(v, (int, float)) else v[score_key] for v in values if isinstance(v, (int, float)) or (isinstance(v, dict) and score_key in v)]
    return stats.clt_stderr(scores)


def batch_scored(
    samples: list[dict[str, Any]], metrics: list[str], batch: Callable[..., Any], args: Namespace, config: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The samples with their metric values replaced by what the task's batch step returns for them, as
    lmms-eval's run does before aggregating (judging and execution happen there, once per task); a batch
    step that declares `config` gets the task config, as from the patched lmms-eval (patch 0006)."""
    documents = [{m: s[m] for m in metrics if m in s} for s in samples]
    kwargs: dict[str, Any] = {"args": args}
    if "config" in inspect.signature(batch).parameters:
        kwargs["config"] = config
    scored = batch(documents, **kwargs)
    if not isinstance(scored, list) or len(scored) != len(documents):
        raise RescoreError(f"process_results_batch returned {type(scored).__name__} instead of one dict per sample")
    return [{**sample, **result} for sample, result in zip(samples, scored)]


def task_filter(config: Mapping[str, Any]) -> str:
    """The filter name lmms-eval reports the task's metrics under: the only `filter_list` entry of its
    config (e.g. `n6` for HumanEval-V pass@3), else "none"."""
    filters = config.get("filter_list")
    names = [f.get("name") for f in filters or [] if isinstance(f, dict)]
    return str(names[0]) if len(names) == 1 and names[0] else "none"


def scoring_refusal(task: str, root: str | None = None) -> str | None:
    """Why a task's saved outputs must not be scored here (one line), or None: the answer of the
    `scoring_refusal(task)` hook that the task's benchmark library declares in its `hooks.py`, if it
    declares one (HumanEval-V: executing code needs the opt-in), given the task's metadata and dataset_kwargs. The benchmark is
    the folder holding the task's YAML, not a part of its name."""
    benchmark = benchmark_of(task, root)
    hook = getattr(importlib.import_module(f"lmms_tasks.utils.{benchmark}.hooks"), "scoring_refusal", None) if benchmark else None
    if hook is None:
        return None
    dataset_kwargs = task_config(task, root).get("dataset_kwargs") or {}  # the task's declared variant (HumanEval-V: its setting)
    return hook(task, task_metadata(task, root), dataset_kwargs if isinstance(dataset_kwargs, dict) else {})


def resolve_aggregation(entry: dict[str, Any]) -> Callable[..., Any]:
    """A metric's aggregation: a `!function`, a registered name ("mean"), or the metric's registered default."""
    import lmms_eval.api.metrics  # noqa: F401 - registers the built-in aggregations
    from lmms_eval.api import registry

    aggregation = entry.get("aggregation")
    if callable(aggregation):
        return aggregation
    found = registry.get_aggregation(aggregation) if isinstance(aggregation, str) else registry.get_metric_aggregation(entry["metric"])
    if found is None:
        raise RescoreError(f"metric {entry['metric']!r}: aggregation {aggregation!r} is not a function or a registered aggregation")
    return found


def metric_values(samples: list[dict[str, Any]], metric: str, path: Path | str) -> list[Any]:
    missing = [i for i, s in enumerate(samples, start=1) if metric not in s]
    if missing:
        doc = samples[missing[0] - 1].get("doc_id")
        raise RescoreError(f"{path}: {len(missing)} sample(s) lack metric {metric!r} (first: sample {missing[0]}, doc_id {doc})")
    return [s[metric] for s in samples]


def judge_handed(recorded: Mapping[str, Any], options: Mapping[str, Any], replies: judge.RecordedReplies | None = None) -> judge.Handed:
    """What `score` hands the task's batch step besides its YAML, in its config's metadata: the judge
    recorded with the run and the --judge-* options (`PRECEDENCE`, lowest first: the benchmark's built-in
    default < LMMS_TASKS_JUDGE_* < the task YAML's metadata.judge < the judge recorded with the run < the
    --judge-* options), recorded replies (`score --from-official`), and the preflight before the first
    request sent (a re-score has no loader to run it)."""
    given = {JUDGE_OPTIONS[key]: value for key, value in options.items() if value is not None}
    return judge.Handed(recorded=dict(recorded), options=given, replies=replies, check_first=True)


PRECEDENCE = ("built-in", "environment", "yaml", "recorded", "options")


# -- the run's judge -------------------------------------------------------------------------------------


def run_output_path(samples_path: Path) -> Path | None:
    """The lmms-eval `--output_path` of the run that wrote a samples file, where its own `judgements/` and
    `executions/` are: read from the results file written with it (`report.runs.output_path_of`); None when
    there is none (then nothing the run recorded is known)."""
    results = results_file_of(samples_path)
    if results is None:
        return None
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return output_path_of(results, data if isinstance(data, dict) else {})


def run_records(samples_path: Path, kind: str) -> Path | None:
    """The folder of the run's own `kind` records ("judgements" | "executions"), as its results file names it
    (`report.runs.records_dir`: each run's own folder; the previous layout's shared one only for a single run);
    None without a results file. Raises RescoreError where the previous layout cannot tell whose they are."""
    results = results_file_of(samples_path)
    if results is None:
        return None
    try:
        return records_dir(read_results_file(results), kind)
    except ReportInputError as exc:
        raise RescoreError(str(exc)) from exc


def _judge_info_of(samples_path: Path, task: str) -> tuple[str, str] | None:
    """(model, endpoint host) of the task's `judge_info`-like metric in the run's results.json."""
    results = results_file_of(samples_path)
    if results is None:
        return None
    try:
        section = json.loads(results.read_text(encoding="utf-8"))["results"][task]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for key, value in section.items():
        name = key.split(",", 1)[0]
        if (name == "judge_info" or name.endswith("_judge_info")) and isinstance(value, str):
            match = re.match(r"judge=(\S+)@(\S+)", value)
            if match:
                return match.group(1), match.group(2)
    return None


def _results_date(path: Path) -> str:
    """lmms-eval's `date` of a results file (a `YYYYMMDD_HHMMSS` string), else its file name's timestamp."""
    try:
        date = json.loads(path.read_text(encoding="utf-8")).get("date")
    except (OSError, ValueError, AttributeError):
        date = None
    return str(date or path.name[: -len("_results.json")])


def _overwritten_by_a_later_run(samples_path: Path, output_path: Path, task: str) -> Path | None:
    """A results file of a later lmms-eval run in the same output path that also evaluated `task` (its
    `judgements/<task>.summary.json` is then that run's, not this one's), or None."""
    mine = results_file_of(samples_path)
    if mine is None:
        return None
    my_date = _results_date(mine)
    for other in sorted({*output_path.glob("*_results.json"), *output_path.glob("*/*_results.json")}):
        if other.resolve() == mine.resolve():
            continue
        try:
            tasks = json.loads(other.read_text(encoding="utf-8")).get("results") or {}
        except (OSError, ValueError, AttributeError):
            continue
        if task in tasks and (_results_date(other), str(other)) > (my_date, str(mine)):
            return other
    return None


def _run_tasks(samples_path: Path) -> set[str]:
    results = results_file_of(samples_path)
    try:
        return set(json.loads(results.read_text(encoding="utf-8"))["results"]) if results else set()
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _belongs_to_other(summary_task: str, task: str, others: set[str]) -> bool:
    """A `<task>_<suffix>` summary of a longer task name (`humaneval_v_v2t_pass3_strong_coder` is not
    `humaneval_v_v2t`'s): another task of the run prefixes it, or the suffix is our `_pass<k>` variant."""
    longer = [o for o in others if len(o) > len(task) and (summary_task == o or summary_task.startswith(o + "_"))]
    return bool(longer) or re.match(r"pass\d", summary_task[len(task) + 1 :]) is not None


def run_judge(samples_path: Path, task: str) -> tuple[dict[str, Any], str] | None:
    """The judge settings the run of this samples file used, and a line saying where they come from: its
    `judgements/<task>[_<suffix>].summary.json`, checked against the `judge_info` of the run's results.json
    (a summary another run wrote later into the same output path is not used: the results' judge model is).
    None when the task was not judged or nothing was recorded."""
    output_path = run_output_path(samples_path)
    summaries = []
    directory = run_records(samples_path, "judgements")
    if directory is not None:
        others = _run_tasks(samples_path) - {task}
        summaries = [directory / f"{task}.summary.json"] + [
            path
            for path in sorted(directory.glob(f"{task}_*.summary.json"))  # e.g. <task>_strong_coder
            if not _belongs_to_other(path.name[: -len(".summary.json")], task, others)
        ]
    info = _judge_info_of(samples_path, task)
    legacy = directory is not None and output_path is not None and directory == output_path / "judgements"
    later = _overwritten_by_a_later_run(samples_path, output_path, task) if legacy else None
    if later is not None:
        summaries = []  # the later run's judge, not this one's
    for path in summaries:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("replayed_from"):
            continue
        if info is not None and (data.get("judge_model"), data.get("endpoint_host")) != info:
            break  # written by another run into the same output path
        settings = {setting: data[field] for field, setting in RUN_JUDGE_FIELDS.items() if data.get(field)}
        if "model" in settings:
            return settings, str(path)
    if info is not None:
        return {"model": info[0]}, f"the judge_info of {results_file_of(samples_path)} (endpoint and cache not recorded)"
    if later is not None:
        logger.warning(f"{task}: the judge summary in {output_path / 'judgements'} belongs to a later run ({later.name}); not reusing it (pass --judge-model / --judge-base-url / --judge-cache-dir)")
    return None


# -- scoring ---------------------------------------------------------------------------------------------


def aggregate(
    task: str,
    samples: list[dict[str, Any]],
    *,
    source: str,
    root: str | None = None,
    output_dir: Path | None = None,
    filter_name: str | None = None,
    n_expected: int | None = None,
    n_expected_from: str = "",
    handed: judge.Handed | None = None,
    scored_samples: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run the task's batch step and every metric aggregation of the task (its YAML's `metric_list`) on
    per-sample values shaped as lmms-eval's samples file holds them (`{metric: process_results value}` per
    document); errors per metric. The same for a saved samples file and for official prediction files
    (`score --from-official`). The batch step gets the task's config with `handed` (the judge settings and
    recorded replies of the command: `judge_handed`) added to its metadata."""
    root = root or tasks_path()
    scored_samples = [] if scored_samples is None else scored_samples  # filled with the samples as scored here
    metric_list, batch, score_key, config = load_scoring(task, root)
    filter_name = filter_name or task_filter(config)
    config["metadata"] = judge.hand(config.get("metadata") if isinstance(config.get("metadata"), dict) else {}, handed or judge.Handed(check_first=True))
    if output_dir:  # this re-score's own records folder (`services.records`), named in its results file as "."
        config["metadata"][RECORDS_KEY] = str(Path(output_dir).expanduser().resolve())
    faults_before = len(run_status.faults(task))
    args = Namespace(output_path=str(output_dir) if output_dir else None, log_samples=True, limit=None, tasks=task)
    results: dict[str, Any] = {}
    higher_is_better: dict[str, bool] = {}
    errors: dict[str, str] = {}
    if batch is not None:
        try:
            samples = batch_scored(samples, [e["metric"] for e in metric_list], batch, args, config)
        except (judge.JudgeUnavailable, judge.JudgeConfigError):
            raise  # the judge is unusable as configured: the whole file is refused, nothing written
        except Exception as exc:  # noqa: BLE001 - reported for every metric (none can be computed)
            errors = {e["metric"]: f"{type(exc).__name__}: {exc}" for e in metric_list}
    for entry in metric_list:
        if entry["metric"] in errors:
            continue
        metric = entry["metric"]
        try:
            values = metric_values(samples, metric, source)
            aggregation = resolve_aggregation(entry)
            declares_args = "args" in inspect.signature(aggregation).parameters
            value = aggregation(values, args=args) if declares_args else aggregation(values)
            results[f"{metric},{filter_name}"] = value.item() if hasattr(value, "item") else value  # numpy scalars -> JSON
            results[f"{metric}_stderr_clt,{filter_name}"] = clt_stderr_of(values, score_key)  # as in the run
        except (judge.JudgeUnavailable, judge.JudgeConfigError):
            raise  # the judge failed its preflight: nothing of this file can be judged
        except Exception as exc:  # noqa: BLE001 - one broken metric must not lose the others
            errors[metric] = f"{type(exc).__name__}: {exc}"
        if "higher_is_better" in entry:
            higher_is_better[metric] = bool(entry["higher_is_better"])
    failures = [f.message for f in run_status.faults(task)[faults_before:]]
    scored_samples.extend(samples)
    return {
        "task": task,
        "samples_file": source,
        "n_samples": len(samples),
        "n_expected": n_expected,
        "n_expected_from": n_expected_from,
        "failures": failures,
        "results": results,
        "higher_is_better": higher_is_better,
        "errors": errors,
    }


def rescore(
    samples_path: Path,
    task: str | None = None,
    root: str | None = None,
    output_dir: Path | None = None,
    filter_name: str | None = None,
    allow_partial: bool = False,
    samples: list[dict[str, Any]] | None = None,
    handed: judge.Handed | None = None,
    scored_samples: list[dict[str, Any]] | None = None,
    records_dir: Path | None = None,
) -> dict[str, Any]:
    """Re-run every metric aggregation of the task on the saved per-sample values; errors per metric. The
    judgements and executions it makes go to `records_dir` (default: a folder of this re-score's own in
    `output_dir`, `services.records.fresh_path`: no later re-score into the same folder replaces them).

    Refused (RescoreError, nothing computed) when the task cannot be scored here (HumanEval-V without the
    opt-in) or when the file holds fewer samples than the run evaluated, unless `allow_partial`."""
    samples = read_samples(samples_path) if samples is None else samples
    task = task or infer_task(samples_path, samples)
    root = root or tasks_path()
    refusal = scoring_refusal(task, root)  # the refusals come first: they need no lmms-eval import
    if refusal:
        raise RescoreError(refusal)
    expected, expected_from = expected_samples(task, samples_path, root, handed)
    if expected is None:
        logger.warning(f"{samples_path}: cannot check that the file is complete: {expected_from}")
    elif len(samples) < expected and not allow_partial:
        raise RescoreError(
            f"{samples_path} holds {len(samples)} of the {expected} samples {expected_from} says the run evaluated "
            f"(cut?): nothing scored; pass --allow-partial to score the {len(samples)} it holds"
        )
    return aggregate(
        task,
        samples,
        source=str(samples_path),
        root=root,
        output_dir=records_dir or records.fresh_path(output_dir or default_output_dir(samples_path)),
        filter_name=filter_name,
        n_expected=expected,
        n_expected_from=expected_from,
        handed=handed,
        scored_samples=scored_samples,
    )


RESCORE_KEY = "lmms_tasks_rescore"  # in a re-score's results file: the run it re-scored


def write_run(report: dict[str, Any], samples_path: Path, scored: list[dict[str, Any]], output_dir: Path, records_dir: Path) -> Path:
    """The re-score as an lmms-eval run: `<ts>_results.json` and `<ts>_samples_<task>.jsonl` in `output_dir`,
    the original run's results file (model, configs) with this task's new numbers, its records folder
    (`metadata.records`: `records_dir`, in `output_dir`, where this re-score's judgements/ and executions/ are) and
    `lmms_tasks_rescore` naming the run it came from; `report` shows it beside the original (as
    "<model> (re-scored)") and lmms-eval's `--baseline` reads its samples file."""
    import time

    task = report["task"]
    original = results_file_of(samples_path)
    data: dict[str, Any] = {}
    if original is not None:
        try:
            data = json.loads(original.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
    config = dict((data.get("configs") or {}).get(task) or {})
    metadata = {k: v for k, v in (config.get("metadata") or {}).items() if k != RECORDS_KEY}
    config["metadata"] = {**metadata, **({RECORDS_KEY: os.path.relpath(records_dir, output_dir)} if records_dir.is_dir() else {})}
    n = report["n_samples"]
    data.update(
        results={task: {"alias": task, **report["results"]}},
        groups={},
        group_subtasks={task: []},
        configs={task: config},
        higher_is_better={task: report["higher_is_better"]},
        **{"n-samples": {task: {"original": n, "effective": n}}},
    )
    data["versions"] = {task: (data.get("versions") or {}).get(task)}
    data[RESCORE_KEY] = {"results": str(original) if original else None, "samples": str(samples_path), "errors": report["errors"], "failures": report["failures"]}
    output_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d_%H%M%S")
    while (output_dir / f"{stamp}_results.json").exists():
        time.sleep(1)
        stamp = time.strftime("%Y%m%d_%H%M%S")
    data["date"] = stamp
    (output_dir / f"{stamp}_samples_{task}.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False, default=str) + "\n" for s in scored), encoding="utf-8")
    results_path = output_dir / f"{stamp}_results.json"
    results_path.write_text(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    return results_path


def render_table(report: dict[str, Any]) -> str:
    """The same markdown table lmms-eval prints at the end of a run."""
    from lmms_eval.utils import make_table

    task = report["task"]
    table_input = {
        "results": {task: dict(report["results"])},
        "n-shot": {task: 0},
        "higher_is_better": {task: report["higher_is_better"]},
    }
    return make_table(table_input)


def unused_report_path(output_dir: Path, base: str, taken: set[Path] = frozenset()) -> Path:
    """`<base>.rescored.json` in `output_dir`, or `<base>.<n>.rescored.json` with the first n from 2 that
    names no file yet (nor one in `taken`): a later re-score into one folder never replaces an earlier one's."""
    path, n = output_dir / f"{base}.rescored.json", 1
    while path.exists() or path in taken:
        n += 1
        path = output_dir / f"{base}.{n}.rescored.json"
    return path


def emit(report: dict[str, Any], out_path: Path, source: Path | str) -> int:
    """Write the report as JSON (atomically), print its table and problems; the file's exit status."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp")
    tmp.write_text(json.dumps(report, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out_path)
    print(render_table(report))
    for metric, error in report["errors"].items():
        print(f"error: metric {metric!r} of {report['task']}: {error}", file=sys.stderr)
    for failure in report["failures"]:
        print(f"incomplete: {report['task']}: {failure}", file=sys.stderr)
    if report["n_expected"] is not None and report["n_samples"] < report["n_expected"]:
        print(f"warning: {source} holds {report['n_samples']} of {report['n_expected']} samples ({report['n_expected_from']})", file=sys.stderr)
    for note in report.get("warnings", []):
        print(f"warning: {note}", file=sys.stderr)
    print(f"wrote {out_path}")
    if report["errors"]:
        return EXIT_METRIC_FAILED
    return EXIT_INCOMPLETE if report["failures"] else EXIT_OK


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """The --judge-* options: each overrides one judge setting, above everything else (docs/JUDGE.md)."""
    parser.add_argument("--judge-model", default=None, help="the judge model to ask (overrides LMMS_TASKS_JUDGE_MODEL, the task YAML and the judge the run recorded)")
    parser.add_argument("--judge-base-url", default=None, help="the judge's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (overrides LMMS_TASKS_JUDGE_BASE_URL and the recorded one); the key still comes from LMMS_TASKS_JUDGE_API_KEY")
    parser.add_argument("--judge-concurrency", type=int, default=None, help="judge requests in flight at once (overrides LMMS_TASKS_JUDGE_CONCURRENCY)")
    parser.add_argument("--judge-cache-dir", default=None, help="the judge's reply cache: replies found there are not asked again (overrides LMMS_TASKS_JUDGE_CACHE_DIR and the recorded one)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks score", description=__doc__.splitlines()[0], epilog=EPILOG)
    parser.add_argument("samples", type=Path, nargs="+", help="lmms-eval samples file(s), <ts>_samples_<task>.jsonl")
    parser.add_argument("--task", help="task name (default: from the file name or the samples' 'task' key)")
    parser.add_argument("--include-path", default=None, help="task root holding the task's YAML (default: ours)")
    parser.add_argument("--output-dir", type=Path, default=None, help=f"where the re-scored JSON and this re-score's judgements/ and executions/ go (default: {RESCORED_FOLDER}/ beside the samples file, apart from the run's own judgements/ and executions/, which stay as the run wrote them; the line printed last says where they went)")
    parser.add_argument("--filter", default=None, help="filter name for the metric keys (default: the task's own, e.g. n6; else none)")
    parser.add_argument("--allow-partial", action="store_true", help="score a samples file holding fewer samples than the run evaluated (a warning instead of exit status 2)")
    parser.add_argument("--ignore-run-judge", action="store_true", help="do not reuse the judge settings recorded with the run (environment and task YAML apply, as in a run)")
    add_judge_options(parser)
    args = parser.parse_args(argv)
    if args.task and len(args.samples) > 1:
        parser.error("--task applies to a single samples file")
    judge_options = {key: getattr(args, key) for key in JUDGE_OPTIONS}
    status = EXIT_OK
    for samples in args.samples:
        status = worst(status, _score_file(samples, args, judge_options))
    return status


def _score_file(samples_path: Path, args: argparse.Namespace, judge_options: dict[str, Any]) -> int:
    """Re-score one file, write `<stem>.rescored.json` (`<stem>.<n>.rescored.json` where one is there already),
    print the table; the exit status (see EXIT_*)."""
    try:
        samples = read_samples(samples_path)
        task = args.task or infer_task(samples_path, samples)
        recorded = None if args.ignore_run_judge else run_judge(samples_path, task)
        if recorded:
            shown = ", ".join(f"{k}={v}" for k, v in recorded[0].items())
            print(f"judge: the run's ({shown}) from {recorded[1]}; --judge-* options override it, --ignore-run-judge ignores it", file=sys.stderr)
        handed = judge_handed(recorded[0] if recorded else {}, judge_options)
        scored: list[dict[str, Any]] = []
        output_dir = args.output_dir or default_output_dir(samples_path)
        records_dir = records.fresh_path(output_dir)
        report = rescore(
            samples_path, task, args.include_path, output_dir, args.filter, allow_partial=args.allow_partial, samples=samples, handed=handed,
            scored_samples=scored, records_dir=records_dir,
        )
    except (RescoreError, judge.JudgeConfigError, judge.JudgeUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    status = emit(report, unused_report_path(output_dir, samples_path.stem), samples_path)
    print(f"wrote {write_run(report, samples_path, scored, output_dir, records_dir)} (an lmms-eval run: `report` shows it beside the original)")
    try:
        run_judgements = run_records(samples_path, "judgements")
    except RescoreError:
        run_judgements = None
    print(records_note(records_dir, run_judgements.parent if run_judgements is not None else None))
    return status


def records_note(output_dir: Path, run_dir: Path | None) -> str:
    """Where this re-score's judgement and execution records went, beside the run's own (`run_dir`: the folder
    holding the run's judgements/ and executions/, left unchanged)."""
    written = f"re-score records: {output_dir / 'judgements'}/ and {output_dir / 'executions'}/ (where the task judges or executes)"
    if run_dir is None:
        return written + "; no results file beside the samples file says where the run's own records are"
    if run_dir.resolve() == output_dir.resolve():
        return written + " (the run's own folders: the run's records of this task are replaced by the re-score's)"
    return written + f"; the run's own records in {run_dir / 'judgements'}/ are left unchanged"
