"""Which version of the lmms-eval patch series a checkout needs (export-upstream writes it beside the tasks)."""

from __future__ import annotations

import re
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
        assert [f.stem for f in files] == series.names(version)
        # 0001-0004: strip, groups, exit status, custom_dataset, the loading retry policy; 0006-0008: batch scoring,
        # k-samples, baselines (0005, an aggregation's own stderr, is gone: lmms-eval's CLT stderr is the one route); main also 0009 (its openai model stopped sending top_p and the other sampling keys that 0.7.3 sends)
        assert "0004-task-custom-dataset" in series.names(version) and "0004-task-load-retry-network-errors" in series.names(version)
        for patch in files:  # each is a pull request of its own in the stack: one commit, no "n/N" numbering
            head = patch.read_text(encoding="utf-8").splitlines()[:6]
            assert head[0].startswith("From ") and head[1].startswith("From: ") and any(line.startswith("Subject: [PATCH] ") for line in head), (patch, head)


def test_deleting_a_patch_file_takes_it_out_of_the_series(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The series is the files that are there (a patch that goes away is deleted, nothing else); a file without a
    feature probe is refused."""
    copy = tmp_path / "patch_series"
    shutil.copytree(series.SERIES_DIR, copy)
    monkeypatch.setattr(series, "SERIES_DIR", copy)
    gone = "0008-baselines-per-task-samples"
    for version in series.VERSIONS:
        (copy / version / f"{gone}.patch").unlink()
        assert gone not in series.names(version) and [f.stem for f in series.patch_files(version)] == series.names(version)
    assert gone not in series._known()
    (copy / "main" / "0010-something-new.patch").write_text("From x\n")
    with pytest.raises(ExportError, match=r"\['0010-something-new'\] have no entry in series\.FEATURES"):
        series.patch_files("main")


def test_a_stock_checkout_gets_the_released_version(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    assert series.missing_features(root) == list(series.CORE)  # 0.7.3's openai model sends top_p & co. already (0009)
    plan = series.plan(root)
    assert plan.version == "0.7.3" and sorted(plan.files) == [f"lmms_tasks_patches/{name}.patch" for name in series.names("0.7.3")]
    assert not (root / "test").exists()  # checking applicability never touches the checkout


def test_a_patched_checkout_needs_nothing_and_a_half_patched_one_is_refused(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    for patch in series.patch_files("0.7.3"):
        subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=root, check=True, capture_output=True)
    assert series.missing_features(root) == [] and series.plan(root).files == {}
    (root / "lmms_eval/api/run_status.py").unlink()  # as if 0003 were reverted
    with pytest.raises(ExportError, match=r"has some of the features our tasks need but not \['0003-cli-exit-status'\]"):
        series.plan(root)


def test_a_missing_feature_only_one_version_carries_is_looked_for_there(tmp_path: Path) -> None:
    """A checkout with the core series but an openai model that drops top_p (as lmms-eval main before 0009)
    needs 0009 alone, which only `main` carries: 0.7.3 is skipped, main's patch is tried (here it cannot
    apply: its context is main's file), and both reasons are named."""
    root = checkout(tmp_path)
    for patch in series.patch_files("0.7.3"):
        subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=root, check=True, capture_output=True)
    openai_py = root / "lmms_eval/models/chat/openai.py"
    openai_py.write_text(openai_py.read_text().replace('("top_p", "seed", "presence_penalty", "frequency_penalty", "n")', '("seed",)'))
    assert series.missing_features(root) == ["0009-openai-sampling-parameters"]
    with pytest.raises(ExportError, match=r"0\.7\.3: does not carry \['0009-openai-sampling-parameters'\]; main: 0009-openai-sampling-parameters\.patch: "):
        series.plan(root)


def test_a_checkout_neither_version_fits_is_named(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    task_py = root / "lmms_eval/api/task.py"
    task_py.write_text(task_py.read_text().replace("def process_results(self, doc, results, full_docs=None):", "def process_results(self, doc, res, full_docs=None):"))
    with pytest.raises(ExportError, match=r"neither version of the lmms-eval patch series applies \(0\.7\.3: 0001-task-strip-responses\.patch: .*; main: "):
        series.plan(root)


def _git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def test_each_patch_names_the_blobs_it_changes_as_git_am_leaves_them(tmp_path: Path) -> None:
    """Every `index OLD..NEW` line of the 0.7.3 series names the file's blob before and after that patch (`git am -3`
    falls back on OLD; a hand-edited patch with a stale hash still applies cleanly, so only this check sees it).
    The `main` series was checked the same way on lmms-eval main at 75571cfe (docs/UPSTREAM.md)."""
    root = checkout(tmp_path)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    stale = []
    for patch in series.patch_files("0.7.3"):
        _git(root, "am", "-q", str(patch))
        text = patch.read_text(encoding="utf-8")
        found = re.findall(r"^diff --git a/\S+ b/(\S+)\n(?:(?!diff --git).*\n){0,3}?index ([0-9a-f]+)\.\.([0-9a-f]+)", text, flags=re.M)
        assert len(found) == text.count("\ndiff --git ") > 0, patch.name  # every file of the patch is checked
        for path, old, new in found:
            before = "0" * len(old) if set(old) == {"0"} else _git(root, "rev-parse", f"--short={len(old)}", f"HEAD~1:{path}")
            after = _git(root, "rev-parse", f"--short={len(new)}", f"HEAD:{path}")
            if (old, new) != (before, after):
                stale.append(f"{patch.name} {path}: index {old}..{new}, git has {before}..{after}")
    assert stale == []
    assert len(series.patch_files("0.7.3")) == len(_git(root, "log", "--format=%s").splitlines()) - 1


def _unformatted(root: Path, files: list[str]) -> list[str]:
    """The files lmms-eval's own formatters (.pre-commit-config.yaml: black --line-length=240, isort --profile black) would change."""
    import sys

    bad = []
    for command in (["black", "--check", "-q", "--line-length=240"], ["isort", "--check-only", "-q", "--profile", "black"]):
        for name in files:
            if subprocess.run([sys.executable, "-m", *command, name], cwd=root, capture_output=True, check=False).returncode:
                bad.append(f"{command[0]}: {name}")
    return bad


def _series_python(version: str) -> tuple[list[str], list[str]]:
    """The Python files the series changes, and those it creates."""
    changed, created = [], []
    for patch in series.patch_files(version):
        text = patch.read_text(encoding="utf-8")
        for path, header in re.findall(r"^diff --git a/(\S+) b/\S+\n((?:(?!diff --git).*\n){1,3})", text, flags=re.M):
            if path.endswith(".py"):
                (created if "new file mode" in header else changed).append(path)
    return sorted(set(changed) - set(created)), sorted(set(created))


@pytest.mark.parametrize("version", series.VERSIONS)
def test_the_series_code_passes_lmms_evals_formatters(version: str, tmp_path: Path) -> None:
    """What the series writes is formatted as lmms-eval's pre-commit hooks want it. The files it creates are
    checked for both versions; on 0.7.3 (the installed copy) every file it changes is too, where the file was
    clean before (0.7.3's evaluator.py and __main__.py were released unformatted)."""
    changed, created = _series_python(version)
    assert created and changed
    if version == "0.7.3":
        root = checkout(tmp_path)
        clean_before = [name for name in changed if not _unformatted(root, [name])]
        assert "lmms_eval/api/task.py" in clean_before
        for patch in series.patch_files(version):
            subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=root, check=True, capture_output=True)
        assert _unformatted(root, clean_before + created) == []
    else:
        root = tmp_path / "new_files"
        (root / "lmms_eval").mkdir(parents=True)  # so isort sees lmms_eval as the project's own package, as in a checkout
        (root / "lmms_eval" / "__init__.py").touch()
        for patch in series.patch_files(version):
            include = [f"--include={name}" for name in created]
            subprocess.run(["git", "apply", "--whitespace=nowarn", *include, str(patch)], cwd=root, check=True, capture_output=True)
        assert all((root / name).is_file() for name in created)
        assert _unformatted(root, created) == []
