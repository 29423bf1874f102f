"""Which version of the lmms-eval patch series a checkout needs (export-upstream writes it beside the tasks)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import lmms_eval
import pytest

from lmms_tasks.utils.commands.upstream import series
from lmms_tasks.utils.commands.upstream.sources import ExportError


def checkout(dest: Path) -> Path:
    """An lmms-eval checkout as installed (0.7.3), without its ~2000 task folders."""
    shutil.copytree(Path(lmms_eval.__file__).parent, dest / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__", "tasks"))
    (dest / "lmms_eval" / "tasks").mkdir()
    return dest


def test_the_series_files_are_complete_and_git_am_ready() -> None:
    for version in series.VERSIONS:
        files = series.patch_files(version)
        assert [f.stem for f in files] == list(series.FEATURES)
        assert len(files) == 8  # 0001-0005: strip, groups, exit status, custom_dataset, stderr; 0006-0008: batch scoring, k-samples, baselines
        for number, patch in enumerate(files, start=1):
            head = patch.read_text(encoding="utf-8").splitlines()[:6]
            assert head[0].startswith("From ") and head[1].startswith("From: ") and any(f"[PATCH {number}/{len(files)}]" in line for line in head), (patch, head)


def test_a_stock_checkout_gets_the_released_version(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    assert series.missing_features(root) == list(series.FEATURES)
    plan = series.plan(root)
    assert plan.version == "0.7.3" and sorted(plan.files) == [f"lmms_tasks_patches/{name}.patch" for name in series.FEATURES]
    assert not (root / "test").exists()  # checking applicability never touches the checkout


def test_a_patched_checkout_needs_nothing_and_a_half_patched_one_is_refused(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    for patch in series.patch_files("0.7.3"):
        subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=root, check=True, capture_output=True)
    assert series.missing_features(root) == [] and series.plan(root).files == {}
    (root / "lmms_eval/api/run_status.py").unlink()  # as if 0003 were reverted
    with pytest.raises(ExportError, match=r"has some of the features our tasks need but not \['0003-cli-exit-status'\]"):
        series.plan(root)


def test_a_checkout_neither_version_fits_is_named(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    task_py = root / "lmms_eval/api/task.py"
    task_py.write_text(task_py.read_text().replace("def process_results(self, doc, results, full_docs=None):", "def process_results(self, doc, res, full_docs=None):"))
    with pytest.raises(ExportError, match=r"neither version of the lmms-eval patch series applies \(0\.7\.3: 0001-task-strip-responses\.patch: .*; main: "):
        series.plan(root)
