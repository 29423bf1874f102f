"""Where our code lives and where each module goes in an lmms-eval checkout.

The exporter never works from a file list: it starts from the benchmark folders and follows imports, so
it needs two things this module provides: `SourceTree.module_file` (dotted name -> the file that defines
it) and `ModuleMap.target` (dotted name -> its name under `lmms_eval.tasks`). Both take the roots as
parameters so tests can export a small self-made tree.

Placement rule (one module, one place):
- `<pkg>.<benchmark>` (the include-path task folder)      -> `lmms_eval.tasks.<benchmark>`
- `<pkg>.utils.<benchmark>.x` (a benchmark's library)     -> `lmms_eval.tasks.<benchmark>.<LIB_NAME>.x`
- `<pkg>.utils.x` (shared library), `<pkg>` itself       -> `lmms_eval.tasks._task_utils.<SHARED_NAME>.x`
- `<pkg>.utils.<JUDGING_PACKAGE>.x` (the judge)            -> `lmms_eval.llm_judge.x` (`JUDGING_TARGET`: built on
  lmms-eval's own judge package, so the module we run is the module we contribute; that package's `__init__` is
  lmms-eval's and is never written)

The shared library's place carries no name of ours (`SHARED_NAME`), and neither does the rest of the exported
text (`pyrewrite.rename_project`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

TASKS_PACKAGE = "lmms_eval.tasks"
LIB_NAME = "lib"
SHARED_NAME = "task_runtime"  # lmms_eval/tasks/_task_utils/<SHARED_NAME>/: the runtime the tasks share (no project name upstream)
MANIFEST_NAME = ".lmms_tasks_export.json"
JUDGING_PACKAGE = "services.llm_judge"  # below the shared library: its modules extend lmms-eval's judge package
JUDGING_TARGET = "lmms_eval.llm_judge"


class ExportError(RuntimeError):
    """The export cannot be done faithfully; the message names the file (and line) at fault."""


@dataclass(frozen=True)
class SourceTree:
    """Our repository as the exporter sees it (all roots are parameters, for tests on a self-made tree)."""

    package: str  # top-level import name, e.g. "lmms_tasks"
    package_dir: Path  # the include-path root holding one folder per benchmark (+ the package __init__)
    library_dir: Path  # the shared library, importable as `<package>.utils`
    templates_dir: Path  # YAML pieces the task folders include (`../yaml_templates/<x>`)
    tests_dir: Path | None  # `tests/`, with one folder per benchmark and a conftest.py of shared fixtures
    benchmarks: tuple[str, ...]
    pytest_markers: tuple[str, ...] = field(default=())  # "name: description" lines to register upstream

    @property
    def library_package(self) -> str:
        return f"{self.package}.utils"

    def benchmark_dir(self, benchmark: str) -> Path:
        return self.package_dir / benchmark

    def module_file(self, module: str) -> Path | None:
        """The .py file defining `module` (a package's __init__.py), or None when it is not ours / absent."""
        parts = module.split(".")
        if parts[0] != self.package:
            return None
        if len(parts) == 1:
            base = self.package_dir
            rest: list[str] = []
        elif parts[1] == "utils":
            base, rest = self.library_dir, parts[2:]
        else:
            base, rest = self.package_dir, parts[1:]
        path = base.joinpath(*rest) if rest else base
        if path.is_dir() and (path / "__init__.py").is_file():
            return path / "__init__.py"
        if path.with_suffix(".py").is_file() and rest:
            return path.with_suffix(".py")
        return None

    def is_package(self, module: str) -> bool:
        path = self.module_file(module)
        return path is not None and path.name == "__init__.py"

    def module_of_file(self, path: Path) -> str | None:
        """The dotted name of one of our .py files (inverse of `module_file`), None for files outside."""
        path = path.resolve()
        for base, prefix in ((self.library_dir.resolve(), self.library_package), (self.package_dir.resolve(), self.package)):
            try:
                rel = path.relative_to(base)
            except ValueError:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            return ".".join([prefix, *parts])
        return None


@dataclass(frozen=True)
class ModuleMap:
    """Dotted-name translation from our package to lmms-eval's tree (see the module docstring)."""

    tree: SourceTree

    @property
    def shared_package(self) -> str:
        return f"{TASKS_PACKAGE}._task_utils.{SHARED_NAME}"

    def is_upstream_package(self, module: str) -> bool:
        """A package of ours whose `__init__` is lmms-eval's own upstream (the judging package): never written."""
        return module == f"{self.tree.library_package}.{JUDGING_PACKAGE}"

    def is_ours(self, module: str) -> bool:
        return module == self.tree.package or module.startswith(self.tree.package + ".")

    def target(self, module: str) -> str:
        """The exported dotted name of one of our modules (or of an attribute path below one)."""
        tree = self.tree
        if not self.is_ours(module):
            return module
        parts = module.split(".")
        if module in (tree.package, tree.library_package):
            return self.shared_package
        if parts[1] == "utils":
            rest = parts[2:]
            judging = JUDGING_PACKAGE.split(".")
            if rest[: len(judging)] == judging:
                return ".".join([JUDGING_TARGET, *rest[len(judging) :]])
            if rest[0] in tree.benchmarks:
                return ".".join([TASKS_PACKAGE, rest[0], LIB_NAME, *rest[1:]])
            return ".".join([self.shared_package, *rest])
        if parts[1] in tree.benchmarks:
            return ".".join([TASKS_PACKAGE, *parts[1:]])
        raise ExportError(f"{module!r} names no benchmark folder nor library module of {tree.package} (exported benchmarks: {', '.join(tree.benchmarks)})")

    def target_path(self, module: str, is_package: bool) -> str:
        """Where the exported module's file goes, relative to the checkout root (posix separators)."""
        parts = self.target(module).split(".")
        return "/".join(parts) + ("/__init__.py" if is_package else ".py")


def default_tree(benchmarks: list[str] | None = None) -> SourceTree:
    """Our own repository, located through the installed (editable) package."""
    import lmms_tasks
    import lmms_tasks.utils

    package_dir = Path(lmms_tasks.__file__).resolve().parent
    library_dir = Path(next(iter(lmms_tasks.utils.__path__))).resolve()
    repo = library_dir.parent
    templates = (package_dir / "yaml_templates").resolve()
    tests_dir = repo / "tests"
    if benchmarks is None:
        benchmarks = [b for b in lmms_tasks.BENCHMARKS if any(p.suffix == ".yaml" for p in (package_dir / b).glob("*.yaml"))]
    return SourceTree(
        package="lmms_tasks",
        package_dir=package_dir,
        library_dir=library_dir,
        templates_dir=templates,
        tests_dir=tests_dir if tests_dir.is_dir() else None,
        benchmarks=tuple(benchmarks),
        pytest_markers=tuple(_pytest_markers(repo / "pyproject.toml")),
    )


def _pytest_markers(pyproject: Path) -> list[str]:
    """Our pytest marker declarations, re-registered by the exported conftest (upstream lacks `e2e`)."""
    if not pyproject.is_file():
        return []
    import tomllib

    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return list(config.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("markers", []))


def iter_files(root: Path) -> list[Path]:
    """Every regular file below `root` except bytecode caches, sorted (deterministic output)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".ipynb_checkpoints", ".pytest_cache"))
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                found.append(Path(dirpath) / name)
    return found
