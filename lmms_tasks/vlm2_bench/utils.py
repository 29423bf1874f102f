"""Thin lmms-eval hooks for VLM2-Bench; lmms-eval re-executes this file per `!function` tag, so all logic
and state live in `lmms_tasks.utils.vlm2_bench.hooks` (each task's
metric_list names its aggregations there directly)."""

from __future__ import annotations

from lmms_tasks.utils import compat
from lmms_tasks.utils.vlm2_bench.hooks import (  # noqa: F401 - re-exported for `!function utils.<name>`
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    group_gap_to_human,
    group_img8_score,
    group_mean,
    group_overall,
    load_subtask,
    process_results,
    score_batch,
)

compat.activate()  # lmms-eval 0.7.3: backport our upstream patches (not exported; see lmms_tasks.utils.compat)
