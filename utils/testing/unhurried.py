"""HumanEval-V's programs without the official 2 s wall-clock bound, in the Python processes a test starts.

The official bound is 2 s of wall clock for a whole program (sandbox start included). On 2 busy cores a correct
program can outlast it and read "timed out" (issue 43), so an end-to-end test whose programs all finish would
depend on how fast the machine is. In-process tests take `tests/humaneval_v/conftest.py`'s `unhurried` fixture,
or `with unhurried():` around an in-process lmms-eval run (`e2e.run_in_process`); a test that runs lmms-eval or
`python -m lmms_tasks` in a subprocess puts `unhurried_site(folder)` on that process's PYTHONPATH: its `sitecustomize.py` (imported by Python at start-up) makes `evaluate_programs`' default
limits the same bound no correct run reaches. The execution summaries then say `timeout_s: 600.0`.

Never for tests of the timeout itself, nor for runs holding a program that never ends (it would run for the
whole bound): those keep the official bound, as the demo does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

SECONDS = 600.0

SITECUSTOMIZE = f"""
# Written by lmms_tasks.utils.testing.unhurried: a bound no correct program reaches, not the official 2 s.
from dataclasses import replace as _replace

import lmms_tasks.utils.humaneval_v.execution as _execution

_execution.evaluate_programs.__kwdefaults__["limits"] = _replace(_execution.OFFICIAL_LIMITS, timeout={SECONDS!r})
"""


def unhurried_site(folder: Path, extra: str = "") -> Path:
    """`folder`, holding a `sitecustomize.py` that lifts the bound (followed by `extra`, more start-up code of
    the test's own: Python imports only one `sitecustomize`). Put it first on the process's PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE + extra, encoding="utf-8")
    return folder


@contextlib.contextmanager
def unhurried() -> Iterator[None]:
    """The same bound in this process, for the duration (what the `sitecustomize.py` above does at start-up)."""
    import lmms_tasks.utils.humaneval_v.execution as execution

    defaults = execution.evaluate_programs.__kwdefaults__
    saved = defaults["limits"]
    defaults["limits"] = replace(execution.OFFICIAL_LIMITS, timeout=SECONDS)
    try:
        yield
    finally:
        defaults["limits"] = saved
