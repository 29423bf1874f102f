"""What a maintainer of lmms-eval would refuse, checked on the real stack (`stack_export`, lmms-eval 0.7.3 as installed):
each PR within its cap by kind (`stack.CAPS`), benchmark PRs that add only their own folder and need only core and
service PRs, chat endpoints called only from `lmms_eval/llm_judge/`, no name of this project under `lmms_eval/`, and
saved task configs that keep their keys after the core PRs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks.utils.commands.upstream import exporter, stack
from lmms_tasks.utils.commands.upstream.pyrewrite import rename_project


def _by_kind(stack_export: Any, kind: str) -> list[stack.PullRequest]:
    return [pr for pr in stack_export.stack.prs if pr.cap_kind == kind]


def test_every_pr_has_a_kind_and_list_shows_its_lines_against_its_cap(stack_export: Any) -> None:
    prs = stack_export.stack.prs
    assert {pr.cap_kind for pr in prs} == set(stack.CAPS)  # every kind is there, and no PR lacks one
    listed = stack.parse_listing(stack.listing(stack_export.stack))
    assert [(p["kind"], p["area"], p["cap"]) for p in listed] == [
        (pr.kind, None if pr.kind != "service" or pr.cap_kind == "service" else pr.cap_kind.replace("_", " "), (pr.capped_lines, stack.CAPS[pr.cap_kind]))
        for pr in prs
    ]
    for pr in prs:  # what the cap counts: the non-test Python the PR adds under lmms_eval/
        assert pr.capped_lines == (pr.python_lines["core"] + pr.python_lines["task"]), pr.name


@pytest.mark.parametrize("kind", ["core", "benchmark", "code_execution", "service"])
def test_each_pr_is_within_the_cap_of_its_kind(stack_export: Any, kind: str) -> None:
    prs = _by_kind(stack_export, kind)
    assert prs and all(pr.capped_lines > 0 for pr in prs)
    assert {pr.name: pr.over_cap() for pr in prs if pr.over_cap()} == {}


def test_a_benchmark_folder_within_its_own_cap(stack_export: Any) -> None:
    for pr in _by_kind(stack_export, "benchmark"):
        folder = stack.python_added_under(pr.patch, f"lmms_eval/tasks/{pr.name}/")
        assert 100 < folder <= stack.BENCHMARK_FOLDER_CAP, pr.name


def test_judging_is_one_pr_within_its_cap_inside_llm_judge(stack_export: Any) -> None:
    (judging,) = _by_kind(stack_export, "judging")
    assert judging.capped_lines <= stack.CAPS["judging"]
    assert stack.python_added_under(judging.patch, stack.JUDGING_HOME) == judging.capped_lines


def test_over_cap_names_what_exceeds(stack_export: Any) -> None:
    """The check itself: a PR past its cap, or a benchmark folder past its own, is reported (so the tests above can fail)."""
    pr = _by_kind(stack_export, "benchmark")[0]
    bigger = "".join(f"+x = {i}\n" for i in range(stack.CAPS["benchmark"]))
    grown = pr.patch + f"diff --git a/lmms_eval/tasks/{pr.name}/lib/more.py b/lmms_eval/tasks/{pr.name}/lib/more.py\n{bigger}".encode()
    problems = stack.PullRequest(pr.name, pr.kind, pr.title, pr.needs, grown, pr.body, cap_kind="benchmark").over_cap()
    assert any("non-test Python lines under lmms_eval/" in p for p in problems) and any(f"in lmms_eval/tasks/{pr.name}/" in p for p in problems)


def test_benchmark_prs_add_files_only_under_their_own_folder_and_need_only_core_and_service_prs(stack_export: Any) -> None:
    kinds = {pr.name: pr.kind for pr in stack_export.stack.prs}
    for pr in _by_kind(stack_export, "benchmark"):
        outside = [f for f in pr.files if not f.startswith((f"lmms_eval/tasks/{pr.name}/", f"{exporter.TEST_ROOT}/{pr.name}/", "docs/"))]
        assert outside == [], pr.name
        assert {kinds[n] for n in pr.needs} <= {"core", "service"}, (pr.name, pr.needs)
    haerae = next(pr for pr in stack_export.stack.prs if pr.name == "haerae_vision")
    assert "vlm2_bench" not in haerae.needs and "task_data" in haerae.needs


CHAT = re.compile(r"chat\.completions|/chat/completions|ChatCompletion")


def _chat_callers(files: dict[str, bytes]) -> list[str]:
    return sorted(
        rel
        for rel, data in files.items()
        if rel.startswith("lmms_eval/") and not rel.startswith(stack.JUDGING_HOME) and rel.endswith(".py") and CHAT.search(data.decode("utf-8", "replace"))
    )


def test_the_chat_endpoint_check_finds_a_call() -> None:
    assert _chat_callers({"lmms_eval/tasks/x/lib/j.py": b"client.chat.completions.create(**payload)\n", "lmms_eval/llm_judge/p.py": b"client.chat.completions.create()\n"}) == [
        "lmms_eval/tasks/x/lib/j.py"
    ]


def test_no_exported_module_outside_llm_judge_calls_a_chat_endpoint(stack_export: Any) -> None:
    assert _chat_callers(stack_export.stack.export.plan.files) == []


NAMES = re.compile(r"lmms_tasks|lmms-tasks", re.IGNORECASE)  # LMMS_TASKS_ included


def test_no_name_of_this_project_under_lmms_eval(stack_export: Any) -> None:
    """Package paths, environment variables, cache directories, prefixes and headers: every file the stack adds or
    changes under lmms_eval/ (its path and its text)."""
    found = []
    for pr in stack_export.stack.prs:
        for line in pr.patch.decode("utf-8", "replace").splitlines():
            if line.startswith("diff --git a/lmms_eval/") and NAMES.search(line):
                found.append(line)
        current = None
        for line in pr.patch.decode("utf-8", "replace").splitlines():
            if line.startswith("diff --git a/"):
                current = line.split(" b/", 1)[1]
            elif current and current.startswith("lmms_eval/") and line.startswith("+") and NAMES.search(line):
                found.append(f"{current}: {line[1:].strip()}")
    assert found == []


def test_the_rename_covers_each_spelling() -> None:
    from lmms_tasks.utils.services.llm_judge import judge
    from lmms_tasks.utils.testing.openai_server import EXPORTED_PREFLIGHT_HEADER

    assert rename_project("os.environ['LMMS_TASKS_JUDGE_MODEL'] or '~/.cache/lmms_tasks/judge'", "lmms_tasks") == "os.environ['LMMS_EVAL_JUDGE_MODEL'] or '~/.cache/lmms_eval/judge'"
    assert rename_project("prefix='lmms_tasks_sbx_'", "lmms_tasks") == "prefix='lmms_eval_sbx_'"
    assert rename_project(judge.PREFLIGHT_HEADER, "lmms_tasks", hyphenated=True).lower() == EXPORTED_PREFLIGHT_HEADER  # the stand-in knows both
    assert rename_project("the lmms-tasks repository", "lmms_tasks") == "the lmms-tasks repository"  # prose of test files is left alone


def _saved_config_keys(root: Path | None) -> dict[str, list[str]]:
    probe = (
        "import json\n"
        "from lmms_eval.api.task import TaskConfig\n"
        "plain = TaskConfig(task='t', dataset_path='d', test_split='test', output_type='generate_until', doc_to_text='q', doc_to_target='a')\n"
        "print(json.dumps({'bare': sorted(TaskConfig(task='t').to_dict()), 'plain': sorted(plain.to_dict())}))\n"
    )
    env = None
    if root is not None:
        from lmms_tasks.utils.testing.patched import env as patched_env

        env = patched_env(root)
    out = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ if env is None else env), capture_output=True, text=True, timeout=300, check=True, cwd=root or Path.cwd())
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_plain_task_config_saves_the_same_keys_after_the_stack(tmp_path: Path) -> None:
    """A task that sets none of the new options: its saved config (`TaskConfig.to_dict`, what results.json and the
    `--use_cache` fingerprint see) has the same keys with every core PR applied as in stock lmms-eval 0.7.3."""
    from lmms_tasks.utils.testing.patched import patched_copy

    stock = _saved_config_keys(None)
    patched = _saved_config_keys(patched_copy(tmp_path / "patched"))
    assert stock["plain"] and set(stock["plain"]) > set(stock["bare"])
    assert patched == stock
