"""The test suite's start-up hook for the lmms-eval processes it starts: what every one of them would otherwise
spend the same CPU on, once per process, for the same result.

- lmms-eval's index of its built-in tasks, computed once per test run (`LMMS_TASKS_TEST_INDEX_CACHE`, a folder of
  the run): every lmms-eval process builds a `TaskManager`, which parses each of the ~1,900 YAML files of
  lmms-eval's own `lmms_eval/tasks/` with pure-Python PyYAML, about 5 s of CPU in each process (and in each rank
  under `accelerate launch`). A stored index is handed back only where it is provably what the real method would
  return (same lmms-eval code, same files); our own tasks (`--include_path`) are indexed as always.
- Modules imported at start-up but never used run only when first used (`LMMS_TASKS_TEST_DEFER_IMPORTS`, the suite
  names `evaluate`: lmms-eval imports it, and with it `transformers.pipelines`, for metrics none of our tasks names).

tests/conftest.py sets both variables for the run; `hooked(env)` (called by `e2e.run_command` for every command it
runs, and for the pytest runs in exported checkouts) puts `startup_site/` first on the process's PYTHONPATH, whose
`sitecustomize.py` does both (see that module for why each is exact). Without the variables (a user's run,
`python -m lmms_tasks demo` outside the tests) nothing changes.

Left out by a test that observes every file the run opens and every module it imports
(tests/foundation/test_config_flow.py): `unhooked(env)`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

INDEX_CACHE_ENV = "LMMS_TASKS_TEST_INDEX_CACHE"
DEFER_IMPORTS_ENV = "LMMS_TASKS_TEST_DEFER_IMPORTS"
DEFERRED = "evaluate"  # what the suite defers (tests/conftest.py)
SITE_DIR = Path(__file__).with_name("startup_site")


def hooked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the start-up hook first on PYTHONPATH, where `env` asks for either of its parts."""
    out = dict(env)
    if not (out.get(INDEX_CACHE_ENV) or out.get(DEFER_IMPORTS_ENV)):
        return out
    parts = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != SITE_DIR]
    out["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), *parts])
    return out


def unhooked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as a user's run has it: every process indexes lmms-eval's tasks itself and imports what it imports."""
    return {k: v for k, v in env.items() if k not in (INDEX_CACHE_ENV, DEFER_IMPORTS_ENV)}
