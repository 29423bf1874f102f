"""The isolation levels of the shared sandbox: each level's verdicts are cached apart, an unknown level runs nothing, and
a failed start is classified from bwrap's own words (table-driven: the messages bwrap 0.11 prints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_tasks.utils.services import sandbox
from lmms_tasks.utils.services.sandbox import LEVELS, Limits, run_programs

NAMESPACES_REFUSED = sandbox.bubblewrap(None)[2] or None


@pytest.mark.skipif(NAMESPACES_REFUSED is not None, reason=f"bubblewrap cannot build a sandbox here: {NAMESPACES_REFUSED}")
def test_each_level_has_its_own_cached_verdicts(tmp_path: Path) -> None:
    program = "assert sum(range(4)) == 6\n"
    first = {level: run_programs([program], Limits(), cache_dir=tmp_path, level=level)[0] for level in LEVELS}
    again = {level: run_programs([program], Limits(), cache_dir=tmp_path, level=level)[0] for level in LEVELS}
    for level in LEVELS:
        assert first[level].passed and not first[level].cached, first[level]
        assert first[level].confinement[0] == f"level:{level}", first[level]
        assert again[level].cached and again[level].confinement[0] == f"level:{level}", again[level]  # its own entry
    assert "no-namespaces" in first["process"].confinement and "no-network" not in first["process"].confinement


def test_an_unknown_level_runs_nothing() -> None:
    result = sandbox.run_program("assert True\n", Limits(), level="none")
    assert result.status == "error" and "unknown isolation level 'none'" in result.message, result


@pytest.mark.parametrize(
    ("message", "what"),
    [
        ("bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)", "user namespaces are refused"),
        ("bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.", "user namespaces are refused"),
        ("bwrap: setting up uid map: Permission denied", "user namespaces are refused"),
        ("sandbox could not start: bwrap: Can't mount proc on /newroot/proc: Operation not permitted", "/proc cannot be mounted (the container masks /proc entries or mounts /proc/sys read-only)"),
        ("bwrap: Can't write to /proc/sys/user/max_user_namespaces: Read-only file system", "/proc/sys is read-only (bwrap cannot set up --disable-userns)"),
        ("bwrap: Failed to make / slave: Permission denied", "mounts are denied"),
        ("sandbox could not start: exit status 1", "the sandbox does not start"),
        ("bwrap: Can't mount tmpfs on /newroot/tmp: Permission denied", "mounts are denied"),
        (f"bubblewrap cannot build a sandbox here (no bwrap on PATH), and nothing runs unconfined: {sandbox.FIX}", "no bwrap is installed"),
    ],
)
def test_a_failed_start_is_classified_from_bwraps_words(message: str, what: str) -> None:
    assert sandbox.classify(message) == what
