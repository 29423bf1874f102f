"""Thin lmms-eval hooks for HumanEval-V; lmms-eval re-executes this file per `!function` tag, so all logic
and state live in `lmms_tasks.utils.humaneval_v.hooks` (each task's metric_list names its
aggregations there directly)."""

from __future__ import annotations

from lmms_tasks.utils import compat
from lmms_tasks.utils.humaneval_v.hooks import (  # noqa: F401 - re-exported for `!function utils.<name>`
    agg_description_rate,
    agg_strong_coder,
    agg_strong_coder_unrounded,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    load_subtask,
    process_results,
    score_batch,
)

compat.activate()  # lmms-eval 0.7.3: backport our upstream patches (not exported; see lmms_tasks.utils.compat)
