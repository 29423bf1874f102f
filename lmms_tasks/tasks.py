"""`LMMS_EVAL_PLUGINS=lmms_tasks`: lmms-eval adds the folder of the package `<plugin>.tasks` to its include path
(`importlib.util.find_spec("lmms_tasks.tasks").submodule_search_locations[0]`). That folder is the task root
itself, the one `--include_path "$(lmms-tasks path)"` names: this module is a package whose only search location
is lmms_tasks/, so the plugin route and `--include_path` register the same YAMLs (no second copy). `lmms_tasks`
imports it, so find_spec answers with this module's spec."""

from __future__ import annotations

import os

__path__ = [os.path.dirname(os.path.abspath(__file__))]
__spec__.submodule_search_locations = __path__  # type: ignore[name-defined]
