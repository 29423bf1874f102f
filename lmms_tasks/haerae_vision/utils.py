"""Thin lmms-eval hooks for HAERAE-Vision; the logic is in `lmms_tasks.utils.haerae_vision`.

lmms-eval re-executes this file for every `!function` tag, so it holds no state and only re-exports.
"""

from __future__ import annotations

from typing import Any

from lmms_tasks.utils.haerae_vision import metrics, prompting

process_docs_original = metrics.make_process_docs("original")
process_docs_explicit = metrics.make_process_docs("explicit")


def doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return prompting.build_messages(doc)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return prompting.images(doc)


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return prompting.question_text(doc)


def doc_to_target(doc: dict[str, Any]) -> str:
    answer = doc.get("answer")
    return "" if answer is None else str(answer)


process_results = metrics.process_results
aggregate_score = metrics.aggregate_score
aggregate_judge_failures = metrics.aggregate_judge_failures
aggregate_category_scores = metrics.aggregate_category_scores
aggregate_judge_info = metrics.aggregate_judge_info
aggregate_paired_scores = metrics.aggregate_paired_scores
group_underspec_gap = metrics.group_underspec_gap
group_sum = metrics.group_sum
