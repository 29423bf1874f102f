"""HumanEval-V's published headline numbers (v2, 253 tasks), as data, for the results report.

The README and the abstract give two pass@1 numbers without saying which setting column they come from
(a third-party summary says V2T2C with GPT-4o, greedy; unverified). The per-model table is only online
(https://humaneval-v.github.io/#leaderboard). The v1 numbers (108 tasks) are not comparable and are left out.
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

__all__ = ["CITATION", "HEADLINE_PASS_AT_1", "LEADERBOARD_URL", "PAPER_URL"]
