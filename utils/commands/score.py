"""`python -m lmms_tasks score SAMPLES.jsonl`: re-score a saved lmms-eval samples file without the model.

Inference and scoring are separable: every metric's `process_results` value is saved in the samples
JSONL, so the task's own aggregation functions (loaded from its YAML by lmms-eval's loader, `!function`
tags resolved) can be re-run on them, judging included (through the judge cache, so a re-score with the
same judge repeats no call, and with `--judge-model` re-judges everything with another judge).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import re
import sys
from argparse import Namespace
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lmms_tasks import tasks_path
from lmms_tasks.utils.services import judge
from lmms_tasks.utils.services import status as run_status
from lmms_tasks.utils.services.data import iter_jsonl
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.taskconfig import task_yaml_path

SAMPLES_NAME = re.compile(r"^(?:.*_)?samples_(?P<task>.+)\.jsonl$")

# CLI option -> (judge setting, environment variable suffix)
JUDGE_OPTIONS = {
    "judge_model": ("model", "MODEL"),
    "judge_base_url": ("base_url", "BASE_URL"),
    "judge_concurrency": ("concurrency", "CONCURRENCY"),
    "judge_cache_dir": ("cache_dir", "CACHE_DIR"),
}


# Exit statuses of `python -m lmms_tasks score` (worst first when several files are scored).
EXIT_OK = 0
EXIT_METRIC_FAILED = 1  # a metric could not be computed (the others are still written)
EXIT_UNUSABLE = 2  # the samples file or the task cannot be used
EXIT_INCOMPLETE = run_status.EXIT_INCOMPLETE  # judgements or executions failed: numbers are not final
_SEVERITY = [EXIT_OK, EXIT_INCOMPLETE, EXIT_METRIC_FAILED, EXIT_UNUSABLE]


def worst(a: int, b: int) -> int:
    return max(a, b, key=_SEVERITY.index)


class RescoreError(RuntimeError):
    """The samples file or the task cannot be re-scored; the message names the file, line or metric."""


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


def expected_samples(task: str, samples_path: Path, root: str) -> tuple[int | None, str]:
    """How many documents the run evaluated, and from where: the `n-samples` of the results file written
    with this samples file (`<ts>_results.json`), else the number of documents of the task's data (its own
    `process_docs`, so the data must be reachable as for the run); (None, why) when neither is known."""
    stamp = samples_path.name.split("_samples_", 1)[0] if "_samples_" in samples_path.name else None
    results = samples_path.parent / f"{stamp}_results.json" if stamp else None
    if results is not None and results.is_file():
        try:
            effective = json.loads(results.read_text(encoding="utf-8"))["n-samples"][task]["effective"]
            return int(effective), f"the run's {results.name} (n-samples)"
        except (OSError, ValueError, KeyError, TypeError):
            pass
    try:
        from lmms_eval.utils import load_yaml_config

        config = load_yaml_config(yaml_path=str(task_yaml_path(task, root)), mode="full")
        process_docs = config.get("process_docs")
        if not callable(process_docs):
            return None, f"task {task!r} has no process_docs"
        return len(process_docs(None)), "the task's data"
    except BaseException as exc:  # noqa: BLE001 - StopEvaluation included: only the completeness check is lost
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None, f"the task's data could not be loaded ({type(exc).__name__}: {str(exc)[:300]})"


def load_metric_list(task: str, root: str) -> list[dict[str, Any]]:
    """The task's `metric_list`, loaded by lmms-eval's own YAML loader so `!function` aggregations resolve."""
    from lmms_eval.utils import load_yaml_config

    yaml_path = task_yaml_path(task, root)
    config = load_yaml_config(yaml_path=str(yaml_path), mode="full")
    metric_list = config.get("metric_list")
    if not isinstance(metric_list, list) or not metric_list:
        raise RescoreError(f"{yaml_path}: task {task!r} has no metric_list to re-score")
    return metric_list


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


def metric_values(samples: list[dict[str, Any]], metric: str, path: Path) -> list[Any]:
    missing = [i for i, s in enumerate(samples, start=1) if metric not in s]
    if missing:
        doc = samples[missing[0] - 1].get("doc_id")
        raise RescoreError(f"{path}: {len(missing)} sample(s) lack metric {metric!r} (first: sample {missing[0]}, doc_id {doc})")
    return [s[metric] for s in samples]


@contextlib.contextmanager
def judge_overrides(options: dict[str, Any]) -> Iterator[None]:
    """CLI judge settings as LMMS_TASKS_JUDGE_* for the run, and above a task YAML's `metadata.judge`."""
    given = {key: value for key, value in options.items() if value is not None}
    saved = {suffix: os.environ.get(judge.ENV_PREFIX + suffix) for key, (_, suffix) in JUDGE_OPTIONS.items() if key in given}
    for key, value in given.items():
        os.environ[judge.ENV_PREFIX + JUDGE_OPTIONS[key][1]] = str(value)
    try:
        with judge.overrides(**{JUDGE_OPTIONS[key][0]: value for key, value in given.items()}):
            yield
    finally:
        for suffix, value in saved.items():
            if value is None:
                os.environ.pop(judge.ENV_PREFIX + suffix, None)
            else:
                os.environ[judge.ENV_PREFIX + suffix] = value


def rescore(
    samples_path: Path,
    task: str | None = None,
    root: str | None = None,
    output_dir: Path | None = None,
    filter_name: str = "none",
) -> dict[str, Any]:
    """Re-run every metric aggregation of the task on the saved per-sample values; errors per metric."""
    samples = read_samples(samples_path)
    task = task or infer_task(samples_path, samples)
    metric_list = load_metric_list(task, root or tasks_path())
    expected, expected_from = expected_samples(task, samples_path, root or tasks_path())
    if expected is None:
        logger.warning(f"{samples_path}: cannot check that the file is complete: {expected_from}")
    elif len(samples) < expected:
        logger.warning(
            f"{samples_path} holds {len(samples)} sample(s) but {expected_from} says {expected}: the file is incomplete "
            f"(cut?); the metrics below cover {len(samples)} of {expected} documents"
        )
    faults_before = len(run_status.faults(task))
    output_dir = output_dir or samples_path.parent
    args = Namespace(output_path=str(output_dir), log_samples=True, limit=None, tasks=task)
    results: dict[str, Any] = {}
    higher_is_better: dict[str, bool] = {}
    errors: dict[str, str] = {}
    for entry in metric_list:
        metric = entry["metric"]
        try:
            values = metric_values(samples, metric, samples_path)
            aggregation = resolve_aggregation(entry)
            declares_args = "args" in inspect.signature(aggregation).parameters
            value = aggregation(values, args=args) if declares_args else aggregation(values)
            results[f"{metric},{filter_name}"] = value.item() if hasattr(value, "item") else value  # numpy scalars -> JSON
            stderr = getattr(aggregation, "stderr", None)  # the aggregation's own standard error, as in the run
            if callable(stderr):
                se = stderr(values, args=args) if "args" in inspect.signature(stderr).parameters else stderr(values)
                results[f"{metric}_stderr,{filter_name}"] = se.item() if hasattr(se, "item") else se
        except Exception as exc:  # noqa: BLE001 - one broken metric must not lose the others
            errors[metric] = f"{type(exc).__name__}: {exc}"
        if "higher_is_better" in entry:
            higher_is_better[metric] = bool(entry["higher_is_better"])
    failures = [f.message for f in run_status.faults(task)[faults_before:]]
    return {
        "task": task,
        "samples_file": str(samples_path),
        "n_samples": len(samples),
        "n_expected": expected,
        "n_expected_from": expected_from,
        "failures": failures,
        "results": results,
        "higher_is_better": higher_is_better,
        "errors": errors,
    }


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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks score",
        description=__doc__.splitlines()[0],
        epilog="exit status: 0 all metrics computed; 3 some judgements or executions failed (everything else is "
        "written; run again to complete them from the cache); 1 a metric could not be computed; 2 unusable "
        "samples file or task. A file with fewer samples than the run evaluated is reported as a warning.",
    )
    parser.add_argument("samples", type=Path, nargs="+", help="lmms-eval samples file(s), <ts>_samples_<task>.jsonl")
    parser.add_argument("--task", help="task name (default: from the file name or the samples' 'task' key)")
    parser.add_argument("--include-path", default=None, help="task root holding the task's YAML (default: ours)")
    parser.add_argument("--output-dir", type=Path, default=None, help="where judgements and the re-scored JSON go (default: beside the samples)")
    parser.add_argument("--filter", default="none", help="filter name for the metric keys (default: none)")
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--judge-base-url", default=None)
    parser.add_argument("--judge-concurrency", type=int, default=None)
    parser.add_argument("--judge-cache-dir", default=None)
    args = parser.parse_args(argv)
    if args.task and len(args.samples) > 1:
        parser.error("--task applies to a single samples file")
    judge_options = {key: getattr(args, key) for key in JUDGE_OPTIONS}
    status = EXIT_OK
    for samples in args.samples:
        status = worst(status, _score_file(samples, args, judge_options))
    return status


def _score_file(samples: Path, args: argparse.Namespace, judge_options: dict[str, Any]) -> int:
    """Re-score one file, write `<stem>.rescored.json`, print the table; the exit status (see EXIT_*)."""
    try:
        with judge_overrides(judge_options):
            report = rescore(samples, args.task, args.include_path, args.output_dir, args.filter)
    except (RescoreError, KeyError, judge.JudgeConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    output_dir = args.output_dir or samples.parent
    output_dir.mkdir(parents=True, exist_ok=True)
    out_path = output_dir / f"{samples.stem}.rescored.json"
    out_path.write_text(json.dumps(report, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    print(render_table(report))
    for metric, error in report["errors"].items():
        print(f"error: metric {metric!r} of {report['task']}: {error}", file=sys.stderr)
    for failure in report["failures"]:
        print(f"incomplete: {report['task']}: {failure}", file=sys.stderr)
    if report["n_expected"] is not None and report["n_samples"] < report["n_expected"]:
        print(f"warning: {samples} holds {report['n_samples']} of {report['n_expected']} samples ({report['n_expected_from']})", file=sys.stderr)
    print(f"wrote {out_path}")
    if report["errors"]:
        return EXIT_METRIC_FAILED
    return EXIT_INCOMPLETE if report["failures"] else EXIT_OK
