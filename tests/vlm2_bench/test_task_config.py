"""The task folder: every task and group registers, each YAML's metric_list matches what process_results
returns, group-only metrics are the group's alone, generation settings are the official ones."""

from __future__ import annotations

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.services.taskconfig import task_config
from lmms_tasks.utils.vlm2_bench import FAMILIES, SUBTASKS, TABLE, hooks

TASKS = [f"vlm2_bench_{s}" for s in SUBTASKS]
GROUPS = {"vlm2_bench", "vlm2_bench_gc", "vlm2_bench_oc", "vlm2_bench_pc"}
GROUP_ONLY = ("vlm2_img8_score", "vlm2_gap_to_human", "vlm2_exact_img8_score")
HOOKS = f"!function {hooks.__name__}."  # the module path, whatever package the tests run from (ours, or lmms-eval after export)


def test_tasks_and_groups_register_with_lmms_eval() -> None:
    """Every subtask of the table is a task whose family's tag holds it; each family group lists only its tag,
    which lmms-eval expands into the family's subtasks (the end-to-end runs load the groups)."""
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(verbosity="ERROR", include_path=tasks_path(), include_defaults=False)
    index = manager.task_index
    ours = {name: entry["type"] for name, entry in index.items() if name.startswith("vlm2_bench")}
    tags = {f"vlm2_bench_{family}_tasks" for family in FAMILIES}
    assert ours == {**{t: "task" for t in TASKS}, **{g: "group" for g in GROUPS}, **{t: "tag" for t in tags}}
    for family in FAMILIES:
        members = {f"vlm2_bench_{s}" for s, row in TABLE.items() if row.family == family}
        assert set(index[f"vlm2_bench_{family}_tasks"]["task"]) == members
        assert task_config_group(f"vlm2_bench_{family}")["task"] == [f"vlm2_bench_{family}_tasks"]


# Each subtask's kind (its parser and scorer: benchmarks_spec), as its YAML must declare it
KIND = {
    "gc_mat": "tf_gc",
    "gc_trk": "tf_gc",
    "oc_cpr": "tf_cpr",
    "oc_cnt": "cnt",
    "oc_grp": "grp",
    "pc_cpr": "tf_cpr",
    "pc_cnt": "cnt",
    "pc_grp": "grp",
    "pc_vid": "vid",
}


@pytest.mark.parametrize("subtask", list(SUBTASKS))
def test_metric_list_matches_process_results(subtask: str) -> None:
    config = task_config(f"vlm2_bench_{subtask}")
    names = [entry["metric"] for entry in config["metric_list"]]
    assert tuple(names) == hooks.metric_names(KIND[subtask])
    assert all(entry["aggregation"] == f"{HOOKS}agg_{entry['metric']}" for entry in config["metric_list"])
    assert config["custom_dataset"] == "!function utils.load_subtask" and "process_docs" not in config
    # the kind is declared, and PC-Cpr's q_id rule (a leading "tf_" dropped before pairing, quirk of its official scorer)
    declared = {"subtask": subtask, "kind": KIND[subtask], **({"strip_tf_prefix": True} if subtask == "pc_cpr" else {})}
    assert config["dataset_kwargs"] == declared and config["tag"] == f"vlm2_bench_{TABLE[subtask].family}_tasks"
    assert TABLE[subtask].img8 == (KIND[subtask] != "vid")  # Table 1's image average leaves the video subtask out
    expected_tokens = 512 if KIND[subtask] in ("tf_gc", "vid") else 2048
    assert config["generation_kwargs"] == {"max_new_tokens": expected_tokens, "temperature": 0, "do_sample": False, "until": []}
    assert {"vlm2_score", "vlm2_exact_score"} <= set(names) and not set(GROUP_ONLY) & set(names)
    assert config["reasoning_tags"] == "none" and config.get("strip_responses", True) is True  # official: output.strip()


def test_group_only_metrics_come_from_the_subtask_scores() -> None:
    entries = {e.get("group_metric") or e["metric"]: e for e in task_config_group("vlm2_bench")["aggregate_metric_list"]}
    assert set(entries) == {"vlm2_score", "vlm2_exact_score", *GROUP_ONLY}
    assert all(e.get("match") == "exact" or e.get("group_metric") for e in entries.values())
    assert entries["vlm2_img8_score"]["metric"] == entries["vlm2_gap_to_human"]["metric"] == "vlm2_score"
    assert entries["vlm2_exact_img8_score"]["metric"] == "vlm2_exact_score"


def task_config_group(name: str) -> dict:
    import yaml

    from lmms_tasks.utils.services.taskconfig import _Loader

    return yaml.load((__import__("pathlib").Path(tasks_path()) / "vlm2_bench" / f"{name}.yaml").read_text(), Loader=_Loader)


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
        for ref in referenced:
            assert callable(getattr(module, ref.split("utils.", 1)[1])), ref
        for entry in config["metric_list"]:  # the per-kind templates name the library's functions directly
            assert callable(getattr(hooks, entry["aggregation"].removeprefix(HOOKS))), entry


def test_the_subtask_table_declares_every_subtask_once() -> None:
    """Each YAML's `dataset_kwargs.subtask` is a row of the table, and every row has its YAML (by task name)."""
    from lmms_tasks.utils.services.taskconfig import task_yaml_path

    assert [task_config(t)["dataset_kwargs"]["subtask"] for t in TASKS] == list(TABLE)
    assert all(task_yaml_path(f"vlm2_bench_{s}").name == f"vlm2_bench_{s}.yaml" for s in TABLE)
    assert {task_config(t)["dataset_kwargs"]["kind"] for t in TASKS} <= set(hooks._METRICS)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("gc_x,gc,maybe,GC-X,a,b,1,2", r"row 3 \(gc_x\): family must be one of .* and img8 yes or no"),
        ("gc_x,zz,yes,GC-X,a,b,1,2", r"row 3 \(gc_x\): family must be one of"),
        ("gc_mat,gc,yes,GC-X,a,b,1,2", r"row 3: subtask 'gc_mat' is already declared"),
        ("gc_x,gc,yes,GC-X,a,b,1", r"row 3 has 7 cells for 8 columns"),
        ("gc_x,gc,yes,GC-X,a,b,1,two", r"row 3 \(gc_x\): could not convert"),
    ],
)
def test_a_row_that_does_not_fit_the_table_is_named(row: str, message: str) -> None:
    from lmms_tasks.utils.vlm2_bench import parse_table

    text = "# comment\nsubtask,family,img8,label,result_folder,scorer,Chance,Human\ngc_mat,gc,yes,GC-Mat,a,b,25.00,\n" + row + "\n"
    with pytest.raises(ValueError, match=message):
        parse_table(text, "t.csv")
    parsed = parse_table(text.rsplit("\n", 2)[0] + "\n", "t.csv")
    assert parsed["gc_mat"].published == {"Chance": 25.0, "Human": None} and parsed["gc_mat"].img8 is True
