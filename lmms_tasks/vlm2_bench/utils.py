"""Thin lmms-eval hooks for VLM2-Bench; lmms-eval re-executes this file per `!function` tag, so all
logic and state live in `lmms_tasks.utils.vlm2_bench`."""

from __future__ import annotations

from lmms_tasks.utils.vlm2_bench.hooks import (  # noqa: F401 - re-exported for `!function utils.<name>`
    cnt_acc,
    cnt_n_out_of_range,
    cnt_n_unparsed,
    cnt_n_valid,
    cnt_norm_score,
    cnt_strict_score,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    gc_exact_neg_acc,
    gc_exact_pair_acc,
    gc_exact_pos_acc,
    group_exact_img8_score,
    group_exact_score,
    group_gap_to_human,
    group_img8_score,
    grp_acc,
    grp_n,
    process_docs_for,
    process_results,
    tf_n_pairs,
    tf_neg_acc,
    tf_pair_acc,
    tf_pos_acc,
    vid_ab_pct,
    vid_aba_pct,
    vid_judge_failed,
    vid_judge_info,
    vid_judge_unparsed,
    vid_n_ab,
    vid_n_aba,
    vlm2_exact_img8_score,
    vlm2_exact_score,
    vlm2_gap_to_human,
    vlm2_img8_score,
    vlm2_score,
)

# One `process_docs` per subtask YAML: each loads that subtask's documents.
process_docs_gc_mat = process_docs_for("gc_mat")
process_docs_gc_trk = process_docs_for("gc_trk")
process_docs_oc_cpr = process_docs_for("oc_cpr")
process_docs_oc_cnt = process_docs_for("oc_cnt")
process_docs_oc_grp = process_docs_for("oc_grp")
process_docs_pc_cpr = process_docs_for("pc_cpr")
process_docs_pc_cnt = process_docs_for("pc_cnt")
process_docs_pc_grp = process_docs_for("pc_grp")
process_docs_pc_vid = process_docs_for("pc_vid")
