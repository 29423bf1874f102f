"""Our task folder registers every HumanEval-V task and the group, and no name collides with a built-in."""

from __future__ import annotations

import os
from pathlib import Path

import lmms_eval
import pytest
import yaml

from lmms_tasks import tasks_path
from lmms_tasks.utils.services.taskconfig import task_config

SETTINGS = ("v2c", "v2c_cot", "gt_t2c", "v2t", "t2c")
TASKS = [f"humaneval_v_{s}{suffix}" for s in SETTINGS for suffix in ("", "_pass3")]


def test_task_manager_indexes_every_task_and_the_group() -> None:
    from lmms_eval.tasks import TaskManager

    manager = TaskManager("ERROR", include_path=os.path.join(tasks_path(), "humaneval_v"), include_defaults=False)
    assert set(TASKS) <= set(manager.all_tasks)
    assert "humaneval_v" in manager.all_groups


@pytest.mark.include_path_only  # built-in names are ours once exported upstream
def test_no_builtin_lmms_eval_name_collides() -> None:
    ours = set(TASKS) | {"humaneval_v", "humaneval_v_tasks"}
    builtin_root = Path(lmms_eval.__file__).parent / "tasks"
    clashes = []
    for path in builtin_root.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8", errors="replace")
        clashes += [f"{path}: {name}" for name in ours if f"task: {name}\n" in text or f"group: {name}\n" in text or f"tag: {name}\n" in text]
    assert clashes == []


def test_sampling_settings() -> None:
    for task in TASKS:
        config = task_config(task)
        kwargs = config["generation_kwargs"]
        assert kwargs["max_new_tokens"] == 2048 and kwargs["until"] == []
        # the hooks see the raw model output, as the official post_process does (no stripping of any kind)
        assert config["reasoning_tags"] == "none" and config["strip_responses"] is False
        sampled = task.endswith("_pass3") and not task.startswith("humaneval_v_t2c")
        if sampled:
            assert config["repeats"] == 6 and kwargs["temperature"] == 0.8 and kwargs["top_p"] == 0.95 and kwargs["top_k"] == 20
            assert config["filter_list"] == [{"name": "n6", "filter": [{"function": "take_first_k", "k": 6}]}]
            assert "seed" not in kwargs
        else:  # greedy; V2T2C step 2 stays greedy with one code per description even for pass@3 (H12)
            assert kwargs["temperature"] == 0 and config.get("repeats", 1) == 1
            assert "filter_list" not in config  # lmms-eval's default: take_first, named "none"


def test_group_lists_the_single_run_settings() -> None:
    """The group lists a tag; lmms-eval expands it into the four tasks whose YAML carries it."""
    from lmms_eval.tasks import TaskManager

    group = yaml.safe_load((Path(tasks_path()) / "humaneval_v" / "humaneval_v.yaml").read_text())
    assert group["task"] == ["humaneval_v_tasks"]
    manager = TaskManager("ERROR", include_path=os.path.join(tasks_path(), "humaneval_v"), include_defaults=False)
    assert manager.task_index["humaneval_v_tasks"]["type"] == "tag"
    assert sorted(manager.task_index["humaneval_v_tasks"]["task"]) == ["humaneval_v_gt_t2c", "humaneval_v_v2c", "humaneval_v_v2c_cot", "humaneval_v_v2t"]


def test_every_task_names_itself_to_the_shared_loader() -> None:
    """One `custom_dataset` for every task; the task's YAML names it in `dataset_kwargs.subtask`."""
    from lmms_tasks.utils.humaneval_v.hooks import task_of

    for task in [*TASKS, "humaneval_v1", "humaneval_v1_pass10"]:
        config = task_config(task)
        assert config["custom_dataset"] == "!function utils.load_subtask"
        assert task_of(config["dataset_kwargs"]["subtask"], config["dataset_kwargs"]["setting"]) == task
