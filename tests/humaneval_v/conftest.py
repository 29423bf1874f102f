"""Shared fixtures of the HumanEval-V tests (no `from __future__` import: the upstream export appends this file
to the conftest it generates, where such an import would no longer come first)."""

import functools
from dataclasses import replace

import pytest

from lmms_tasks.utils.humaneval_v import execution, metrics

# A program's wall-clock bound that no correct run reaches, however loaded the machine (the official bound is
# 2 s: on 2 busy cores a passing program can outlast it and read "timed out"; issue 43).
UNHURRIED = replace(execution.OFFICIAL_LIMITS, timeout=600.0)


@pytest.fixture
def unhurried(monkeypatch: pytest.MonkeyPatch) -> execution.Limits:
    """The tasks' own execution path (`metrics` -> `execution.evaluate_programs`) with `UNHURRIED` limits, for
    tests whose programs all finish: their verdicts then never depend on how fast the machine is."""
    monkeypatch.setattr(metrics, "evaluate_programs", functools.partial(execution.evaluate_programs, limits=UNHURRIED))
    return UNHURRIED
