"""Backport: a local `--baseline` gives each task its own samples file (patch 0008).

lmms-eval 0.7.3 loads a local `--baseline PATH` as one samples file for every task of the run and pairs by
doc_id, so with several tasks (any of our groups) each task is compared with the first file's task: a
silently wrong paired t-test. The patch resolves the path per task (`baselines.loader.resolve_local_baseline`):
the task's own file as given, a sibling `<stamp>_samples_<task>.jsonl` of another task's file, the newest
`*_samples_<task>.jsonl` under a directory (an earlier run's output path); a task the baseline run did not
evaluate is not compared. The shim wraps `lmms_eval.evaluator.load_baseline` (a module global looked up at
call time) with the same resolution.

Feature probe: the function the patch adds, `lmms_eval.baselines.loader.resolve_local_baseline`.
"""

from __future__ import annotations

import glob
import os
import re
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


def install() -> bool:
    from lmms_eval import evaluator

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
