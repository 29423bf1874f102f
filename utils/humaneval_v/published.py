"""HumanEval-V's published numbers, as data, for the results report: v2's headline pass@1 and the v1 rows.

v2 (253 tasks): the README and the abstract give two pass@1 numbers without saying which setting column
they come from (a third-party summary says V2T2C with GPT-4o, greedy; unverified). The per-model table is
only online (https://humaneval-v.github.io/#leaderboard).
v1 (the original 108-task release): pass@1 (greedy) and pass@10 (20 samples) per model. They are not
comparable with v2 (other tasks, prompt, extraction and sampling) and sit beside the `humaneval_v1` runs only.
"""

from __future__ import annotations

CITATION = "HumanEval-V README / abstract, v2 (253 tasks), arXiv 2410.12381; setting column unverified"
PAPER_URL = "https://arxiv.org/abs/2410.12381"
LEADERBOARD_URL = "https://humaneval-v.github.io/#leaderboard"

# (model, pass@1 in %)
HEADLINE_PASS_AT_1: tuple[tuple[str, float], ...] = (
    ("Claude 3.5 Sonnet", 36.8),
    ("Pixtral 124B", 21.3),
)

V1_CITATION = "HumanEval-V v1 (108 tasks) leaderboard of the v1 README and dataset card (upstream commit 00d2cf2); not comparable with v2"
# (model, pass@1, pass@10) in %
V1_PASS_AT_K: tuple[tuple[str, float, float], ...] = (
    ("GPT-4o", 13.0, 36.4),
    ("Claude 3.5 Sonnet (1022)", 25.9, 42.6),
    ("Pixtral-Large-2411", 11.1, 26.9),
)

__all__ = ["CITATION", "HEADLINE_PASS_AT_1", "LEADERBOARD_URL", "PAPER_URL", "V1_CITATION", "V1_PASS_AT_K"]
