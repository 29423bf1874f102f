"""Expensive session fixtures built once per test run, not once per pytest-xdist worker.

pytest-xdist gives each worker its own session, so a session-scoped fixture asked for by modules that run on
different workers is built once on each: the two-model demo, the export-upstream stack, the tiny model, the
patched lmms-eval. `built_once(tmp_path_factory, name, build)` makes the first worker that asks build it
(`build(folder)`, into a folder of the run's temporary root, which the workers share) and leave the value
pickled beside it; a worker that asks later reads it back, and one that asks while it is being built waits on
a lock for it instead of building a second copy. In one process (no pytest-xdist) it is simply `build(folder)`.

The value must pickle (paths, dataclasses, bytes) and must be read-only to its users: a test that changes
what it points at copies it first, as it would for a session fixture shared by modules.
A build that fails is recorded: the other workers fail at once with its error instead of repeating it.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")

SHARED_DIR = "built_once"


class BuiltElsewhereError(RuntimeError):
    """The build failed on another worker of this run."""


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The folder every worker of this run shares (None without pytest-xdist): the parent of the workers' own
    temporary roots (`<basetemp>/popen-gwN`)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    root = tmp_path_factory.getbasetemp().parent / SHARED_DIR
    root.mkdir(exist_ok=True)
    return root


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], T]) -> T:
    """`build(folder)`, done once per test run whatever the number of workers (see the module docstring)."""
    root = shared_root(tmp_path_factory)
    if root is None:
        return build(tmp_path_factory.mktemp(name))
    done, failed, folder = root / f"{name}.pickle", root / f"{name}.failed", root / name
    with open(root / f"{name}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this worker dies
        if done.exists():
            return pickle.loads(done.read_bytes())
        if failed.exists():
            raise BuiltElsewhereError(f"{name}: the build failed on another worker of this run:\n{failed.read_text(encoding='utf-8')}")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        try:
            value = build(folder)
        except Exception as exc:  # not pytest's skip or an interrupt: another worker may try again
            failed.write_text(f"{type(exc).__name__}: {exc}"[-8000:], encoding="utf-8")
            raise
        partial = root / f"{name}.pickle.partial"
        partial.write_bytes(pickle.dumps(value))
        partial.replace(done)
        return value
