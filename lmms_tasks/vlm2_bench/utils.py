"""Thin lmms-eval hooks for VLM2-Bench; lmms-eval re-executes this file per `!function` tag, so all logic
and state live in `lmms_tasks.utils.vlm2_bench.hooks` (the per-kind metric templates in yaml_templates/
name their aggregations there directly)."""

from __future__ import annotations

from lmms_tasks.utils import compat
from lmms_tasks.utils.vlm2_bench.hooks import (  # noqa: F401 - re-exported for `!function utils.<name>`
    dataset_for,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    group_gap_to_human,
    group_img8_score,
    group_mean,
    group_overall,
    process_results,
    score_batch,
)

compat.activate()  # lmms-eval 0.7.3: backport our upstream patches (not exported; see lmms_tasks.utils.compat)

# One `custom_dataset` loader per subtask YAML.
dataset_gc_mat = dataset_for("vlm2_bench_gc_mat")
dataset_gc_trk = dataset_for("vlm2_bench_gc_trk")
dataset_oc_cpr = dataset_for("vlm2_bench_oc_cpr")
dataset_oc_cnt = dataset_for("vlm2_bench_oc_cnt")
dataset_oc_grp = dataset_for("vlm2_bench_oc_grp")
dataset_pc_cpr = dataset_for("vlm2_bench_pc_cpr")
dataset_pc_cnt = dataset_for("vlm2_bench_pc_cnt")
dataset_pc_grp = dataset_for("vlm2_bench_pc_grp")
dataset_pc_vid = dataset_for("vlm2_bench_pc_vid")
