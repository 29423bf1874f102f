"""lmms-eval's index of its built-in tasks, computed once per test run instead of once per lmms-eval process.

Every lmms-eval process builds a `TaskManager`, which parses each of the ~1,900 YAML files of lmms-eval's own
`lmms_eval/tasks/` with pure-Python PyYAML: about 5 s of CPU, as much again as importing lmms-eval, in each of
the test suite's lmms-eval processes (and in each rank under `accelerate launch`). tests/conftest.py names a
folder of the run in `LMMS_TASKS_TEST_INDEX_CACHE`; `hooked(env)` (called by `e2e.run_command` for every
command it runs) puts `index_site/` first on the process's PYTHONPATH, whose `sitecustomize.py` stores the
built-in index the first time and hands it back afterwards, only where it is provably what the real method would
return (same lmms-eval code, same files, see that module). Our own tasks (`--include_path`) are indexed as
always. Without the variable (a user's run, `python -m lmms_tasks demo` outside the tests) nothing changes.

Left out by a test that observes every file the run opens (tests/foundation/test_config_flow.py): `unhooked(env)`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

INDEX_CACHE_ENV = "LMMS_TASKS_TEST_INDEX_CACHE"
SITE_DIR = Path(__file__).with_name("index_site")


def hooked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the index cache's start-up hook first on PYTHONPATH, where `env` names a cache folder."""
    out = dict(env)
    if not out.get(INDEX_CACHE_ENV):
        return out
    parts = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != SITE_DIR]
    out["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), *parts])
    return out


def unhooked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the index cache (every process indexes lmms-eval's tasks itself)."""
    return {k: v for k, v in env.items() if k != INDEX_CACHE_ENV}
