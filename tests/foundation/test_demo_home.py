"""`python -m lmms_tasks demo --work-dir DIR` keeps every file under DIR, caches included (media checks, judge and
execution caches, Hugging Face's, matplotlib's): run with HOME pointed at an empty folder, nothing lands there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.e2e
def test_the_demo_writes_nothing_outside_its_work_dir(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    redirected = ("HF_HOME", "HF_DATASETS_CACHE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR", "LMMS_TASKS_MEDIA_CACHE_DIR")
    env = {k: v for k, v in os.environ.items() if k not in redirected}
    env["HOME"] = str(home)
    env["PYTHONPATH"] = dict(os.environ).get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-m", "lmms_tasks", "demo", "--benchmarks", "haerae_vision", "--work-dir", str(work)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert "report.html" in out.stdout, out.stdout[-2000:]  # the report (matplotlib) ran too
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert written == [], written[:20]
    # the printed tables are lmms-eval's: numbers only, no dict-valued breakdown rows (docs/REFERENCE.md)
    rows = [line for line in out.stdout.splitlines() if line.startswith("|")]
    assert any("haerae_vision_score" in row for row in rows), out.stdout[-3000:]
    assert not any("category_scores" in row or "item_scores" in row for row in rows), [r for r in rows if "scores" in r][:3]
