"""Thin lmms-eval hooks for HumanEval-V; lmms-eval re-executes this file per `!function` tag, so all logic
and state live in `lmms_tasks.utils.humaneval_v.hooks` (the metric templates in yaml_templates/ name their
aggregations there directly)."""

from __future__ import annotations

from lmms_tasks.utils import compat
from lmms_tasks.utils.humaneval_v.hooks import (  # noqa: F401 - re-exported for `!function utils.<name>`
    agg_description_rate,
    agg_strong_coder,
    agg_strong_coder_unrounded,
    dataset_for,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    process_results,
    score_batch,
)

compat.activate()  # lmms-eval 0.7.3: backport our upstream patches (not exported; see lmms_tasks.utils.compat)

# One `custom_dataset` loader per task YAML.
dataset_v2c = dataset_for("humaneval_v_v2c")
dataset_v2c_pass3 = dataset_for("humaneval_v_v2c_pass3")
dataset_v2c_cot = dataset_for("humaneval_v_v2c_cot")
dataset_v2c_cot_pass3 = dataset_for("humaneval_v_v2c_cot_pass3")
dataset_gt_t2c = dataset_for("humaneval_v_gt_t2c")
dataset_gt_t2c_pass3 = dataset_for("humaneval_v_gt_t2c_pass3")
dataset_v2t = dataset_for("humaneval_v_v2t")
dataset_v2t_pass3 = dataset_for("humaneval_v_v2t_pass3")
dataset_t2c = dataset_for("humaneval_v_t2c")
dataset_t2c_pass3 = dataset_for("humaneval_v_t2c_pass3")
dataset_v1 = dataset_for("humaneval_v1")
dataset_v1_pass10 = dataset_for("humaneval_v1_pass10")
