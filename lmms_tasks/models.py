"""`LMMS_EVAL_PLUGINS=lmms_tasks`: lmms-eval imports `<plugin>.models` at start-up and registers its
`AVAILABLE_MODELS`; lmms-tasks adds tasks only, no models. Imported that early, it installs the compat shim that
makes lmms-eval 0.7.3 index `lmms_tasks.tasks` (the task root) at all (lmms_tasks/utils/compat/plugins.py)."""

from lmms_tasks.utils.compat import install as _install
from lmms_tasks.utils.compat import plugins as _plugins

AVAILABLE_MODELS: dict[str, str] = {}

_install(_plugins)
