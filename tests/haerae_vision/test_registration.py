"""lmms-eval finds our two tasks and the group through --include_path, with no built-in name collision,
and each task's YAML resolves to the settings the official pipeline uses."""

from __future__ import annotations

import re
from pathlib import Path

import lmms_eval
import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.services.taskconfig import task_config

NAMES = ("haerae_vision_original", "haerae_vision_explicit", "haerae_vision", "haerae_vision_tasks")
COMMON_METRICS = ["haerae_vision_score", "judge_failures", "judge_unparsed", "category_scores", "item_scores"]


def test_task_manager_indexes_tasks_and_group() -> None:
    from lmms_eval.tasks import TaskManager

    manager = TaskManager("ERROR", include_path=tasks_path(), include_defaults=False)
    assert {"haerae_vision_original", "haerae_vision_explicit"} <= set(manager.all_tasks)
    assert "haerae_vision" in manager.all_groups
    assert sorted(manager.task_index["haerae_vision_tasks"]["task"]) == ["haerae_vision_explicit", "haerae_vision_original"]  # the group's tag


@pytest.mark.include_path_only  # built-in names are ours once exported upstream
def test_no_builtin_task_group_or_tag_uses_our_names() -> None:
    builtin = Path(lmms_eval.__file__).parent / "tasks"
    pattern = re.compile(r"""^\s*(task|group|tag)\s*:\s*['"]?(""" + "|".join(NAMES) + r""")['"]?\s*$""", re.MULTILINE)
    clashes = [str(p) for p in builtin.rglob("*.yaml") if pattern.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert clashes == []


def test_task_settings_follow_the_official_pipeline() -> None:
    for variant in ("original", "explicit"):
        config = task_config(f"haerae_vision_{variant}")
        assert config["generation_kwargs"] == {"max_new_tokens": 512, "temperature": 0.2, "top_p": 0.95, "do_sample": True, "until": []}
        assert config["reasoning_tags"] == "none"
        assert config["custom_dataset"] == "!function utils.load_subtask" and "process_docs" not in config
        assert config["dataset_kwargs"] == {"variant": variant} and config["tag"] == "haerae_vision_tasks"
        metrics = [entry["metric"] for entry in config["metric_list"]]
        assert sorted(metrics) == sorted(COMMON_METRICS)
        # per-item scores for lmms-eval's CLT stderr and --baseline, written by the batch step
        assert config["score_key"] == "haerae_vision_score" and config["process_results_batch"] == "!function utils.score_batch"


def test_group_reports_group_only_metrics_from_the_subtask_scores() -> None:
    import yaml

    class _Loader(yaml.SafeLoader):
        """Keeps `!function` tags as plain strings."""

    _Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    group_yaml = yaml.load((Path(tasks_path()) / "haerae_vision" / "haerae_vision.yaml").read_text(encoding="utf-8"), Loader=_Loader)
    assert group_yaml["task"] == ["haerae_vision_tasks"]  # the tag both tasks carry
    entries = [(e["metric"], e.get("group_metric"), e.get("match")) for e in group_yaml["aggregate_metric_list"]]
    assert entries == [
        ("haerae_vision_score", "score_original", None),
        ("haerae_vision_score", "score_explicit", None),
        ("item_scores", "underspec_gap", None),  # paired over the judged items' values each task reports
        ("judge_failures", None, "exact"),
        ("judge_unparsed", None, "exact"),
    ]
    assert not {"score_original", "score_explicit", "underspec_gap"} & set(COMMON_METRICS)  # group-only


