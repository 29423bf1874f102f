"""export-upstream's stack of pull requests: core changes first (one per patch of the series, 0004 split into the
opt-in loader and the all-task retry policy), then one per shared service (disk cache, judge client, code sandbox), then one per benchmark; each PR applies with `git am` on top of the
ones before it and its tests pass right after it; `--list` and docs/UPSTREAM.md show the same stack; the size goals."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.commands.upstream import exporter, series, stack
from lmms_tasks.utils.commands.upstream.cli import export, export_stack
from lmms_tasks.utils.commands.upstream.sources import ExportError, SourceTree
from lmms_tasks.utils.commands.upstream.style import detect_style
from lmms_tasks.utils.testing.oplog import op

GIT = ["git", "-c", "user.name=contributor", "-c", "user.email=contributor@example.invalid", "-c", "commit.gpgsign=false"]


def _poison(dest: Path) -> Path:
    (dest / "lmms_tasks").mkdir(parents=True, exist_ok=True)
    (dest / "lmms_tasks" / "__init__.py").write_text("raise ImportError('the exported code imported lmms_tasks')\n")
    return dest


def test_the_stack_is_the_core_patches_then_the_shared_services_then_one_pr_per_benchmark(stack_export: Any) -> None:
    prs = stack_export.stack.prs
    services = [s.name for s in exporter.SERVICES]
    assert [pr.name for pr in prs] == [*series.names("0.7.3"), *services, *stack_export.tree.benchmarks]
    assert [pr.kind for pr in prs] == ["core"] * len(series.names("0.7.3")) + ["service"] * len(services) + ["benchmark"] * len(stack_export.tree.benchmarks)
    assert stack_export.patches == [f"{stack.STACK_DIR}/{pr.stem(i)}.patch" for i, pr in enumerate(prs, start=1)]
    names = [pr.name for pr in prs]
    for i, pr in enumerate(prs):
        assert set(pr.needs) <= set(names[:i]), (pr.name, pr.needs)  # a PR needs only PRs below it
        text = stack_export.files[f"{stack.STACK_DIR}/{pr.stem(i + 1)}.md"].decode()
        sections = re.findall(r"^## (.+)$", text, re.MULTILINE)  # lmms-eval's pull request template, in its order
        assert sections == ["Summary", "In scope", "Out of scope", "Validation", "Risk / Compatibility", "Type of Change"], pr.name
        assert "| command | N | result |" in text and "lmms-tasks" not in text.split("## Summary", 1)[1], pr.name
    by_name = {pr.name: pr for pr in prs}
    # one concern per PR: the loader is opt-in and leaves the retry alone; the retry policy is its own PR and says it changes every task
    loader, retry = by_name["0004-task-custom-dataset"].patch.decode(), by_name["0004-task-load-retry-network-errors"].patch.decode()
    assert "custom_dataset" in loader and "is_network_error" not in loader and "retry_if_exception" not in loader
    assert "is_network_error" in retry and "custom_dataset: Optional" not in retry
    assert "every task" in stack.EXISTING_TASKS["0004-task-load-retry-network-errors"] and "Nothing" in stack.EXISTING_TASKS["0004-task-custom-dataset"]
    # the benchmarks need the core features their files use (decided by content): VLM2-Bench's groups use 0002, every benchmark 0004's loader
    assert {"0002-group-exact-metrics", "0004-task-custom-dataset", "0006-task-batch-scoring"} <= set(by_name["vlm2_bench"].needs)
    assert "0001-task-strip-responses" in by_name["humaneval_v"].needs and "0001-task-strip-responses" not in by_name["vlm2_bench"].needs
    assert "0004-task-load-retry-network-errors" not in by_name["vlm2_bench"].needs
    # each service PR holds its modules and its tests; the benchmark PRs that call it need it and leave its files alone
    cache, judge, data, sandbox = by_name["task_cache"], by_name["judge_client"], by_name["task_data"], by_name["code_sandbox"]
    assert "lmms_eval/tasks/_task_utils/task_runtime/services/cache.py" in cache.files and "test/eval/cache/test_cache.py" in cache.files
    assert judge.needs[-1:] == sandbox.needs == ["task_cache"]  # each service needs the cache, not the other service
    assert {"lmms_eval/llm_judge/judge.py", "lmms_eval/llm_judge/verdicts.py"} <= set(judge.files)  # built on lmms-eval's llm_judge, inside it
    assert [f for f in judge.files if f.endswith(".py") and not f.startswith(("lmms_eval/llm_judge/", "test/eval/judge/"))] == []
    assert "lmms_eval/llm_judge/__init__.py" not in judge.files and "lmms_eval/tasks/_task_utils/task_runtime/services/status.py" in cache.files
    assert "test/eval/judge/test_llm_judge_resilience.py" in judge.files  # cache, resume, retries, Retry-After, preflight
    assert {"lmms_eval/tasks/_task_utils/task_runtime/services/sandbox.py", "lmms_eval/tasks/_task_utils/task_runtime/services/sandbox_child.py"} <= set(sandbox.files)
    assert any(f.startswith("test/eval/judge/test_") for f in judge.files) and "test/eval/sandbox/test_sandbox_hostile.py" in sandbox.files
    assert "judge_client" in by_name["haerae_vision"].needs and "code_sandbox" in by_name["humaneval_v"].needs and "code_sandbox" not in by_name["haerae_vision"].needs
    assert {"lmms_eval/tasks/_task_utils/task_runtime/services/data.py", "lmms_eval/tasks/_task_utils/task_runtime/services/schema.py"} <= set(data.files)
    assert "test/eval/task_data/test_task_data.py" in data.files
    service_files = set(cache.files) | set(judge.files) | set(data.files) | set(sandbox.files)
    for benchmark in stack_export.tree.benchmarks:
        assert set(by_name[benchmark].files) & service_files == set(), benchmark  # the shared package's BENCHMARKS is found, not listed
        assert "task_data" in by_name[benchmark].needs
    assert exporter.shared_init_path(stack_export.tree) in cache.files and "BENCHMARKS = _benchmarks()" in cache.patch.decode()


def test_docs_upstream_shows_the_stack_of_list(stack_export: Any) -> None:
    """docs/UPSTREAM.md's stack is `export-upstream --list` for lmms-eval 0.7.3: the same PRs in the same order, with the
    same titles, needs and files (the line counts there are as of its writing: they move with every code change)."""
    doc = stack.parse_listing((Path(tasks_path()).parent / "docs" / "UPSTREAM.md").read_text(encoding="utf-8"))
    listed = stack.parse_listing(stack.listing(stack_export.stack))
    assert doc and listed
    drop = ("lines", "count", "cap")
    assert [{k: v for k, v in pr.items() if k not in drop} for pr in doc] == [{k: v for k, v in pr.items() if k not in drop} for pr in listed]


def _stack_names() -> list[str]:
    """The stack's PRs in order, as known before it is built (test_the_stack_is_... checks the built one is this)."""
    from lmms_tasks.utils.commands.upstream.sources import default_tree

    return [*series.names("0.7.3"), *(s.name for s in exporter.SERVICES), *default_tree().benchmarks]


STACK_NAMES = _stack_names()


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(STACK_NAMES)), ids=[f"{i:02d}-{name}" for i, name in enumerate(STACK_NAMES, start=1)])
def test_applied_pr_by_pr_each_prs_tests_pass(index: int, stack_export: Any, stack_applied: Any, tmp_path: Path) -> None:
    """A checkout of lmms-eval 0.7.3 (as installed) gets the stack one PR at a time with `git am` (`stack_applied`,
    once per run); checked out right after this PR, the tests it adds or touches run there (`lmms_tasks` unimportable;
    CLI subprocess tests marked slow left out), and must pass. One case per PR: the cases spread over the workers."""
    prs = stack_export.stack.prs
    assert [pr.name for pr in prs] == STACK_NAMES
    pr = prs[index]
    assert stack_applied.refused is None or STACK_NAMES.index(stack_applied.refused[0]) > index, f"git am refused {stack_applied.refused}"
    root = stack_applied.checkout(tmp_path / "checkout", index)
    log = subprocess.run(["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True, check=True).stdout.splitlines()
    assert log[::-1][1:] == [p.title for p in prs[: index + 1]]  # on top of the ones before it, in order
    env = dict({**os.environ, "PYTHONPATH": os.pathsep.join([str(_poison(tmp_path / "poison")), str(root)])})
    tests = sorted({f for f in pr.files if re.search(r"^test/.*/test_[^/]+\.py$", f)})
    if pr.kind == "benchmark":
        tests = [f"test/eval/{pr.name}"]
        assert all((root / f).exists() for f in pr.files)
    assert tests, f"{pr.name} brings no test"
    start = time.monotonic()
    with op("pytest-in-checkout", pr.name):
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-m", "not slow and not e2e", *tests],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    summary = (re.findall(r"\d+ passed[^\n]*", out.stdout) or ["?"])[-1]
    assert out.returncode == 0, f"{pr.name}: {out.stdout[-4000:]}{out.stderr[-2000:]}"
    print(f"{pr.name}: {time.monotonic() - start:.0f} s ({summary})")
    counts = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (passed|skipped|deselected)", summary))
    measured = {
        "command": f"python -m pytest -m 'not slow and not e2e' {' '.join(tests)}",
        "n": counts.get("passed", 0) + counts.get("skipped", 0),
        "result": ", ".join(f"{counts[k]} {k}" for k in ("passed", "skipped") if counts.get(k)),
    }
    # the PR descriptions' Validation rows are these measurements (utils/commands/upstream/validation.json, "0.7.3")
    recorded = stack.validation().get("0.7.3", {}).get(pr.name)
    assert recorded == measured, f"stale validation.json for {pr.name}; measured:\n" + json.dumps({pr.name: measured}, indent=1, sort_keys=True)


def test_one_benchmark_exported_alone_needs_only_the_services(stack_export: Any, tmp_path: Path) -> None:
    """`--benchmark haerae_vision`: the services it calls are PRs of their own, and HAERAE-Vision's PR is its folder alone,
    counted from the patch (a shared module that moved back into the benchmark PR would count) within the caps."""
    root = tmp_path / "checkout"
    (root / "lmms_eval" / "tasks").mkdir(parents=True)
    alone = stack.build(root, replace(stack_export.tree, benchmarks=("haerae_vision",)), detect_style(root), patches=False)
    assert [pr.name for pr in alone.prs] == ["task_cache", "judge_client", "task_data", "haerae_vision"]
    *services, haerae = alone.prs
    exported = {rel: data.count(b"\n") for rel, data in alone.export.plan.files.items() if rel.startswith("lmms_eval/") and rel.endswith(".py")}
    for service in services:
        assert service.capped_lines == sum(n for rel, n in exported.items() if rel in service.files)
    theirs = {rel for service in services for rel in service.files}
    assert haerae.capped_lines == sum(n for rel, n in exported.items() if rel not in theirs)  # the rest, all of it in its folder
    assert all(rel.startswith("lmms_eval/tasks/haerae_vision/") for rel in exported if rel not in theirs)
    assert haerae.over_cap() == [] and haerae.needs == ["judge_client", "task_cache", "task_data"]


def test_the_whole_stack_is_reported(stack_export: Any) -> None:
    sizes = stack.sizes(stack_export.stack)
    assert sizes["total"] == sum(pr.capped_lines for pr in stack_export.stack.prs) > 0


def test_a_stack_of_the_mini_tree_applies_and_gives_the_tree_export(mini_tree: SourceTree, fake_checkout: Path, tmp_path: Path) -> None:
    """On the self-made tree: the benchmark PR is one patch; `git am` in the checkout gives exactly the files (and the
    current_tasks.md line) the tree export writes; writing the stack touches nothing but lmms_tasks_stack/; a second
    export changes nothing."""
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*GIT, *command], cwd=fake_checkout, check=True, capture_output=True)
    built, outcome = export_stack(fake_checkout, mini_tree, format_code=False, patches=False)
    assert [pr.name for pr in built.prs] == ["mybench"] and built.prs[0].needs == []
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=fake_checkout, capture_output=True, text=True, check=True).stdout
    assert {line[3:].split("/")[0] for line in status.splitlines()} == {stack.STACK_DIR, "lmms_eval"}  # lmms_eval: only the manifest
    assert [line[3:] for line in status.splitlines() if line[3:].startswith("lmms_eval")] == ["lmms_eval/tasks/.lmms_tasks_export.json"]
    _, again = export_stack(fake_checkout, mini_tree, format_code=False, patches=False)
    assert not again.changed
    (fake_checkout / "lmms_eval/tasks/.lmms_tasks_export.json").unlink()
    patch = next((fake_checkout / stack.STACK_DIR).glob("*.patch"))
    subprocess.run([*GIT, "am", "-q", str(patch)], cwd=fake_checkout, check=True, capture_output=True)
    shutil_tree = tmp_path / "tree_export"
    (shutil_tree / "lmms_eval/tasks/_task_utils").mkdir(parents=True)
    result, _ = export(shutil_tree, mini_tree, format_code=False, patches=False)
    for rel, data in result.plan.files.items():
        assert (fake_checkout / rel).read_bytes() == data, rel
    assert (fake_checkout / "docs/advanced/current_tasks.md").read_text() == (shutil_tree / "docs/advanced/current_tasks.md").read_text()
    listed = stack.parse_listing(stack.listing(built))
    assert listed[0]["files"] == sorted([*result.plan.files, "docs/advanced/current_tasks.md"])
    assert listed[0]["lines"]["tests"] > 0 and listed[0]["lines"]["core"] == 0


def test_cli_list_prints_the_stack(mini_tree: SourceTree, fake_checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from lmms_tasks.utils.commands.upstream import cli

    monkeypatch.setattr(cli, "default_tree", lambda benchmarks=None: mini_tree)
    assert cli.main([str(fake_checkout), "--dry-run", "--list", "--no-patches"]) == 0
    out = capsys.readouterr().out
    prs = stack.parse_listing(out)
    assert [pr["stem"] for pr in prs] == ["01-mybench"] and "test/eval/mybench/test_hooks.py" in prs[0]["files"]
    assert "would write 3 file(s)" in out and not (fake_checkout / stack.STACK_DIR).exists()


def test_tests_marked_not_exported_stay_home_with_their_reason(mini_tree: SourceTree) -> None:
    """`@pytest.mark.not_exported(reason=...)` drops a test from its exported file; a module-level `pytestmark`
    keeps the whole file home, named with its reason; one without a reason stops the export."""
    folder = mini_tree.tests_dir / "mybench"
    (folder / "test_suite.py").write_text(
        "import pytest\n\n\ndef test_one_per_class() -> None:\n    assert 1\n\n\n"
        '@pytest.mark.not_exported(reason="a variant of test_one_per_class")\ndef test_a_variant() -> None:\n    assert 2\n'
    )
    (folder / "test_rerun.py").write_text('import pytest\n\npytestmark = pytest.mark.not_exported(reason="re-runs the suite as root")\n\n\ndef test_rerun() -> None:\n    assert 3\n')
    result = exporter.build(mini_tree, None)
    exported = result.plan.files["test/eval/mybench/test_suite.py"]
    exported = exported if isinstance(exported, str) else exported.decode()
    assert "def test_one_per_class" in exported and "test_a_variant" not in exported
    assert "test/eval/mybench/test_suite.py::test_a_variant" in result.dropped_tests
    assert "test/eval/mybench/test_rerun.py" not in result.plan.files
    assert "test/eval/mybench/test_rerun.py (stays in lmms-tasks: not_exported: re-runs the suite as root)" in result.dropped_tests
    (folder / "test_rerun.py").write_text("import pytest\n\npytestmark = pytest.mark.not_exported\n")
    with pytest.raises(ExportError, match=r"test_rerun\.py:3: not_exported needs a reason"):
        exporter.build(mini_tree, None)


def test_a_test_using_a_fixture_of_its_folders_conftest_that_stays_home_stays_too(mini_tree: SourceTree) -> None:
    """A test folder's own conftest that imports test support is not exported, and neither is a test that asks for one
    of its fixtures (it would fail upstream for want of it); the folder's other tests go."""
    folder = mini_tree.tests_dir / "mybench"
    (folder / "conftest.py").write_text(
        "import pytest\n\nfrom minipkg.utils.testing.helpers import double\n\n\n@pytest.fixture\ndef quadrupled() -> int:\n    return double(double(1))\n"
    )
    (folder / "test_quadrupled.py").write_text("def test_quadrupled(quadrupled: int) -> None:\n    assert quadrupled == 4\n")
    result = exporter.build(mini_tree, None)
    assert "test/eval/mybench/test_quadrupled.py" not in result.plan.files and "test/eval/mybench/test_hooks.py" in result.plan.files
    assert "from minipkg" not in result.plan.files["test/eval/mybench/conftest.py"].decode() and "double" not in result.plan.files["test/eval/mybench/conftest.py"].decode()
    assert any(d.startswith("test/eval/mybench/test_quadrupled.py (stays in lmms-tasks: uses the fixture(s) quadrupled of tests/mybench/conftest.py)") for d in result.dropped_tests)


def test_a_test_needing_test_support_stays_home(mini_tree: SourceTree) -> None:
    """A test that imports test support (a module the task folders never reach) is not exported, and says why."""
    test = mini_tree.tests_dir / "mybench" / "test_support.py"
    test.write_text("from minipkg.utils.testing.helpers import double\n\n\ndef test_double() -> None:\n    assert double(2) == 4\n")
    result = exporter.build(mini_tree, None)
    assert "test/eval/mybench/test_support.py" not in result.plan.files and "test/eval/mybench/test_hooks.py" in result.plan.files
    assert any(d.startswith("test/eval/mybench/test_support.py (stays in lmms-tasks: imports minipkg.utils.testing.helpers)") for d in result.dropped_tests)
    assert not any("/testing/" in rel for rel in result.plan.files)
    assert any(d.startswith("test/eval/mybench/test_with_fixture.py (stays in lmms-tasks: uses the fixture(s) doubled of tests/conftest.py)") for d in result.dropped_tests)


PROJECT_TRACES = re.compile(r"lmms[-_]tasks|yaml_templates|exported from|not_exported|include_path_only|export-upstream", re.IGNORECASE)


def test_no_added_line_names_this_project(stack_export: Any) -> None:
    """What lmms-eval merges reads as its own (issue 56): no added line of any PR, code, YAML, test or docs,
    names this project, its folders, its markers or its commands."""
    found = []
    for pr in stack_export.stack.prs:
        for line in pr.patch.decode("utf-8").splitlines():
            if line.startswith("+") and not line.startswith("+++") and PROJECT_TRACES.search(line):
                found.append(f"{pr.name}: {line[:160]}")
    assert found == []


def test_descriptions_tick_breaking_change_where_every_run_sees_the_change(stack_export: Any) -> None:
    """Issue 56: the exit statuses (0003) and the loading retry policy (0004) change what every existing run does,
    so their descriptions tick "Breaking change"; 0007 is opt-in, a feature (its bug stays for tasks that do not opt in)."""
    ticked = {pr.name: {line[6:] for line in pr.body.splitlines() if line.startswith("- [x] ")} for pr in stack_export.stack.prs if pr.kind == "core"}
    assert {name for name, kinds in ticked.items() if "Breaking change" in kinds} == {"0003-cli-exit-status", "0004-task-load-retry-network-errors"}
    assert ticked["0007-evaluator-k-samples-stability"] == {"New feature"}
    assert all(kinds for kinds in ticked.values())
