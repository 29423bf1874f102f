"""VLM2-Bench's published numbers: paper Table 1 (the same table as the official README's
`figs/vlm2-bench_eval_results.png`), as data, for the results report.

Each subtask's scores are in its row of the subtask table (`subtasks.csv`, one column per Table 1 row,
keyed by the subtask's name); this module adds what belongs to a Table 1 row as a whole: "Avg" (the
unweighted 9-subtask mean) and "Δhuman" (Avg - the human Avg), all 0-100. The chance row has no PC-VID score
and its Avg covers the 8 image subtasks (Table 1 prints "33.72 (8 tasks)"), so it is kept as `avg8`, not
`avg`. The human Avg is `HUMAN_OVERALL`, the constant the `vlm2_gap_to_human` metric subtracts.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmms_tasks.utils.vlm2_bench import HUMAN_OVERALL, PUBLISHED_COLUMNS, TABLE

CITATION = "VLM2-Bench paper Table 1 / README figs/vlm2-bench_eval_results.png (arXiv 2502.12084)"
PAPER_URL = "https://arxiv.org/abs/2502.12084"

# Table 1's column headers, in the table's order.
COLUMN_LABELS: dict[str, str] = {name: row.label for name, row in TABLE.items()}


@dataclass(frozen=True)
class PublishedRow:
    """One row of Table 1. `kind` is "reference" (chance, human) or "model"."""

    name: str
    scores: dict[str, float | None]
    avg: float | None
    delta_human: float
    kind: str = "model"
    avg8: float | None = None  # only the chance row: its Avg is over the 8 image subtasks


def _row(name: str, avg: float | None, delta: float, kind: str = "model", avg8: float | None = None) -> PublishedRow:
    """Table 1 row `name`: each subtask's score from its row of the subtask table."""
    return PublishedRow(name, {subtask: row.published.get(name) for subtask, row in TABLE.items()}, avg, delta, kind, avg8)


TABLE1: tuple[PublishedRow, ...] = (
    _row("Chance", None, -61.44, "reference", avg8=33.72),
    _row("Human", HUMAN_OVERALL, 0.0, "reference"),
    _row("LLaVA-OneVision-7B", 39.35, -55.81),
    _row("LLaVA-Video-7B", 43.32, -51.84),
    _row("LongVA-7B", 22.59, -72.57),
    _row("mPLUG-Owl3-7B", 37.85, -57.31),
    _row("Qwen2-VL-7B", 42.37, -52.79),
    _row("Qwen2.5-VL-7B", 54.82, -40.34),
    _row("InternVL2.5-8B", 41.23, -53.93),
    _row("InternVL2.5-26B", 45.59, -49.57),
    _row("GPT-4o", 60.36, -34.80),
)


if tuple(r.name for r in TABLE1) != PUBLISHED_COLUMNS:
    raise ValueError(f"subtasks.csv's published columns {PUBLISHED_COLUMNS} are not the rows of Table 1 {tuple(r.name for r in TABLE1)}")


def row(name: str) -> PublishedRow:
    for entry in TABLE1:
        if entry.name == name:
            return entry
    raise KeyError(f"{name!r} is not a row of VLM2-Bench Table 1 (rows: {[r.name for r in TABLE1]})")


__all__ = ["CITATION", "COLUMN_LABELS", "PAPER_URL", "PublishedRow", "TABLE1", "row"]
