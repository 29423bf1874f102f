"""Thin lmms-eval hooks for HumanEval-V; lmms-eval re-executes this file per `!function` tag, so all
logic and state live in `lmms_tasks.utils.humaneval_v`."""

from __future__ import annotations

from lmms_tasks.utils.humaneval_v.hooks import (  # noqa: F401 - re-exported for `!function utils.<name>`
    agg_by_capability,
    agg_by_task_type,
    agg_description_rate,
    agg_parse_success_rate,
    agg_parse_success_rate_unrounded,
    agg_pass_at_1,
    agg_pass_at_1_unrounded,
    agg_pass_at_3,
    agg_pass_at_3_unrounded,
    agg_strong_coder,
    agg_strong_coder_unrounded,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    make_process_docs,
    process_results,
)
from lmms_tasks.utils.compat.responses import KeepRaw  # noqa: F401 - the filter that keeps responses unstripped

process_docs_humaneval_v_v2c = make_process_docs("humaneval_v_v2c")
process_docs_humaneval_v_v2c_pass3 = make_process_docs("humaneval_v_v2c_pass3")
process_docs_humaneval_v_v2c_cot = make_process_docs("humaneval_v_v2c_cot")
process_docs_humaneval_v_v2c_cot_pass3 = make_process_docs("humaneval_v_v2c_cot_pass3")
process_docs_humaneval_v_gt_t2c = make_process_docs("humaneval_v_gt_t2c")
process_docs_humaneval_v_gt_t2c_pass3 = make_process_docs("humaneval_v_gt_t2c_pass3")
process_docs_humaneval_v_v2t = make_process_docs("humaneval_v_v2t")
process_docs_humaneval_v_v2t_pass3 = make_process_docs("humaneval_v_v2t_pass3")
process_docs_humaneval_v_t2c = make_process_docs("humaneval_v_t2c")
process_docs_humaneval_v_t2c_pass3 = make_process_docs("humaneval_v_t2c_pass3")
