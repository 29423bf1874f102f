"""Packaging: one installed top-level package, tasks that load from any working directory in both
editable and regular installs, and task names that are complete and collide with no built-in task."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lmms_tasks import BENCHMARKS, tasks_path

REPO = Path(__file__).resolve().parents[2]

EXPECTED_TASKS = {
    *(f"vlm2_bench_{s}" for s in ("gc_mat", "gc_trk", "oc_cpr", "oc_cnt", "oc_grp", "pc_cpr", "pc_cnt", "pc_grp", "pc_vid")),
    *(f"humaneval_v_{s}{v}" for s in ("v2c", "v2c_cot", "gt_t2c", "v2t", "t2c") for v in ("", "_pass3")),
    "humaneval_v1",
    "humaneval_v1_pass10",
    "haerae_vision_original",
    "haerae_vision_explicit",
}
EXPECTED_GROUPS = {"vlm2_bench", "vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc", "humaneval_v", "haerae_vision"}


def _our_index() -> dict:
    from lmms_eval.tasks import TaskManager

    return TaskManager(verbosity="ERROR", include_path=tasks_path(), include_defaults=False).task_index


def test_every_named_task_and_group_is_registered() -> None:
    index = _our_index()
    tasks = {name for name, entry in index.items() if entry["type"] == "task"}
    groups = {name for name, entry in index.items() if entry["type"] == "group"}
    assert tasks == EXPECTED_TASKS
    assert groups == EXPECTED_GROUPS


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
        capture_output=True,
        text=True,
        timeout=300,
    )
    listed = out.stdout + out.stderr
    assert out.returncode == 0, listed[-2000:]
    assert all(name in listed for name in EXPECTED_TASKS | EXPECTED_GROUPS)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out_dir = tmp_path_factory.mktemp("wheel")
    # Build from a copy of the tracked tree: an in-tree build/ left by an earlier build could carry stale files.
    source = tmp_path_factory.mktemp("source") / "lmms-tasks"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_symlink():
            target.symlink_to(os.readlink(REPO / name))
        elif (REPO / name).is_file():
            shutil.copy2(REPO / name, target)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out_dir), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    (built,) = out_dir.glob("lmms_tasks-*.whl")
    return built


def test_wheel_installs_exactly_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"lmms_tasks"}
    for required in (
        "lmms_tasks/utils/services/resources/prompts_exact.json",
        "lmms_tasks/yaml_templates/vlm2_bench_tf_gc",
        "lmms_tasks/yaml_templates/humaneval_v_pass3",
        "lmms_tasks/yaml_templates/haerae_vision_task",
        *(f"lmms_tasks/{b}/README.md" for b in BENCHMARKS),
    ):
        assert required in names


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
