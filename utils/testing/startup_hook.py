"""The test suite's start-up hook for the lmms-eval processes it starts: what every one of them would otherwise
spend the same CPU on, once per process, for the same result.

- lmms-eval's index of its built-in tasks, computed once per test run (`LMMS_TASKS_TEST_INDEX_CACHE`, a folder of
  the run): every lmms-eval process builds a `TaskManager`, which parses each of the ~1,900 YAML files of
  lmms-eval's own `lmms_eval/tasks/` with pure-Python PyYAML, about 5 s of CPU in each process (and in each rank
  under `accelerate launch`). A stored index is handed back only where it is provably what the real method would
  return (same lmms-eval code, same files); our own tasks (`--include_path`) are indexed as always.
- Modules imported at start-up but never used run only when first used (`LMMS_TASKS_TEST_DEFER_IMPORTS`, the suite
  names `evaluate`: lmms-eval imports it, and with it `transformers.pipelines`, for metrics none of our tasks names).
- The heavy third-party imports every such process makes the same way (torch, torchvision, numpy, pandas, pyarrow,
  PIL, scipy: about 5.5 s of CPU each) are made once per kind of process, by the run's preload servers
  (`start_preload`, `stop_preload`); a process with `LMMS_TASKS_TEST_PRELOAD` (the run's folder of servers) runs
  its command line in a fork of them where nothing that decides those imports differs, and starts as usual
  otherwise (startup_site/lmms_tasks_test_preload.py says what is compared and how the fork stands in for it).

tests/conftest.py sets the variables for the run; `hooked(env)` (called by `e2e.run_command` for every command it
runs, and for the pytest runs in exported checkouts) puts `startup_site/` first on the process's PYTHONPATH, whose
`sitecustomize.py` does each part asked for (see that module and `lmms_tasks_test_preload.py` beside it for why
each is exact). Without the variables (a user's run, `python -m lmms_tasks demo` outside the tests) nothing changes.

Left out by a test that observes every file the run opens and every module it imports
(tests/foundation/test_config_flow.py): `unhooked(env)`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path

INDEX_CACHE_ENV = "LMMS_TASKS_TEST_INDEX_CACHE"
DEFER_IMPORTS_ENV = "LMMS_TASKS_TEST_DEFER_IMPORTS"
PRELOAD_ENV = "LMMS_TASKS_TEST_PRELOAD"
_PARTS = (INDEX_CACHE_ENV, DEFER_IMPORTS_ENV, PRELOAD_ENV)
DEFERRED = "evaluate"  # what the suite defers (tests/conftest.py)
SITE_DIR = Path(__file__).with_name("startup_site")


def hooked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the start-up hook first on PYTHONPATH, where `env` asks for any of its parts."""
    out = dict(env)
    if not any(out.get(name) for name in _PARTS):
        return out
    parts = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != SITE_DIR]
    out["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), *parts])
    return out


def unhooked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as a user's run has it: every process indexes lmms-eval's tasks itself and imports what it imports."""
    return {k: v for k, v in env.items() if k not in _PARTS}


def inherited_environment() -> dict[str, str]:
    """The environment this process's children get, which can hold more than os.environ: C code's setenv reaches
    them but not os.environ (GNU readline, which pytest loads, exports LINES and COLUMNS)."""
    import subprocess

    listing = subprocess.run(["env", "-0"], capture_output=True, check=True).stdout
    return dict(entry.decode(errors="surrogateescape").split("=", 1) for entry in listing.split(b"\0") if b"=" in entry)


@cache
def _preload_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("lmms_tasks_test_preload", SITE_DIR / "lmms_tasks_test_preload.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start_preload(
    folder: Path, env: Mapping[str, str], modules: tuple[str, ...] | None = None, tiers: Mapping[str, tuple[str, ...]] | None = None
) -> Path:
    """Make `folder` a run's folder of preload servers (set `PRELOAD_ENV` to it for the processes that should ask
    them), importing `modules` and, for the command lines that run a package of `tiers`, that package's modules on
    top (default: the suite's lists; with `modules` given, `tiers` or none), and start at once the server of the kind a plain
    `python` with the hooked `env` is (a server of any other kind starts with the second process of that kind).
    Returns that server's socket, which exists once its imports are done; a process that asks before then starts
    as usual."""
    preload = _preload_module()
    folder.mkdir(parents=True, exist_ok=True)
    if modules is not None:
        (folder / "modules").write_text("\n".join(modules) + "\n")
        (folder / "tiers").write_text(json.dumps(dict(tiers or {})))
    key = _kind(env)
    if not (folder / f"{key}.starting").exists():  # the first start of a kind gives its server's environment
        for stage in ("seen", "starting"):
            (folder / f"{key}.{stage}").touch()
        preload.start(str(folder), key, [], hooked({k: v for k, v in env.items() if k != PRELOAD_ENV}))
    return server_socket(folder, env)


def server_socket(folder: Path, env: Mapping[str, str], package: str | None = None) -> Path:
    """The socket of the server in the run's folder `folder` that a process with the hooked `env` asks first, or
    (`package`) that a command line running that package asks first."""
    key = _kind(env)
    return folder / (f"{key}.{package}.sock" if package else f"{key}.sock")


def _kind(env: Mapping[str, str]) -> str:
    """The kind of a plain `python` with the hooked `env` (no interpreter options)."""
    return _preload_module().kind([], hooked({k: v for k, v in env.items() if k != PRELOAD_ENV}))


def start_suite_preload(folder: Path, tests_env: Mapping[str, str]) -> None:
    """Start, in the run's folder of preload servers, the servers of the kinds most of the suite's processes are: the
    tests' lmms-eval runs (`offline_env`), then the tests' other processes where that is another kind (the imports
    of the first server read none of offline_env's variables); each from `tests_env`, the environment of the
    processes the tests run in (`inherited_environment()` for pytest-xdist's workers, started from here)."""
    from lmms_tasks.utils.testing.e2e import offline_env

    start_preload(folder, offline_env("http://127.0.0.1", folder, base=tests_env))
    start_preload(folder, tests_env)


def stop_preload(folder: Path, timeout: float = 60) -> None:
    """Stop every server of the run's folder of preload servers (each also stops by itself once the folder is gone)."""
    import signal
    import time

    pids = []
    for pid_file in folder.glob("*.pid"):
        try:
            pid = int(pid_file.read_text())
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
        except (OSError, ValueError):
            continue
    deadline = time.monotonic() + timeout
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def running(pid: int) -> bool:
    """Whether the process runs (a server whose starter is gone is nobody's child: once it exits it may stay a
    zombie until the system reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
