"""The lmms-eval patch series our exported tasks need, and which version of it fits a checkout.

Our tasks are written for an lmms-eval with the features of this series (docs/UPSTREAM.md lists them); in
lmms-tasks the compat layer backports them into a stock 0.7.3, but an upstream pull request must carry the
fixes themselves. The series exists in two versions, `0.7.3` (against the released package) and `main`
(rebased onto lmms-eval's main branch); `git am`-ready files live in `patch_series/<version>/`.

`plan(root)` decides what a checkout needs: nothing when it already has every feature (probed in its
source: the patches add these names), else the version whose patches all apply (`git apply --check`), and
`export-upstream` writes those files to `lmms_tasks_patches/` at the checkout root, to be applied with
`git am` before the tasks are committed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lmms_tasks.utils.commands.upstream.sources import ExportError

SERIES_DIR = Path(__file__).with_name("patch_series")
VERSIONS = ("0.7.3", "main")
OUTPUT_DIR = "lmms_tasks_patches"

# What each patch adds, as the checkout's source shows it (file, regex): present means the feature is in.
FEATURES: dict[str, tuple[str, str]] = {
    "0001-task-strip-responses": ("lmms_eval/api/task.py", r"^\s+strip_responses\s*:"),
    "0002-group-exact-metrics": ("lmms_eval/api/group.py", r"^\s+group_metric\s*:"),
    "0003-cli-exit-status": ("lmms_eval/api/run_status.py", r"def report_incomplete"),
    "0004-task-custom-dataset": ("lmms_eval/api/task.py", r"^\s+custom_dataset\s*:"),
    "0004-task-load-retry-network-errors": ("lmms_eval/api/task.py", r"^def is_network_error"),
    "0006-task-batch-scoring": ("lmms_eval/api/task.py", r"^\s+process_results_batch\s*:"),
    "0007-evaluator-k-samples-stability": ("lmms_eval/evaluator.py", r"score each response on its own|each is scored on its own"),
    "0008-baselines-per-task-samples": ("lmms_eval/baselines/loader.py", r"^def resolve_local_baseline"),
    # 0.7.3 has this one (its chat `openai` model sends these keys); main lost it, so only `main` carries it
    "0009-openai-sampling-parameters": ("lmms_eval/models/chat/openai.py", r'\("top_p", "seed", "presence_penalty", "frequency_penalty", "n"\)'),
}
# How an exported task shows that it uses a feature (a pattern over its YAML and Python): the benchmark PRs
# of the stack need the core PRs whose pattern matches (`stack.benchmark_prs`). Features no task file shows
# (the retry policy, baselines) are needed by none.
USES: dict[str, str] = {
    "0001-task-strip-responses": r"^\s*strip_responses\s*:",
    "0002-group-exact-metrics": r"\bmatch\s*:\s*exact\b|\bgroup_metric\s*:",
    "0003-cli-exit-status": r"lmms_eval\.api\.run_status",
    "0004-task-custom-dataset": r"^\s*custom_dataset\s*:",
    "0006-task-batch-scoring": r"^\s*process_results_batch\s*:",
    "0007-evaluator-k-samples-stability": r"^\s*score_each_repeat\s*:",
    "0009-openai-sampling-parameters": r"^\s+(top_p|seed|presence_penalty|frequency_penalty)\s*:",
}
# Patches that only some versions carry (the others' lmms-eval has the feature already).
ONLY_IN: dict[str, tuple[str, ...]] = {"0009-openai-sampling-parameters": ("main",)}
# The features every version adds: a checkout with some of them but not all is half-patched.
CORE = tuple(name for name in FEATURES if name not in ONLY_IN and all((SERIES_DIR / v / f"{name}.patch").is_file() for v in VERSIONS))


def names(version: str) -> list[str]:
    """The patches of one version of the series, in order: those of `FEATURES` whose file is there (deleting a
    patch file takes it out of the series, and out of the stack)."""
    return [name for name in FEATURES if version in ONLY_IN.get(name, VERSIONS) and (SERIES_DIR / version / f"{name}.patch").is_file()]


def _known() -> list[str]:
    """The features some version of the series still carries."""
    return [name for name in FEATURES if any(name in names(version) for version in VERSIONS)]


@dataclass
class SeriesPlan:
    """What a checkout needs: the missing features, the version that applies, and its patch files."""

    missing: list[str]
    version: str | None = None
    files: dict[str, bytes] = field(default_factory=dict)  # checkout-relative path -> patch bytes


def patch_files(version: str) -> list[Path]:
    if version not in VERSIONS:
        raise ExportError(f"unknown patch series version {version!r} (have {list(VERSIONS)})")
    found = {f.stem: f for f in (SERIES_DIR / version).glob("*.patch")}
    unknown = sorted(set(found) - set(FEATURES))
    if unknown:
        raise ExportError(f"{SERIES_DIR / version}: {unknown} have no entry in series.FEATURES (how a checkout shows the feature is in)")
    return [found[name] for name in names(version)]


def missing_features(root: Path) -> list[str]:
    """The patches whose feature the checkout at `root` lacks."""
    missing = []
    for name in _known():
        rel, pattern = FEATURES[name]
        path = root / rel
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        if not re.search(pattern, text, flags=re.MULTILINE):
            missing.append(name)
    return missing


def applies(root: Path, patches: list[Path]) -> str | None:
    """None when every patch applies in order to a scratch copy of the checkout's `lmms_eval/` and `test/` (the checkout
    itself is never touched), else git's message."""
    git = shutil.which("git")
    if git is None:
        raise ExportError("git is needed to check which patch series fits the checkout")
    with tempfile.TemporaryDirectory(prefix="lmms_tasks_series_") as scratch:
        shutil.copytree(root / "lmms_eval", Path(scratch) / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__", "tasks"))
        if (root / "test").is_dir():  # a patch may extend one of lmms-eval's own tests
            shutil.copytree(root / "test", Path(scratch) / "test", ignore=shutil.ignore_patterns("__pycache__"))
        for patch in patches:
            out = subprocess.run([git, "apply", "--whitespace=nowarn", str(patch)], cwd=scratch, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                lines = [line for line in out.stderr.splitlines() if line.startswith("error")]
                return f"{patch.name}: {'; '.join(lines) or out.stderr.strip()}"
    return None


def plan(root: Path) -> SeriesPlan:
    """The patch files `export-upstream` writes for the checkout at `root` (none if it has every feature): the
    missing ones of the first version that carries them all and whose patches apply."""
    missing = missing_features(root)
    if not missing:
        return SeriesPlan(missing=[])
    core_missing = [name for name in missing if name in CORE]
    if core_missing and len(core_missing) != len(CORE):
        raise ExportError(
            f"{root}: lmms-eval has some of the features our tasks need but not {missing}; apply those patches from "
            f"{SERIES_DIR} by hand (git am), then export again"
        )
    problems = {}
    for version in VERSIONS:
        lacking = [name for name in missing if name not in names(version)]
        if lacking:
            problems[version] = f"does not carry {lacking}"
            continue
        files = [f for f in patch_files(version) if f.stem in missing]
        problem = applies(root, files)
        if problem is None:
            return SeriesPlan(missing=missing, version=version, files={f"{OUTPUT_DIR}/{f.name}": f.read_bytes() for f in files})
        problems[version] = problem
    raise ExportError(
        f"{root}: neither version of the lmms-eval patch series applies ({'; '.join(f'{v}: {p}' for v, p in problems.items())}); "
        "rebase the series in utils/commands/upstream/patch_series/ onto this checkout"
    )
