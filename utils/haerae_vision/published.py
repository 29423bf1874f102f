"""HAERAE-Vision's published numbers, as data, for the results report, with their caveat.

The only per-model numbers in the official repositories are the earlier repository's `merge_scores.ipynb`
outputs: overall score (0-1) on the full 653-item private set, original-style questions, 3 runs per vLLM
model and a development judge. They are NOT comparable to a run of these tasks (GPT-5-mini judge, public
165-item split) and are shown for orientation only. The leaderboard (https://board.haerae.world/) is online only.
"""

from __future__ import annotations

CITATION = "HAERAE-Vision earlier repository merge_scores.ipynb (guijinSON/haerae-bench-vision), arXiv 2601.06165"
CAVEAT = (
    "not comparable: full 653-item private set, original questions only, 3 runs per vLLM model, "
    "a development judge (probably Gemini 2.5 Flash); these tasks use the public 165 items and GPT-5-mini"
)
PAPER_URL = "https://arxiv.org/abs/2601.06165"

# (model, overall score on the original questions, 0-1)
NOTEBOOK_OVERALL: tuple[tuple[str, float], ...] = (
    ("gemini-2.5-pro", 0.4854),
    ("gpt-5", 0.4801),
    ("gpt-5-mini", 0.4521),
    ("perplexity sonar-pro", 0.4426),
    ("gemini-2.5-flash", 0.4103),
    ("grok-4", 0.3606),
    ("gemini-2.5-flash-lite", 0.3029),
    ("Skywork-R1V3-38B", 0.2776),
    ("gemma-3-27b-it", 0.2252),
    ("qwen2.5-vl-72b (OpenRouter)", 0.2058),
    ("InternVL3-38B", 0.1776),
    ("InternVL3-8B", 0.1370),
    ("Qwen2.5-VL-7B-Instruct", 0.1315),
    ("Qwen2.5-VL-3B-Instruct", 0.0820),
    ("InternVL3-1B", 0.0445),
)

__all__ = ["CAVEAT", "CITATION", "NOTEBOOK_OVERALL", "PAPER_URL"]
