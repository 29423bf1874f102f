"""Thin lmms-eval hooks for HAERAE-Vision; lmms-eval re-executes this file per `!function` tag, so all logic
and state live in `lmms_tasks.utils.haerae_vision.hooks` (each task's metric_list names its
aggregations there directly)."""

from __future__ import annotations

from lmms_tasks.utils import compat
from lmms_tasks.utils.haerae_vision.hooks import (  # noqa: F401 - re-exported for `!function utils.<name>`
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    group_explicit_score,
    group_original_score,
    group_sum,
    group_underspec_gap,
    load_subtask,
    process_results,
    score_batch,
)

compat.activate()  # lmms-eval 0.7.3: backport our upstream patches (not exported; see lmms_tasks.utils.compat)
