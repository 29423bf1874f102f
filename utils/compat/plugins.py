"""`LMMS_EVAL_PLUGINS=lmms_tasks` registers our tasks as `--include_path "$(lmms-tasks path)"` does.

lmms-eval 0.7.3's CLI adds each plugin's `<plugin>.tasks` folder to `args.include_path` only after it has built
its TaskManager from that argument, so a plugin's tasks are never indexed (`Tasks not found`). lmms-eval imports
`<plugin>.models` at start-up (its legacy plugin models), before that TaskManager is built: lmms_tasks/models.py
installs this shim there, and every TaskManager then also indexes the plugins' task folders (once each).
Feature detection by content: the shim does nothing on an lmms-eval whose CLI extends the include path before it
builds the TaskManager.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
from pathlib import Path

NAME = "plugins"
PATCHES: tuple[str, ...] = ()  # lmms-eval's own ordering bug; not in our upstream patch series


def present() -> bool:
    """True when lmms-eval's CLI adds the plugins' task folders before it builds its TaskManager."""
    spec = importlib.util.find_spec("lmms_eval.__main__")
    source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
    body = source[source.find("def cli_evaluate_single") :]
    plugins, manager = body.find("LMMS_EVAL_PLUGINS"), body.find("TaskManager(")
    return plugins == -1 or manager == -1 or plugins < manager


def plugin_task_folders() -> list[str]:
    """The `<plugin>.tasks` folders LMMS_EVAL_PLUGINS names, as lmms-eval finds them."""
    names = [p.strip() for p in os.environ.get("LMMS_EVAL_PLUGINS", "").split(",") if p.strip()]
    return [importlib.util.find_spec(f"{name}.tasks").submodule_search_locations[0] for name in names]


def with_plugins(include_path: str | list[str] | None) -> str | list[str] | None:
    folders = plugin_task_folders()
    if not folders:
        return include_path
    paths = [] if include_path is None else [include_path] if isinstance(include_path, str) else list(include_path)
    same = {os.path.realpath(p) for p in paths}
    return paths + [f for f in folders if os.path.realpath(f) not in same]


def install() -> bool:
    if present():
        return False
    from lmms_eval.tasks import TaskManager

    original = TaskManager.__init__
    if getattr(original, "_lmms_tasks_plugins", False):
        return True
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.arguments["include_path"] = with_plugins(bound.arguments.get("include_path"))
        original(*bound.args, **bound.kwargs)

    __init__._lmms_tasks_plugins = True
    TaskManager.__init__ = __init__
    return True
