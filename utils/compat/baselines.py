"""Backport: a local `--baseline` gives each task its own samples file (patch 0008).

lmms-eval 0.7.3 loads a local `--baseline PATH` as one samples file for every task of the run and pairs by
doc_id, so with several tasks (any of our groups) each task is compared with the first file's task: a
silently wrong paired t-test. The patch resolves the path per task (`baselines.loader.resolve_local_baseline`):
the task's own file as given, a sibling `<stamp>_samples_<task>.jsonl` of another task's file, the newest
`*_samples_<task>.jsonl` under a directory (an earlier run's output path); a task the baseline run did not
evaluate is not compared. The shim wraps `lmms_eval.evaluator.load_baseline` (a module global looked up at
call time) with the same resolution.

Feature probe: the function the patch adds, `lmms_eval.baselines.loader.resolve_local_baseline`.

The printed table: lmms-eval compares one metric per task (the per-sample scores of its `score_key`) but
0.7.3's `make_table` puts the comparison on every metric row of the task (Diff = the row's value minus the
compared metric's baseline mean, and that metric's CI and p-value). The shim also wraps `make_table` so the
Baseline, Diff, CI and P_Value columns are filled only on the row of the metric that was compared; every
other row shows N/A there (the README, "--baseline"). The same wrapper leaves dict-valued results (a task's
breakdowns, e.g. HAERAE-Vision's `category_scores` and `item_scores`) out of the printed table, which 0.7.3
would print as one long dict cell: results.json keeps them (neither is in a patch yet).
"""

from __future__ import annotations

import glob
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

NAME = "baselines"
PATCHES = ("0008-baselines-per-task-samples",)
SAMPLES_FILE = re.compile(r"^(?P<stamp>.+?)_samples_(?P<task>.+)\.jsonl$")


def present() -> bool:
    from lmms_eval.baselines import loader

    return callable(getattr(loader, "resolve_local_baseline", None))


def resolve_local_baseline(path: str, task_name: str) -> str | None:
    """The samples file a local --baseline path gives for `task_name`; None when it has none."""
    if os.path.isdir(path):
        found = glob.glob(os.path.join(glob.escape(path), "**", f"*_samples_{glob.escape(task_name)}.jsonl"), recursive=True)
        found = [f for f in found if (m := SAMPLES_FILE.match(os.path.basename(f))) is not None and m.group("task") == task_name]
        return max(found, key=lambda f: (os.path.basename(f), f)) if found else None
    match = SAMPLES_FILE.match(os.path.basename(path))
    if match is None or match.group("task") == task_name:
        return path
    sibling = os.path.join(os.path.dirname(path), f"{match.group('stamp')}_samples_{task_name}.jsonl")
    return sibling if os.path.isfile(sibling) else None


PAIRED_PREFIX = "paired_"
ROW_SEPARATOR = "\u200b"  # a task's other rows go under its name plus this invisible mark (printed the same)


def compared_rows_only(result_dict: Mapping[str, Any], column: str = "results") -> dict[str, Any]:
    """`result_dict` for `make_table`, with each compared task split in two consecutive entries shown under
    the same name: the compared metric (`score_key`) with the paired_* fields, and the other metrics without
    them. Nothing else changes; results without a comparison are returned as they are."""
    rows = result_dict.get(column)
    if not isinstance(rows, Mapping) or not any(isinstance(d, Mapping) and any(str(k).startswith(PAIRED_PREFIX) for k in d) for d in rows.values()):
        return dict(result_dict)
    configs = result_dict.get("configs") or {}
    split: dict[str, Any] = {}
    n_shot = dict(result_dict.get("n-shot") or {})
    higher = dict(result_dict.get("higher_is_better") or {})
    for task, values in rows.items():
        if not isinstance(values, Mapping) or not any(str(k).startswith(PAIRED_PREFIX) for k in values):
            split[task] = values
            continue
        compared = str((configs.get(task) or {}).get("score_key", "score"))
        name = values.get("alias", task)
        mine = {k: v for k, v in values.items() if k == "alias" or str(k).startswith(PAIRED_PREFIX) or _metric_of(str(k)) == compared}
        others = {k: v for k, v in values.items() if k not in mine or k == "alias"}
        split[task] = {**mine, "alias": name}
        if any(k != "alias" for k in others):
            other = f"{task}{ROW_SEPARATOR}"
            split[other] = {**others, "alias": name}
            if task in n_shot:
                n_shot[other] = n_shot[task]
            if task in higher:
                higher[other] = higher[task]
    return {**result_dict, column: split, "n-shot": n_shot, "higher_is_better": higher}


def _metric_of(key: str) -> str:
    """The metric a results key belongs to: `m,filter`, `m_stderr,filter`, `m_stderr_clt,filter`, ..."""
    metric = key.partition(",")[0]
    for suffix in ("_stderr_clustered", "_stderr_clt", "_stderr", "_expected_accuracy", "_consensus_accuracy", "_internal_variance", "_consistency_rate"):
        if metric.endswith(suffix):
            return metric[: -len(suffix)]
    return metric


def numbers_only(result_dict: Mapping[str, Any], column: str = "results") -> dict[str, Any]:
    """`result_dict` for `make_table`, without the dict-valued metric entries (breakdowns such as
    `category_scores`: results.json keeps them; a table cell is a number). Nothing else changes."""
    rows = result_dict.get(column)
    if not isinstance(rows, Mapping) or not any(isinstance(d, Mapping) and any(isinstance(v, Mapping) for v in d.values()) for d in rows.values()):
        return dict(result_dict)
    kept = {
        task: {k: v for k, v in d.items() if not isinstance(v, Mapping)} if isinstance(d, Mapping) and any(isinstance(v, Mapping) for v in d.values()) else d
        for task, d in rows.items()
    }
    return {**result_dict, column: kept}


def _table_with_compared_rows_only(original: Callable[..., Any]) -> Callable[..., Any]:
    def make_table(result_dict: Any, column: str = "results", sort_results: bool = False) -> Any:
        if isinstance(result_dict, Mapping):
            result_dict = compared_rows_only(numbers_only(result_dict, column), column)
        return original(result_dict, column, sort_results)

    make_table.__wrapped__ = original  # type: ignore[attr-defined]
    return make_table


def install() -> bool:
    from lmms_eval import evaluator
    from lmms_eval import utils as lmms_utils

    original_table = lmms_utils.make_table
    table = _table_with_compared_rows_only(original_table)
    lmms_utils.make_table = table
    # the CLI imported make_table by name (`python -m lmms_eval` runs it as __main__)
    for module in (sys.modules.get("lmms_eval.__main__"), sys.modules.get("__main__"), evaluator):
        if module is not None and getattr(module, "make_table", None) is original_table:
            module.make_table = table

    original = evaluator.load_baseline

    def load_baseline(baseline_arg: str, task_name: str) -> tuple[dict[Any, Any], Any]:
        if isinstance(baseline_arg, str) and os.path.exists(baseline_arg):
            path = resolve_local_baseline(baseline_arg, task_name)
            if path is None:  # also every group of the run: groups have no samples file
                return {}, None
            return original(path, task_name)
        return original(baseline_arg, task_name)

    load_baseline.__wrapped__ = original  # type: ignore[attr-defined]
    evaluator.load_baseline = load_baseline
    return True
