"""Backport: `TaskConfig` accepts `strip_responses`, `custom_dataset`, `process_results_batch` and
`score_each_repeat` (patches 0001, 0004, 0006 and 0007).

lmms-eval 0.7.3 builds each task's config as `TaskConfig(**yaml)`, a dataclass, so an unknown YAML key
raises before any hook runs. The shim replaces the module's `TaskConfig` with a subclass that adds the
missing fields with the patches' defaults; every other field and behaviour is inherited.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

NAME = "task_config"
PATCHES = ("0001-task-strip-responses", "0004-task-custom-dataset", "0006-task-batch-scoring", "0007-evaluator-k-samples-stability")
FIELDS: tuple[tuple[str, Any, Any], ...] = (
    ("strip_responses", bool | None, None),  # None: stripped, as before; a None field stays out of a saved config
    ("custom_dataset", Callable | None, None),
    ("process_results_batch", Callable | None, None),
    ("score_each_repeat", bool | None, None),  # None: off
)


BACKPORTED = "_lmms_tasks_backported"  # on the extended class: the field names this shim added


def _missing() -> list[tuple[str, Any, Any]]:
    from lmms_eval.api import task

    have = {f.name for f in dataclasses.fields(task.TaskConfig)}
    return [field for field in FIELDS if field[0] not in have]


def native(name: str) -> bool:
    """Whether lmms-eval's own `TaskConfig` has the field: a field this shim added does not count, so the shims
    that probe a field (responses, datasets, batch_scoring) still install where this one ran first."""
    from lmms_eval.api import task

    return name in {f.name for f in dataclasses.fields(task.TaskConfig)} and name not in getattr(task.TaskConfig, BACKPORTED, ())


def present() -> bool:
    return all(native(name) for name, _, _ in FIELDS)


def install() -> bool:
    from lmms_eval.api import task

    missing = _missing()
    if not missing:
        return bool(getattr(task.TaskConfig, BACKPORTED, ()))  # already in place
    base = task.TaskConfig
    extended = dataclasses.make_dataclass(
        base.__name__,
        [(name, kind, dataclasses.field(default=default)) for name, kind, default in missing],
        bases=(base,),
        namespace={"__module__": base.__module__, "__doc__": base.__doc__, BACKPORTED: (*getattr(base, BACKPORTED, ()), *(name for name, _, _ in missing))},
    )
    task.TaskConfig = extended
    return True
