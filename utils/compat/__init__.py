"""The only place that adapts lmms-tasks to lmms-eval 0.7.3: backports of our upstream patch series.

Our task YAMLs and hooks are written for an lmms-eval that has the features our patch series adds
(`python -m lmms_tasks export-upstream PATH` writes the series beside the exported tasks, in
`lmms_tasks_patches/`; `docs/UPSTREAM.md`). On a stock
lmms-eval 0.7.3 each shim here installs the same feature at run time; each one checks first whether
lmms-eval already has it (feature detection, never a version string) and then does nothing, so every shim
retires itself once its patch is merged. Nothing else in lmms-tasks patches lmms-eval, no service or
benchmark library imports this package, and `export-upstream` never exports it.

| shim | feature (patch that retires it) |
|---|---|
| `task_config` | `TaskConfig.strip_responses`, `custom_dataset`, `process_results_batch` and `score_each_repeat` accepted (0001, 0004, 0006, 0007) |
| `responses` | `strip_responses: false` keeps responses unstripped (0001-task-strip-responses) |
| `groups` | group aggregation with `match: exact`, `group_metric`, `subtasks=` and `.stderr` into `<name>_stderr_clt` (0002) |
| `exit_status` | a non-zero exit status for incomplete scoring and caught evaluation errors (0003) |
| `datasets` | `custom_dataset` loaders, retried for network errors only, `process_docs` not retried (0004) |
| `batch_scoring` | `process_results_batch` scores every document on rank 0 before aggregation; samples updated (0006) |
| `k_samples` | `--repeats K` scores each of the K responses of a task that sets `score_each_repeat`, so the stability metrics appear (0007) |
| `baselines` | a local `--baseline` path gives each task its own samples file (0008); the printed table shows the paired comparison only on the compared metric's row (not yet in 0008) |

`activate()` is called by each task folder's `utils.py` when lmms-eval first resolves one of its
`!function` tags, i.e. before any of our task or group configs is built. A task that wants only some backports
calls `install(shim)`; either way each shim is installed once per process, and a shim's probe asks what
lmms-eval itself has (a `TaskConfig` field the `task_config` shim added does not count).
"""

from __future__ import annotations

import threading
from types import ModuleType

from lmms_tasks.utils.compat import baselines, batch_scoring, datasets, exit_status, groups, k_samples, responses, task_config
from lmms_tasks.utils.services.logging import logger

SHIMS: tuple[ModuleType, ...] = (task_config, responses, groups, datasets, batch_scoring, k_samples, baselines, exit_status)

_lock = threading.RLock()
_done = False
_installed: list[str] = []


def activate() -> list[str]:
    """Install every shim whose feature this lmms-eval lacks (once per process); the names installed."""
    global _done
    with _lock:
        if _done:
            return list(_installed)
        _done = True
        missing = [shim for shim in SHIMS if not shim.present()]  # probe lmms-eval as it is, before any install
        for shim in missing:
            install(shim)
        if _installed:
            logger.info(f"lmms-tasks compat: backported to this lmms-eval (lmms_tasks.utils.compat): {', '.join(_installed)}")
        return list(_installed)


def install(shim: ModuleType) -> bool:
    """Install one shim, once per process (a third-party task that wants only some backports calls this; a shim
    installed twice would wrap lmms-eval twice and, for batch_scoring, score every item twice)."""
    with _lock:
        if shim.NAME in _installed:
            return True
        if shim.install():
            _installed.append(shim.NAME)
            return True
        return False


def installed() -> list[str]:
    """The shims active in this process (empty on an lmms-eval that has every feature)."""
    with _lock:
        return list(_installed)
