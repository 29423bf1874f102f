"""The real benchmarks' stack (`export-upstream`, tests/upstream/conftest.py `stack_export`) applied with `git am`
to a copy of the installed lmms_eval package that shadows it on PYTHONPATH (with `lmms_tasks` made unimportable),
as a contributor's last stacked branch has it. Then, without --include_path, TaskManager lists every task and
group, every hook resolves, the checkout's formatters accept the code, a working-tree export finds every file
already there, the exported tree holds no compat module and none of the 0.7.3 workarounds, and the fixture runs
of the real CLI (the demo's stages, on the patched lmms-eval with no compat layer at all) give the same metrics as
the demo through --include_path on the stock 0.7.3 with compat."""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.commands.upstream import stack
from lmms_tasks.utils.commands.upstream.cli import export
from lmms_tasks.utils.commands.upstream.pyrewrite import exported_env
from lmms_tasks.utils.commands.upstream.series import missing_features
from lmms_tasks.utils.commands.upstream.sources import ExportError, SourceTree, default_tree
from lmms_tasks.utils.commands.upstream.writer import MANIFEST_PATH
from lmms_tasks.utils.testing.demo import DEMO_ENV, DEMO_MODELS, DemoOutcome
from lmms_tasks.utils.testing.demo import stage_env as demo_stage_env
from lmms_tasks.utils.testing.demo import stages as demo_stages
from lmms_tasks.utils.testing.e2e import RunResult, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.openai_server import StandInServer
from lmms_tasks.utils.testing.oplog import op


class Site:
    def __init__(self, root: Path, poison: Path, files: list[str], tree: SourceTree) -> None:
        self.root, self.poison, self.files, self.tree = root, poison, files, tree
        self.benchmarks = tree.benchmarks

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = exported_env(dict(base if base is not None else os.environ), self.tree.package)  # the exported code reads LMMS_EVAL_*
        env["PYTHONPATH"] = os.pathsep.join([str(self.poison), str(self.root)])
        return env


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, stack_export: Any, request: pytest.FixtureRequest) -> Site:
    """tmp/site/lmms_eval: a copy of the installed package with the whole stack applied with `git am`, as a
    contributor's last branch has it (the core PRs, then every benchmark PR): a clone of `stack_applied` (applied
    PR by PR once per test run) at its last PR. `LMMS_TASKS_UPSTREAM_SITE` names another checkout, already
    exported and patched, to use instead (scripts/check_lmms_eval_main.sh: lmms-eval main)."""
    base = tmp_path_factory.mktemp("upstream")
    poison = base / "poison"
    (poison / "lmms_tasks").mkdir(parents=True)
    (poison / "lmms_tasks" / "__init__.py").write_text("raise ImportError('the exported tasks imported lmms_tasks')\n")
    if os.environ.get("LMMS_TASKS_UPSTREAM_SITE"):
        root = Path(os.environ["LMMS_TASKS_UPSTREAM_SITE"])
        assert (root / "lmms_eval" / "tasks" / ".lmms_tasks_export.json").is_file(), f"{root}: not an exported checkout"
        return Site(root, poison, sorted(stack_export.stack.export.plan.files), stack_export.tree)
    applied = request.getfixturevalue("stack_applied")
    assert applied.refused is None, f"git am refused {applied.refused}"
    root = applied.checkout(base / "site")
    log = subprocess.run(["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(log) == 1 + len(stack_export.stack.prs) and all(line.startswith(("feat(", "fix(")) for line in log[:-1])
    files = sorted(f for f in stack_export.stack.export.plan.files)
    return Site(root, poison, files, stack_export.tree)


def _our_index() -> dict[str, str]:
    from lmms_eval.tasks import TaskManager

    index = TaskManager(verbosity="ERROR", include_path=tasks_path(), include_defaults=False).task_index
    # a tag (what a family group lists) has no YAML of its own: the groups that list it are compared end to end
    return {name: entry["type"] for name, entry in index.items() if entry["type"] != "tag"}


def test_without_include_path_task_manager_lists_every_task_and_group(site: Site) -> None:
    prefixes = tuple(f"{site.root / 'lmms_eval' / 'tasks' / b}{os.sep}" for b in site.benchmarks)
    code = (
        "import json, lmms_eval\n"
        "from lmms_eval.tasks import TaskManager\n"
        "from lmms_eval.utils import load_yaml_config\n"
        "index = TaskManager(verbosity='ERROR').task_index\n"
        f"ours = {{k: v for k, v in index.items() if str(v.get('yaml_path', '')).startswith({prefixes!r})}}\n"
        "for name, v in ours.items():\n"
        "    load_yaml_config(v['yaml_path'], mode='full')  # imports every !function hook\n"
        "print(json.dumps({'file': lmms_eval.__file__, 'index': {k: v['type'] for k, v in ours.items()}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=dict(site.env()), cwd=site.root.parent, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-4000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["file"] == str(site.root / "lmms_eval" / "__init__.py")
    expected = _our_index()
    assert expected and report["index"] == expected
    assert {"group"} <= set(expected.values()) and len([t for t in expected.values() if t == "task"]) >= len(site.benchmarks)


def _snapshot(root: Path) -> dict[str, str]:
    paths = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_a_tree_export_after_the_stack_changes_no_byte(site: Site) -> None:
    """The applied stack holds exactly what the working-tree export writes: no patch is needed any more, and every
    file and the current_tasks.md lines are already there."""
    before = _snapshot(site.root)
    assert missing_features(site.root) == []  # the series is in: no patches are planned any more
    result, outcome = export(site.root, site.tree)
    assert not result.series.files
    assert not outcome.written and not outcome.catalog_changed and len(outcome.unchanged) == len(site.files)
    assert {p: h for p, h in _snapshot(site.root).items() if not p.endswith(MANIFEST_PATH)} == {
        p: h for p, h in before.items() if not p.endswith(MANIFEST_PATH)
    }


WORKAROUNDS = {
    "the compat layer": r"\bcompat\b",
    "a str subclass that keeps whitespace": r"KeepRaw|RawResponse",
    "strings carrying group payloads": r"GroupInput|group_inputs|reported by group",
    "a replaced sys.exit": r"sys\.exit\s*=|_guarded_exit|_real_exit",
    "a BaseException to escape lmms-eval": r"StopEvaluation|\(BaseException\)",
    "a manifest dataset": r"manifest_source|_source\.jsonl",
}


def test_the_exported_tree_holds_no_compat_module_and_no_workaround(site: Site) -> None:
    import re as _re

    exported = [site.root / f for f in site.files]
    assert not any("/compat/" in f or f.endswith("/compat.py") for f in site.files)
    found = {
        what: [str(p.relative_to(site.root)) for p in exported if p.is_file() and _re.search(pattern, p.read_text(encoding="utf-8", errors="replace"))]
        for what, pattern in WORKAROUNDS.items()
    }
    assert found == {what: [] for what in WORKAROUNDS}
    # Nor does its Python name our package, in code, strings or comments: a script a test runs with `-c` or
    # a docstring's module name must point at the exported module, which exists upstream.
    ours = _re.compile(r"(?<![\w.])lmms_tasks\.\w")
    naming_us = [f"{p.relative_to(site.root)}:{n}" for p in exported if p.suffix == ".py" for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ours.search(line)]
    assert naming_us == []


def test_each_benchmarks_table_goes_with_its_library(site: Site) -> None:
    """The tables the exported libraries read (VLM2-Bench's subtasks, HumanEval-V's settings) are package data
    of those libraries: the export carries them beside the modules, byte for byte."""
    for benchmark, table in (("vlm2_bench", "subtasks.csv"), ("humaneval_v", "settings.csv")):
        exported = f"lmms_eval/tasks/{benchmark}/lib/{table}"
        assert exported in site.files
        assert (site.root / exported).read_bytes() == Path(importlib.import_module(f"lmms_tasks.utils.{benchmark}").__file__).with_name(table).read_bytes()


HOME_ONLY = re.compile(r"python -m lmms_tasks|--include_path|(?<![\w/.])docs/[A-Z_]+\.md")  # our commands and our docs/


def test_what_an_lmms_eval_user_reads_points_only_at_what_lmms_eval_has(site: Site) -> None:
    """The runtime's messages and docstrings and the task READMEs name no command of ours, no `--include_path`
    and no file of our docs/ (none exists in lmms-eval); the messages that send a user somewhere take the
    exported package's HELP, which says what lmms-eval offers instead."""
    runtime = [site.root / f for f in site.files if f.startswith("lmms_eval/") and f.endswith((".py", ".md", ".yaml"))]
    hits = [f"{p.relative_to(site.root)}:{n}: {line.strip()}" for p in runtime for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if HOME_ONLY.search(line)]
    assert hits == []
    # the home package's texts would have matched: the scan sees the messages that use them
    from lmms_tasks import HELP, UPSTREAM_HELP

    assert all(HOME_ONLY.search(text) for text in (HELP["judge_docs"], HELP["rescore"], HELP["media_stats"]))
    probe = (
        "from lmms_eval.tasks._task_utils.task_runtime import HELP\n"
        "from lmms_eval.tasks._task_utils.task_runtime.services.model_args import model_args_warnings\n"
        f"print(HELP == {UPSTREAM_HELP!r})\n"
        "print(model_args_warnings('haerae_vision_original', ['lmms-eval', '--model', 'vllm', '--model_args', 'model=m,max_new_tokens=1'])[-1])\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=site.root, env=dict(site.env()), capture_output=True, text=True, timeout=300, check=True).stdout.splitlines()
    assert out[0] == "True"
    assert out[1].endswith(UPSTREAM_HELP["media_stats"].format(task="haerae_vision_original")), out


def test_task_readmes_hold_what_a_user_needs_within_lmms_evals_range(site: Site) -> None:
    """Each benchmark's README upstream is the part of ours marked for lmms-eval users: within README_LIMIT lines,
    a limit under the two largest task READMEs lmms-eval already has, and it names every task and group its
    folder registers; the detail stays in our README (which is longer)."""
    theirs = sorted(len(p.read_text(encoding="utf-8").splitlines()) for p in site.root.glob("lmms_eval/tasks/*/README.md") if f"lmms_eval/tasks/{p.parent.name}/README.md" not in site.files)
    assert stack.README_LIMIT < theirs[-2], theirs[-3:]
    for benchmark in site.benchmarks:
        readme = (site.root / "lmms_eval" / "tasks" / benchmark / "README.md").read_text(encoding="utf-8")
        ours = (Path(tasks_path()) / benchmark / "README.md").read_text(encoding="utf-8")
        assert len(readme.splitlines()) <= stack.README_LIMIT < len(ours.splitlines()), benchmark
        names = {name for name, kind in _our_index().items() if name.startswith(benchmark)}
        assert names and {n for n in names if f"`{n}`" not in readme} == set(), benchmark
        assert "<!--" not in readme and "-->" not in readme, benchmark


def test_the_exported_unit_tests_pass_in_lmms_evals_tree(site: Site) -> None:
    """The exported tests, run where a maintainer runs them (`test/eval/<benchmark>` of the patched checkout,
    `lmms_tasks` unimportable): the unit tests pass (e2e runs: the next test; the hostile sandbox suite runs
    in our tree, and `-c` scripts naming our package are excluded by the check above)."""
    folders = sorted({f.split("/")[2] for f in site.files if f.startswith("test/eval/") and f.count("/") > 2})
    assert set(site.benchmarks) | {"cache", "judge", "sandbox"} <= set(folders)
    folders = [f"test/eval/{name}" for name in folders]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *folders, "-m", "not e2e and not slow"]
    command += ["--ignore=test/eval/sandbox/test_sandbox_hostile.py"]
    with op("pytest-in-checkout", "every exported folder"):
        out = subprocess.run(command, env=dict(site.env()), cwd=site.root, capture_output=True, text=True, timeout=900, check=False)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    passed = re.search(r"(\d+) passed", out.stdout)
    assert passed and int(passed.group(1)) >= 100, out.stdout[-1000:]


def test_refuses_to_overwrite_an_upstream_file(tmp_path: Path) -> None:
    """A checkout that already has, e.g., its own `vlm2_bench/utils.py` is left untouched."""
    (tmp_path / "lmms_eval/tasks/vlm2_bench").mkdir(parents=True)
    theirs = tmp_path / "lmms_eval/tasks/vlm2_bench/utils.py"
    theirs.write_text("# upstream's own file\n")
    with pytest.raises(ExportError, match=r"lmms_eval/tasks/vlm2_bench/utils\.py \(not written by lmms-tasks\)"):
        export(tmp_path, default_tree(["vlm2_bench"]), format_code=False, patches=False)
    assert theirs.read_text() == "# upstream's own file\n"
    assert not (tmp_path / MANIFEST_PATH).exists() and not (tmp_path / "test").exists()


def test_exported_python_passes_the_formatters_and_has_no_undefined_names(site: Site) -> None:
    python = [f for f in site.files if f.endswith(".py")]
    assert python
    for command in (
        ["black", "--check", "--line-length=240"],
        ["isort", "--check-only", "--profile", "black"],
        ["ruff", "check", "--no-cache", "--isolated", "--select", "E9,F63,F7,F82"],
    ):
        out = subprocess.run([sys.executable, "-m", *command, *python], cwd=site.root, capture_output=True, text=True, timeout=600, check=False)
        assert out.returncode == 0, f"{command[0]}: {out.stdout[-3000:]}{out.stderr[-3000:]}"


def _numeric_metrics(result: RunResult, tasks: set[str]) -> dict[str, dict[str, Any]]:
    """Every metric value of our tasks and groups (the non-deterministic wall-clock ones left out)."""
    found: dict[str, dict[str, Any]] = {}
    for section in ("results", "groups"):
        for task, values in result.results.get(section, {}).items():
            if task in tasks:
                found[f"{section}/{task}"] = {k: v for k, v in values.items() if k != "alias" and "wall" not in k and isinstance(v, (int, float, str))}
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, str) and isinstance(b, str):  # judge summaries name each run's stand-in server port
        return re.sub(r"@127\.0\.0\.1:\d+", "@PORT", a) == re.sub(r"@127\.0\.0\.1:\d+", "@PORT", b)
    return a == b


@pytest.mark.e2e
def test_fixture_runs_give_the_same_metrics_as_through_include_path(site: Site, tmp_path: Path, demo_two_models: tuple[Path, DemoOutcome]) -> None:
    """The exported tasks, run without --include_path, against the session demo's runs through
    --include_path (its first model: the same fixtures and scripted replies)."""
    ours = set(_our_index())
    _, demo = demo_two_models
    through_include_path = dict(enumerate(demo.runs_of(DEMO_MODELS[0])))  # stage -> the demo's run (all into one results folder)
    compared: list[str] = []
    n_values = 0
    with StandInServer(default_reply="") as server:
        modules, data_env = {}, {}
        for benchmark in site.benchmarks:
            try:
                module = importlib.import_module(f"lmms_tasks.utils.testing.fixtures.{benchmark}")
            except ModuleNotFoundError:
                continue
            fixtures = module.write(tmp_path / "data" / benchmark)
            module.script_demo(server, fixtures)
            data_env.update(fixtures.env)
            modules[benchmark] = module
        assert modules, "no benchmark has fixtures"
        previous: RunResult | None = None
        for stage, tasks in enumerate(demo_stages(modules)):
            work = tmp_path / "exported"
            env = offline_env(server.base_url, work, data_env=data_env, extra={**DEMO_ENV, **demo_stage_env(modules, stage, previous)})
            runs = {"include_path": through_include_path[stage]}
            runs["exported"] = run_lmms_eval(tasks, server.base_url, work / f"stage_{stage}", env=site.env(env), include_path="").check()
            previous = runs["exported"]
            assert "--include_path" not in runs["exported"].command and "--include_path" in runs["include_path"].command
            via_include = _numeric_metrics(runs["include_path"], ours)
            via_export = _numeric_metrics(runs["exported"], ours)
            assert via_include and set(via_include) == set(via_export)
            for key, values in via_include.items():
                assert set(values) == set(via_export[key]), key
                differing = {m: (v, via_export[key][m]) for m, v in values.items() if not _same(v, via_export[key][m])}
                assert not differing, f"{key}: {differing}"
            compared += sorted(via_include)
            n_values += sum(len(v) for v in via_include.values())
            assert any(isinstance(v, (int, float)) and not math.isnan(v) for section in via_include.values() for v in section.values())
    print(f"compared {n_values} metric values in {len(compared)} task/group result sections: {compared}")
