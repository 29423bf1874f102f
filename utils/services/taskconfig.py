"""Read a task's YAML configuration by task name, for the commands (listing tasks, `score` finding a task's
folder and metadata), with `include:` templates resolved and `!function` tags left unexecuted.

No runtime module reads it (it lives with the commands): lmms-eval hands a task's loader its `metadata` and
its batch step its config, so the knobs we keep under `metadata:` (the judge, execution settings) arrive
as arguments (`tests/foundation/test_config_flow.py`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import yaml

from lmms_tasks import BENCHMARKS, tasks_path


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps `!function` tags as plain strings (nothing is imported or executed)."""


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def _load_with_includes(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        config = yaml.load(fh, Loader=_Loader) or {}
    includes = config.pop("include", None)
    if not includes:
        return config
    merged: dict[str, Any] = {}
    for include in reversed([includes] if isinstance(includes, str) else includes):  # lmms-eval: the first listed wins
        merged.update(_load_with_includes((path.parent / include).resolve()))
    merged.update(config)
    return merged


@functools.cache
def _index(root: str, only: tuple[str, ...] | None = None) -> dict[str, Path]:
    """Task name -> YAML path under `root`; `only` limits the walk to those top-level folders (the
    benchmarks' folders of the default root)."""
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if only is not None and os.path.abspath(dirpath) == os.path.abspath(root):
            dirnames[:] = [d for d in dirnames if d in only]
        for filename in filenames:
            if filename.endswith(".yaml"):
                path = Path(dirpath) / filename
                with open(path, encoding="utf-8") as fh:
                    head = yaml.load(fh, Loader=_Loader) or {}
                if isinstance(head.get("task"), str):
                    found[head["task"]] = path
    return found


def task_yaml_path(task_name: str, root: str | None = None) -> Path:
    index = _index(root) if root else _index(tasks_path(), tuple(BENCHMARKS))
    if task_name not in index:
        raise KeyError(f"no task named {task_name!r} under {root or tasks_path()}")
    return index[task_name]


def task_config(task_name: str, root: str | None = None) -> dict[str, Any]:
    """The task's resolved YAML configuration (includes merged, `!function` tags as strings)."""
    return _load_with_includes(task_yaml_path(task_name, root))


def task_metadata(task_name: str, root: str | None = None) -> dict[str, Any]:
    """The task's `metadata:` mapping ({} when absent or when the task is not one of ours)."""
    try:
        metadata = task_config(task_name, root).get("metadata") or {}
    except KeyError:
        return {}
    return dict(metadata) if isinstance(metadata, dict) else {}
