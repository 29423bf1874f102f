"""The task folder: every task and group registers, each YAML's metric_list matches what process_results
returns, group metric names match no other metric by substring, generation settings are the official ones."""

from __future__ import annotations

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.services.taskconfig import task_config
from lmms_tasks.utils.vlm2_bench import SUBTASKS, hooks

TASKS = [f"vlm2_bench_{s}" for s in SUBTASKS]
GROUPS = {"vlm2_bench", "vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc"}
GROUP_METRICS = ("vlm2_score", "vlm2_img8_score", "vlm2_gap_to_human", "vlm2_exact_score", "vlm2_exact_img8_score")


def test_tasks_and_groups_register_with_lmms_eval() -> None:
    from lmms_eval.tasks import TaskManager

    index = TaskManager(verbosity="ERROR", include_path=tasks_path(), include_defaults=False).task_index
    ours = {name: entry["type"] for name, entry in index.items() if name.startswith("vlm2_bench")}
    assert ours == {**{t: "task" for t in TASKS}, **{g: "group" for g in GROUPS}}


@pytest.mark.parametrize("subtask", list(SUBTASKS))
def test_metric_list_matches_process_results(subtask: str) -> None:
    config = task_config(f"vlm2_bench_{subtask}")
    names = [entry["metric"] for entry in config["metric_list"]]
    assert tuple(names) == hooks.metric_names(subtask)
    assert all(entry["aggregation"] == f"!function utils.{entry['metric']}" for entry in config["metric_list"])
    assert config["process_docs"] == f"!function utils.process_docs_{subtask}"
    expected_tokens = 512 if subtask.startswith("gc") or subtask == "pc_vid" else 2048
    assert config["generation_kwargs"] == {"max_new_tokens": expected_tokens, "temperature": 0, "do_sample": False, "until": []}
    assert (subtask == "pc_vid") == ("vlm2_img8_score" not in names) == ("vlm2_exact_img8_score" not in names)
    assert {"vlm2_score", "vlm2_gap_to_human", "vlm2_exact_score"} <= set(names)


def test_group_metric_names_match_only_themselves_by_substring() -> None:
    all_names = {name for subtask in SUBTASKS for name in hooks.metric_names(subtask)}
    for group_metric in GROUP_METRICS:
        assert {name for name in all_names if group_metric in name} == {group_metric}


def test_every_hook_named_in_the_yamls_exists_in_the_thin_utils() -> None:
    import importlib.util
    from pathlib import Path

    path = Path(tasks_path()) / "vlm2_bench" / "utils.py"
    spec = importlib.util.spec_from_file_location("vlm2_thin_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for task in TASKS:
        config = task_config(task)
        referenced = [v for v in config.values() if isinstance(v, str) and v.startswith("!function utils.")]
        referenced += [e["aggregation"] for e in config["metric_list"]]
        for ref in referenced:
            assert callable(getattr(module, ref.split("utils.", 1)[1])), ref
