"""Whole export of the self-made tree into a fake checkout: the file set follows the imports (and only
them), the exported code runs with our package unavailable, the exported tests pass there, a second
export changes nothing, and files the exporter did not write are never overwritten."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_tasks.utils.commands.upstream.cli import checkout_root, export
from lmms_tasks.utils.commands.upstream.sources import ExportError, SourceTree
from lmms_tasks.utils.commands.upstream.style import detect_style, format_sources

EXPECTED_FILES = {
    "lmms_eval/tasks/mybench/__init__.py",
    "lmms_eval/tasks/mybench/README.md",
    "lmms_eval/tasks/mybench/_source.jsonl",
    "lmms_eval/tasks/mybench/_default_template_yaml",
    "lmms_eval/tasks/mybench/mybench.yaml",
    "lmms_eval/tasks/mybench/mybench_a.yaml",
    "lmms_eval/tasks/mybench/mybench_b.yaml",
    "lmms_eval/tasks/mybench/utils.py",
    "lmms_eval/tasks/mybench/lib/__init__.py",
    "lmms_eval/tasks/mybench/lib/hooks.py",
    "lmms_eval/tasks/mybench/lib/parse.py",
    "lmms_eval/tasks/_task_utils/task_runtime/__init__.py",
    "lmms_eval/tasks/_task_utils/task_runtime/text.py",
    "lmms_eval/tasks/_task_utils/task_runtime/shared.py",
    "lmms_eval/tasks/_task_utils/task_runtime/child.py",
    "lmms_eval/tasks/_task_utils/task_runtime/prompts.py",
    "lmms_eval/tasks/_task_utils/task_runtime/resources/__init__.py",
    "lmms_eval/tasks/_task_utils/task_runtime/resources/table.json",
    "test/eval/mybench/__init__.py",
    "test/eval/mybench/conftest.py",
    "test/eval/mybench/test_hooks.py",
}


def _snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _poisoned_env(root: Path, tmp_path: Path, package: str) -> dict[str, str]:
    """PYTHONPATH with the checkout first and a `package` that refuses to import: exported code must not need it."""
    poison = tmp_path / "poison" / package
    poison.mkdir(parents=True, exist_ok=True)
    (poison / "__init__.py").write_text(f"raise ImportError('exported code imported {package}')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "poison"), str(root)])}


def test_export_writes_exactly_what_the_imports_reach(mini_tree: SourceTree, fake_checkout: Path) -> None:
    result, outcome = export(fake_checkout, mini_tree, format_code=False, patches=False)
    assert set(result.plan.files) == EXPECTED_FILES
    assert set(outcome.written) == EXPECTED_FILES
    assert not (fake_checkout / "lmms_eval/tasks/_task_utils/task_runtime/unused.py").exists()
    manifest = json.loads((fake_checkout / "lmms_eval/tasks/.lmms_tasks_export.json").read_text())
    assert set(manifest["files"]) == EXPECTED_FILES
    assert manifest["files"]["lmms_eval/tasks/mybench/utils.py"] == hashlib.sha256((fake_checkout / "lmms_eval/tasks/mybench/utils.py").read_bytes()).hexdigest()
    init = (fake_checkout / "lmms_eval/tasks/_task_utils/task_runtime/__init__.py").read_text()
    assert '"""The mini library.' in init and '__version__ = "9.9.1"' in init and "BENCHMARKS = _benchmarks()" in init
    found: dict = {"__file__": str(fake_checkout / "lmms_eval/tasks/_task_utils/task_runtime/__init__.py")}
    exec(compile(init, found["__file__"], "exec"), found)  # BENCHMARKS is found, not listed: the task folders with a lib/
    assert found["BENCHMARKS"] == ("mybench",) and (fake_checkout / "lmms_eval/tasks/mme").is_dir()
    catalog = (fake_checkout / "docs/advanced/current_tasks.md").read_text()
    assert catalog.endswith("\n\n## Additional Tasks\n- [MyBench](https://arxiv.org/abs/1234.56789) (mybench)\n")


@pytest.mark.parametrize("umask", [0o022, 0o077], ids=["umask022", "umask077"])
def test_exported_files_get_the_mode_of_any_new_file_and_keep_theirs(mini_tree: SourceTree, fake_checkout: Path, umask: int) -> None:
    """Not the temporary file's 0o600: under umask 022 another user (an unprivileged test runner, a web
    server) can read the checkout; a file's own mode survives a re-export."""
    previous = os.umask(umask)
    try:
        export(fake_checkout, mini_tree, format_code=False, patches=False)
        utils_py = fake_checkout / "lmms_eval/tasks/mybench/utils.py"
        modes = {stat.S_IMODE((fake_checkout / rel).stat().st_mode) for rel in EXPECTED_FILES if (fake_checkout / rel).is_file()}
        assert modes == {0o666 & ~umask}
        utils_py.chmod(0o640)
        utils_py.write_text(utils_py.read_text() + "# edited\n")
        export(fake_checkout, mini_tree, format_code=False, patches=False, force=True)
        assert stat.S_IMODE(utils_py.stat().st_mode) == 0o640 and "# edited" not in utils_py.read_text()
    finally:
        os.umask(previous)


def test_exported_code_and_tests_run_without_our_package(mini_tree: SourceTree, fake_checkout: Path, tmp_path: Path) -> None:
    export(fake_checkout, mini_tree, format_code=False, patches=False)
    env = _poisoned_env(fake_checkout, tmp_path, "minipkg")
    code = (
        "from lmms_eval.tasks.mybench.lib.hooks import describe, process_results\n"
        "from lmms_eval.tasks._task_utils.task_runtime import tasks_path\n"
        "import lmms_eval.tasks, os\n"
        "assert tasks_path() == os.path.dirname(lmms_eval.tasks.__file__), tasks_path()\n"
        "print(describe())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "mybench: hello from tasks hello v"
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-markers", "test/eval/mybench"], env=env, cwd=fake_checkout, capture_output=True, text=True, check=False)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert "2 passed" in tests.stdout


def test_second_export_changes_no_byte(mini_tree: SourceTree, fake_checkout: Path) -> None:
    export(fake_checkout, mini_tree, format_code=False, patches=False)
    before = _snapshot(fake_checkout)
    _, outcome = export(fake_checkout, mini_tree, format_code=False, patches=False)
    assert not outcome.changed and outcome.written == [] and len(outcome.unchanged) == len(EXPECTED_FILES)
    assert _snapshot(fake_checkout) == before


def test_unrelated_or_edited_files_are_never_overwritten(mini_tree: SourceTree, fake_checkout: Path) -> None:
    theirs = fake_checkout / "lmms_eval/tasks/mybench/utils.py"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("# somebody else's task\n")
    with pytest.raises(ExportError, match=r"refusing to overwrite 1 file\(s\).*\n  lmms_eval/tasks/mybench/utils.py \(not written by lmms-tasks\)"):
        export(fake_checkout, mini_tree, format_code=False, patches=False)
    assert theirs.read_text() == "# somebody else's task\n"
    assert not (fake_checkout / "lmms_eval/tasks/mybench/lib").exists(), "nothing may be written when refusing"
    export(fake_checkout, mini_tree, format_code=False, force=True, patches=False)
    assert "from lmms_eval.tasks.mybench.lib.hooks import" in theirs.read_text()
    # an exported file edited by hand afterwards is protected too
    edited = fake_checkout / "lmms_eval/tasks/mybench/lib/parse.py"
    edited.write_text(edited.read_text() + "# local edit\n")
    with pytest.raises(ExportError, match=r"lib/parse.py \(modified since the last export\)"):
        export(fake_checkout, mini_tree, format_code=False, patches=False)
    assert edited.read_text().endswith("# local edit\n")


def test_files_no_longer_exported_are_removed(mini_tree: SourceTree, fake_checkout: Path) -> None:
    export(fake_checkout, mini_tree, format_code=False, patches=False)
    (mini_tree.library_dir / "mybench/hooks.py").write_text((mini_tree.library_dir / "mybench/hooks.py").read_text().replace("from ..text import GREETING\n", "GREETING = 'hi'\n"))
    (mini_tree.library_dir / "shared.py").write_text("def greeting() -> str:\n    return 'x'\n")
    _, outcome = export(fake_checkout, mini_tree, format_code=False, patches=False)
    assert set(outcome.removed) == {"lmms_eval/tasks/_task_utils/task_runtime/text.py", "lmms_eval/tasks/_task_utils/task_runtime/child.py"}
    assert not (fake_checkout / "lmms_eval/tasks/_task_utils/task_runtime/text.py").exists()


def test_catalog_entries_go_into_the_existing_section_once(mini_tree: SourceTree, fake_checkout: Path) -> None:
    catalog = fake_checkout / "docs/advanced/current_tasks.md"
    catalog.parent.mkdir(parents=True)
    original = "# Current Tasks\n\n## Additional Tasks\n- [Zeta](https://x) (zeta)\n\n---\n\n## 10. Models\n- m\n"
    catalog.write_text(original)
    export(fake_checkout, mini_tree, format_code=False, patches=False)
    export(fake_checkout, mini_tree, format_code=False, patches=False)
    text = catalog.read_text()
    assert text == original.replace("(zeta)\n", "(zeta)\n- [MyBench](https://arxiv.org/abs/1234.56789) (mybench)\n")


def test_checkout_root_accepts_repo_root_and_installed_package(fake_checkout: Path, tmp_path: Path) -> None:
    assert checkout_root(fake_checkout) == fake_checkout.resolve()
    assert checkout_root(fake_checkout / "lmms_eval") == fake_checkout.resolve()
    with pytest.raises(ExportError, match="not an lmms-eval checkout"):
        checkout_root(tmp_path)


def test_style_comes_from_the_checkout(fake_checkout: Path) -> None:
    assert detect_style(fake_checkout).fix == [["black", "--line-length=240"], ["isort", "--profile", "black"]]
    (fake_checkout / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")
    assert detect_style(fake_checkout).fix == [["ruff", "check", "--fix"], ["ruff", "format"]]
    (fake_checkout / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: https://github.com/psf/black\n    rev: 25.1.0\n    hooks:\n      - id: black\n        args: [\"--line-length=100\"]\n"
        "  - repo: https://github.com/PyCQA/isort\n    rev: 6.0.1\n    hooks:\n      - id: isort\n        args: [\"--profile\", \"black\"]\n"
    )
    style = detect_style(fake_checkout)
    assert style.fix == [["black", "--line-length=100"], ["isort", "--profile", "black"]]
    assert style.check == [["black", "--check", "--line-length=100"], ["isort", "--check-only", "--profile", "black"]]


def test_formatted_export_passes_the_checkouts_tools(mini_tree: SourceTree, fake_checkout: Path) -> None:
    (mini_tree.library_dir / "text.py").write_text("GREETING   =   'hello'\nimport os\nX = os.sep\n")
    result, _ = export(fake_checkout, mini_tree, patches=False)
    text = (fake_checkout / "lmms_eval/tasks/_task_utils/task_runtime/text.py").read_text()
    assert text == 'GREETING = "hello"\nimport os\n\nX = os.sep\n'
    files = [rel for rel in result.plan.files if rel.endswith(".py")]
    for command in (["black", "--check", "--line-length=240"], ["isort", "--check-only", "--profile", "black"]):
        out = subprocess.run([sys.executable, "-m", *command, *files], cwd=fake_checkout, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stdout + out.stderr
    hooks = (fake_checkout / "lmms_eval/tasks/mybench/lib/hooks.py").read_text()
    # isort sees lmms_eval as first-party (as pre-commit in the checkout does): one block after stdlib
    assert "from lmms_eval.tasks._task_utils.task_runtime import prompts, shared\nfrom lmms_eval.tasks._task_utils.task_runtime.text import GREETING\nfrom lmms_eval.tasks.mybench.lib import NAME" in hooks


def test_cli_reports_conflicts_with_exit_code_2_and_dry_run_writes_nothing(
    mini_tree: SourceTree, fake_checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmms_tasks.utils.commands.upstream import cli, listing

    monkeypatch.setattr(cli, "default_tree", lambda benchmarks=None: mini_tree)
    before = _snapshot(fake_checkout)
    assert cli.main([str(fake_checkout), "--dry-run", "--list", "--no-patches", "--tree"]) == 0
    out = capsys.readouterr().out
    assert f"would write {len(EXPECTED_FILES)} file(s)" in out
    # --tree --list prints the exported files by folder: every planned file once
    block = f"{listing.START}\n" + out.split("new, 1 modified):\n", 1)[1] + f"\n{listing.END}"
    block = block.split("\nthird-party imports")[0] + f"\n{listing.END}"
    files, modified = listing.parse(block)
    assert files == EXPECTED_FILES and modified == {"docs/advanced/current_tasks.md": 1}
    assert _snapshot(fake_checkout) == before
    (fake_checkout / "test/eval/mybench").mkdir(parents=True)
    (fake_checkout / "test/eval/mybench/conftest.py").write_text("# theirs\n")
    assert cli.main([str(fake_checkout / "lmms_eval"), "--no-patches", "--tree"]) == 2
    err = capsys.readouterr().err
    assert "export-upstream: error: refusing to overwrite 1 file(s)" in err and "test/eval/mybench/conftest.py (not written by lmms-tasks)" in err
    assert cli.main([str(fake_checkout.parent / "nowhere")]) == 2
    assert "not an lmms-eval checkout" in capsys.readouterr().err


def test_entry_point_resolves() -> None:
    from lmms_tasks.utils.commands.upstream import main

    assert callable(main)
    out = subprocess.run([sys.executable, "-m", "lmms_tasks", "export-upstream", "--help"], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and "--force" in out.stdout and "--dry-run" in out.stdout


def test_imports_the_checkout_does_not_declare_are_reported(fake_checkout: Path) -> None:
    from lmms_tasks.utils.commands.upstream.exporter import undeclared_imports

    (fake_checkout / "pyproject.toml").write_text('[project]\ndependencies = ["pillow", "PyYAML>=6"]\n[project.optional-dependencies]\nx = ["openai ; python_version>\'3\'"]\n')
    assert undeclared_imports({"PIL", "yaml", "openai", "numpy"}, fake_checkout) == ["numpy (numpy)"]


def test_ruff_configured_checkout_gets_ruff_formatting(mini_tree: SourceTree, fake_checkout: Path) -> None:
    (fake_checkout / "pyproject.toml").write_text('[tool.ruff]\nline-length = 240\n[tool.ruff.format]\nquote-style = "single"\n')
    result, _ = export(fake_checkout, mini_tree, patches=False)
    assert (fake_checkout / "lmms_eval/tasks/_task_utils/task_runtime/text.py").read_text() == "GREETING = 'hello'\n"
    files = [rel for rel in result.plan.files if rel.endswith(".py")]
    for command in (["ruff", "format", "--check", "--no-cache"], ["ruff", "check", "--no-cache"]):
        out = subprocess.run([sys.executable, "-m", *command, *files], cwd=fake_checkout, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stdout + out.stderr


def test_a_readme_with_upstream_markers_goes_upstream_as_its_marked_parts_only() -> None:
    from lmms_tasks.utils.commands.upstream.exporter import upstream_markdown

    text = "# T\n<!-- upstream:keep -->\nkept\n<!-- upstream:end -->\nhome only\n<!-- upstream:only\nfor lmms-eval\n-->\nhome again\n"
    assert upstream_markdown(text, "R.md") == "kept\n\nfor lmms-eval\n"
    assert upstream_markdown("# T\nall of it\n", "R.md") == "# T\nall of it\n"  # no markers: all of it
    broken = {
        "<!-- upstream:keep -->\na\n": "R.md:1: the upstream block opened here is never closed",
        "<!-- upstream:keep -->\n<!-- upstream:only\n-->\n<!-- upstream:end -->\n": "R.md:2: upstream marker",
        "a\n<!-- upstream:end -->\n": "R.md:2: upstream marker '<!-- upstream:end -->' where it cannot be (no block is open)",
        "<!-- upstream:only\na --> b\n-->\n": "R.md:2: upstream marker",
    }
    for text, message in broken.items():
        with pytest.raises(ExportError, match=re.escape(message)):
            upstream_markdown(text, "R.md")


def test_imports_of_untouched_lmms_eval_modules_sort_as_in_the_checkout(tmp_path: Path) -> None:
    """The stage holds only the exported files, so lmms_eval/ has no __init__.py there; isort must still see
    `lmms_eval.models` (not exported) as first-party, as it does in the checkout, and keep one import block."""
    source = "from lmms_eval.models.model_utils.usage_metrics import log_usage\n\nfrom lmms_eval.llm_judge.base import ServerInterface\n\nprint(log_usage, ServerInterface)\n"
    out = format_sources({"lmms_eval/llm_judge/judge.py": source}, detect_style(tmp_path))
    assert out["lmms_eval/llm_judge/judge.py"].startswith(
        "from lmms_eval.llm_judge.base import ServerInterface\nfrom lmms_eval.models.model_utils.usage_metrics import log_usage\n\n"
    )
