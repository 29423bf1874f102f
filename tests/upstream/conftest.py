"""A small self-made package in our layout (task folder, library, templates, tests) and a fake lmms-eval
checkout, so the exporter is tested on known input independently of the real benchmarks."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from lmms_tasks.utils.commands.upstream.sources import SourceTree

MINI_FILES: dict[str, str] = {
    "pkg/minipkg/__init__.py": '''
        """Mini package."""
        import os

        __version__ = "9.9.1"
        BENCHMARKS = ("mybench",)


        def tasks_path() -> str:
            return os.path.dirname(__file__)
        ''',
    "pkg/minipkg/mybench/__init__.py": "",
    "pkg/minipkg/mybench/README.md": "# MyBench\n\nPaper: https://arxiv.org/abs/1234.56789\n",
    "pkg/minipkg/mybench/_source.jsonl": '{"source": "mybench"}\n',
    "pkg/minipkg/mybench/_default_template_yaml": """
        # Shared by the MyBench tasks.
        include: ../yaml_templates/base
        process_results: !function utils.process_results
        generation_kwargs:
          max_new_tokens: 16
        metadata:
          version: 0.1
        """,
    "pkg/minipkg/mybench/mybench_a.yaml": """
        task: mybench_a
        include: _default_template_yaml
        process_docs: !function minipkg.utils.mybench.hooks.process_docs
        metric_list:
          - {metric: acc, aggregation: !function utils.agg, higher_is_better: true}
        """,
    "pkg/minipkg/mybench/mybench_b.yaml": """
        task: mybench_b
        include: _default_template_yaml
        test_split: test
        """,
    "pkg/minipkg/mybench/mybench.yaml": """
        group: mybench
        task: [mybench_a, mybench_b]
        """,
    "pkg/minipkg/mybench/utils.py": '''
        """Thin hooks."""
        from minipkg.utils.mybench.hooks import agg, process_results  # noqa: F401
        ''',
    "pkg/lib/__init__.py": '"""The mini library."""\n',
    "pkg/lib/text.py": 'GREETING = "hello"\n',
    "pkg/lib/unused.py": "NOT_EXPORTED = True\n",
    "pkg/lib/shared.py": '''
        from pathlib import Path

        import minipkg.utils.text
        from minipkg import tasks_path

        CHILD = Path(__file__).with_name("child.py")


        def greeting() -> str:
            return minipkg.utils.text.GREETING + " from " + Path(tasks_path()).name
        ''',
    "pkg/lib/child.py": "print('child')\n",
    "pkg/lib/prompts.py": '''
        import json
        from importlib import resources


        def table() -> dict:
            return json.loads(resources.files("minipkg.utils.resources").joinpath("table.json").read_text())
        ''',
    "pkg/lib/resources/__init__.py": "",
    "pkg/lib/resources/table.json": '{"k": "v"}\n',
    "pkg/lib/mybench/__init__.py": "NAME = 'mybench'\n",
    "pkg/lib/mybench/parse.py": "def parse(x: str) -> str:\n    return x.strip()\n",
    "pkg/lib/mybench/hooks.py": '''
        """Hooks."""
        from minipkg.utils import prompts, shared
        from minipkg.utils.mybench import parse as parse_module

        from . import NAME
        from ..text import GREETING


        def process_docs(dataset):
            return dataset


        def process_results(doc, results):
            return {"acc": float(parse_module.parse(results[0]) == doc["answer"])}


        def agg(items):
            return sum(items) / len(items)


        def describe() -> str:
            return f"{NAME}: {shared.greeting()} {GREETING} {prompts.table()['k']}"
        ''',
    "pkg/lib/testing/__init__.py": "",
    "pkg/lib/testing/helpers.py": "def double(x: int) -> int:\n    return 2 * x\n",
    "pkg/templates/base": """
        # Data keys every task shares.
        dataset_path: json
        dataset_kwargs:
          data_files:
            test: _source.jsonl
        test_split: test
        output_type: generate_until
        """,
    "pkg/tests/conftest.py": '''
        import pytest


        @pytest.fixture
        def doubled() -> int:
            from minipkg.utils.testing.helpers import double

            return double(21)
        ''',
    "pkg/tests/mybench/test_with_fixture.py": '''
        def test_doubled(doubled: int) -> None:  # a shared fixture of tests/conftest.py: test support, not exported
            assert doubled == 42
        ''',
    "pkg/tests/mybench/test_hooks.py": '''
        import pytest

        from minipkg.utils.mybench.hooks import describe, process_results


        @pytest.mark.e2e
        def test_describe() -> None:
            assert describe() == "mybench: hello from tasks hello v"


        def test_process_results() -> None:
            assert process_results({"answer": "a"}, [" a "]) == {"acc": 1.0}


        @pytest.mark.include_path_only
        def test_tasks_live_in_our_package() -> None:
            from minipkg import tasks_path

            assert tasks_path().endswith("minipkg")
        ''',
}


def write_mini(root: Path) -> SourceTree:
    for rel, text in MINI_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return SourceTree(
        package="minipkg",
        package_dir=root / "pkg/minipkg",
        library_dir=root / "pkg/lib",
        templates_dir=root / "pkg/templates",
        tests_dir=root / "pkg/tests",
        benchmarks=("mybench",),
        pytest_markers=("e2e: runs the real CLI",),
    )


@pytest.fixture
def mini_tree(tmp_path: Path) -> SourceTree:
    """Our layout in miniature; `../yaml_templates/base` is reached through a symlink, as in the repo."""
    tree = write_mini(tmp_path / "src")
    (tree.package_dir / "yaml_templates").symlink_to(tree.templates_dir, target_is_directory=True)
    return tree


@pytest.fixture
def fake_checkout(tmp_path: Path) -> Path:
    """The bare minimum of an lmms-eval checkout: importable `lmms_eval.tasks` and one built-in task."""
    root = tmp_path / "checkout"
    (root / "lmms_eval/tasks/_task_utils").mkdir(parents=True)
    (root / "lmms_eval/__init__.py").write_text("")
    (root / "lmms_eval/tasks/__init__.py").write_text("")
    (root / "lmms_eval/tasks/mme").mkdir()
    (root / "lmms_eval/tasks/mme/mme.yaml").write_text("task: mme\n")
    return root


class StackExport:
    """The real benchmarks' stack, built once per session against lmms-eval 0.7.3 as installed (from a still copy
    of our sources), and what applying it needs."""

    def __init__(self, tree: SourceTree, stack: object, files: dict[str, bytes]) -> None:
        self.tree, self.stack, self.files = tree, stack, files

    @property
    def patches(self) -> list[str]:
        """The stack's patch files, in order (as `ls lmms_tasks_stack/*.patch` gives them)."""
        return sorted(rel for rel in self.files if rel.endswith(".patch"))

    def checkout(self, dest: Path) -> Path:
        """A git repository holding a copy of the installed lmms_eval package and the stack's files (untracked)."""
        import shutil
        import subprocess

        import lmms_eval

        shutil.copytree(Path(lmms_eval.__file__).parent, dest / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__"))
        for command in (["init", "-q"], ["add", "-A", "lmms_eval"], ["commit", "-q", "-m", "lmms-eval as installed"]):
            subprocess.run([*_GIT, *command], cwd=dest, check=True, capture_output=True)
        for rel, data in self.files.items():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(data)
        return dest


_GIT = ["git", "-c", "user.name=contributor", "-c", "user.email=contributor@example.invalid", "-c", "commit.gpgsign=false"]


def frozen_tree(tree: SourceTree, dest: Path) -> SourceTree:
    """A still copy of our sources: the real tree may be edited while the tests run."""
    import dataclasses
    import shutil

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(tree.library_dir, dest / "utils", ignore=ignore)
    shutil.copytree(tree.templates_dir, dest / "yaml_templates", ignore=ignore)
    shutil.copytree(tree.package_dir, dest / "lmms_tasks", ignore=ignore, symlinks=True)
    if tree.tests_dir is not None:
        shutil.copytree(tree.tests_dir, dest / "tests", ignore=ignore)
    return dataclasses.replace(
        tree, package_dir=dest / "lmms_tasks", library_dir=dest / "utils", templates_dir=dest / "yaml_templates", tests_dir=dest / "tests" if tree.tests_dir else None
    )


def _build_stack_export(base: Path) -> StackExport:
    import shutil

    import lmms_eval

    from lmms_tasks.utils.commands.upstream.cli import export_stack
    from lmms_tasks.utils.commands.upstream.sources import default_tree
    from lmms_tasks.utils.testing.oplog import op

    root = base / "checkout"
    shutil.copytree(Path(lmms_eval.__file__).parent, root / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__", "tasks"))
    (root / "lmms_eval" / "tasks").mkdir()
    tree = frozen_tree(default_tree(), base / "src")
    with op("stack-export"):
        built, _ = export_stack(root, tree)
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "lmms_tasks_stack").rglob("*") if p.is_file()}
    return StackExport(tree, built, files)


@pytest.fixture(scope="session")
def stack_export(tmp_path_factory: pytest.TempPathFactory) -> StackExport:
    """`export-upstream` (the stack) of every benchmark for a checkout of lmms-eval 0.7.3 as installed, built once
    per test run (utils/testing/built_once.py)."""
    from lmms_tasks.utils.testing.built_once import built_once

    return built_once(tmp_path_factory, "stack_export", _build_stack_export)


@dataclass
class AppliedStack:
    """A git repository holding lmms-eval as installed (its first commit), then the stack applied with `git am`
    one PR at a time, as a contributor stacks the branches: `commits[i]` is the commit after PR i (stack order).
    Where `git am` refused a PR, `refused` names it with git's error, and `commits` stops before it."""

    repo: Path
    commits: list[str]
    refused: tuple[str, str] | None

    def checkout(self, dest: Path, index: int | None = None) -> Path:
        """A clone of the repository (its own working tree) at the commit after PR `index` (default: the last PR)."""
        import subprocess

        commit = self.commits[-1 if index is None else index]
        subprocess.run(["git", "clone", "-q", "--shared", str(self.repo), str(dest)], check=True, capture_output=True)
        subprocess.run(["git", "checkout", "-q", "--detach", commit], cwd=dest, check=True, capture_output=True)
        return dest


def _apply_stack(stack_export: StackExport, base: Path) -> AppliedStack:
    import subprocess

    repo = stack_export.checkout(base / "repo")
    commits: list[str] = []
    for patch, pr in zip(stack_export.patches, stack_export.stack.prs):
        applied = subprocess.run([*_GIT, "am", "-q", patch], cwd=repo, capture_output=True, text=True, check=False)
        if applied.returncode != 0:
            return AppliedStack(repo, commits, (pr.name, f"{patch}: {applied.stderr}"))
        commits.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip())
    return AppliedStack(repo, commits, None)


@pytest.fixture(scope="session")
def stack_applied(tmp_path_factory: pytest.TempPathFactory, stack_export: StackExport) -> AppliedStack:
    """The stack applied PR by PR with `git am` to lmms-eval as installed, once per test run: the PR-by-PR test
    checks out each PR's commit, tests/upstream/test_export_real.py the last one."""
    from lmms_tasks.utils.testing.built_once import built_once

    return built_once(tmp_path_factory, "stack_applied", lambda base: _apply_stack(stack_export, base))
