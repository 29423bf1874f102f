"""HumanEval-V's settings table (`utils/humaneval_v/settings.csv`) is the one declaration of what the YAMLs cannot
hold about a setting: the prompt and whether the diagram is shown (the runtime), the official exp_type and
prediction-file name (score --from-official, export-official) and the report's row. Everything else derives."""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import pytest

from lmms_tasks import tasks_path
from lmms_tasks.utils.humaneval_v import prompts
from lmms_tasks.utils.services.taskconfig import task_config

ROWS = list(csv.DictReader(line for line in resources.files("lmms_tasks.utils.humaneval_v").joinpath("settings.csv").read_text(encoding="utf-8").splitlines() if not line.startswith("#")))


def test_the_runtime_reads_the_table() -> None:
    assert [row["setting"] for row in ROWS] == list(prompts.TABLE) == list(prompts.SETTINGS)
    for row in ROWS:
        assert row["diagram"] in ("yes", "no"), row
        assert prompts.SETTINGS[row["setting"]] == (row["prompt"], row["diagram"] == "yes")
        assert prompts.uses_image(row["setting"]) is (row["diagram"] == "yes")
        assert prompts.template_sha256(row["setting"])  # the key names a byte-exact official template
    text_only = {row["setting"] for row in ROWS if row["diagram"] == "no"}
    assert text_only == {"t2c", "gt_t2c"}  # spec 2.3: the T2C settings send a specification instead
    for setting in text_only:
        with pytest.raises(ValueError, match="needs a problem specification"):
            prompts.build_prompt(setting, "def f(): ...")


def test_every_row_has_its_tasks_and_every_task_its_row() -> None:
    """Each v2 YAML's `dataset_kwargs.subtask`, less `_pass3`, is a row; each row has its pass@1 and pass@3 task."""
    declared = set()
    for path in sorted(Path(tasks_path(), "humaneval_v").glob("humaneval_v_*.yaml")):
        config = task_config(path.stem)
        declared.add(config["dataset_kwargs"]["subtask"].removesuffix("_pass3"))
    assert declared == set(prompts.TABLE)
    assert all(Path(tasks_path(), "humaneval_v", f"humaneval_v_{s}{suffix}.yaml").is_file() for s in prompts.TABLE for suffix in ("", "_pass3"))


def test_the_commands_derive_from_the_table() -> None:
    from lmms_tasks.utils.commands import tasks
    from lmms_tasks.utils.commands.official import humaneval_v as official
    from lmms_tasks.utils.commands.report import humaneval_v as sections

    for row in ROWS:
        assert official.parse_setting(row["setting"]) == row["label"] == official.parse_setting(row["label"].lower())
        assert official.EXPERIMENTS[row["label"]] == (row["setting"], row["result_infix"])
        assert official.setting_from_name(Path(f"my_lmm_{row['result_infix']}_sample_6.json")) == row["label"]
        assert row["label"] in official.experiments_of_prompt(prompts.build_prompt(row["setting"], "def f(): ...", "spec"))
    assert set(official.EXPERIMENTS) == {row["label"] for row in ROWS} | {official.STRONG_CODER}
    assert [(label, stem) for label, stem, _ in sections.HUMANEVAL_SETTINGS] == [(row["report_label"], row["setting"]) for row in ROWS]
    for _, stem, strong in sections.HUMANEVAL_SETTINGS:  # each report row reads a metric its task declares
        for k in (1, 3):
            task, name = sections.humaneval_source(stem, strong, k)
            assert name in {entry["metric"] for entry in task_config(task)["metric_list"]}, (task, name)
    kinds = {entry.name: entry.input for entry in tasks.entries() if entry.kind == "task" and entry.benchmark == "humaneval_v"}
    for row in ROWS:
        assert kinds[f"humaneval_v_{row['setting']}"] == ("images" if row["diagram"] == "yes" else "text only")
    assert kinds["humaneval_v1"] == "images"
