"""VLM2-Bench's published numbers: paper Table 1 (the same table as the official README's
`figs/vlm2-bench_eval_results.png`), as data, for the results report.

Scores are 0-100, one per subtask in Table 1's column order, then "Avg" (the unweighted 9-subtask mean)
and "Δhuman" (Avg - the human Avg). The chance row has no PC-VID score and its Avg covers the 8 image
subtasks (Table 1 prints "33.72 (8 tasks)"), so it is kept as `avg8`, not `avg`. The human Avg is
`HUMAN_OVERALL`, the constant the `vlm2_gap_to_human` metric subtracts.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmms_tasks.utils.vlm2_bench import HUMAN_OVERALL, SUBTASKS

CITATION = "VLM2-Bench paper Table 1 / README figs/vlm2-bench_eval_results.png (arXiv 2502.12084)"
PAPER_URL = "https://arxiv.org/abs/2502.12084"

# Table 1's column headers, in its order (the same order as SUBTASKS).
COLUMN_LABELS: dict[str, str] = {
    "gc_mat": "GC-Mat",
    "gc_trk": "GC-Trk",
    "oc_cpr": "OC-Cpr",
    "oc_cnt": "OC-Cnt",
    "oc_grp": "OC-Grp",
    "pc_cpr": "PC-Cpr",
    "pc_cnt": "PC-Cnt",
    "pc_grp": "PC-Grp",
    "pc_vid": "PC-VID",
}
assert tuple(COLUMN_LABELS) == tuple(SUBTASKS)


@dataclass(frozen=True)
class PublishedRow:
    """One row of Table 1. `kind` is "reference" (chance, human) or "model"."""

    name: str
    scores: dict[str, float | None]
    avg: float | None
    delta_human: float
    kind: str = "model"
    avg8: float | None = None  # only the chance row: its Avg is over the 8 image subtasks


def _row(
    name: str, values: tuple[float | None, ...], avg: float | None, delta: float, kind: str = "model", avg8: float | None = None
) -> PublishedRow:
    if len(values) != len(COLUMN_LABELS):
        raise ValueError(f"{name}: {len(values)} scores for {len(COLUMN_LABELS)} subtasks")
    return PublishedRow(name, dict(zip(COLUMN_LABELS, values)), avg, delta, kind, avg8)


TABLE1: tuple[PublishedRow, ...] = (
    _row("Chance", (25.00, 25.00, 50.00, 34.88, 25.00, 50.00, 34.87, 25.00, None), None, -61.44, "reference", avg8=33.72),
    _row("Human", (95.06, 98.11, 96.02, 94.23, 91.92, 97.08, 92.87, 91.17, 100.00), HUMAN_OVERALL, 0.0, "reference"),
    _row("LLaVA-OneVision-7B", (16.60, 13.70, 47.22, 56.17, 27.50, 62.00, 46.67, 37.00, 47.25), 39.35, -55.81),
    _row("LLaVA-Video-7B", (18.53, 12.79, 54.72, 62.47, 28.50, 62.00, 66.91, 25.00, 59.00), 43.32, -51.84),
    _row("LongVA-7B", (14.29, 19.18, 26.67, 42.53, 18.50, 21.50, 38.90, 18.00, 3.75), 22.59, -72.57),
    _row("mPLUG-Owl3-7B", (17.37, 18.26, 49.17, 62.97, 31.00, 63.50, 58.86, 26.00, 13.50), 37.85, -57.31),
    _row("Qwen2-VL-7B", (27.80, 19.18, 68.06, 45.99, 35.00, 61.50, 58.59, 49.00, 16.25), 42.37, -52.79),
    _row("Qwen2.5-VL-7B", (35.91, 43.38, 71.39, 41.72, 47.50, 80.00, 57.98, 69.00, 46.50), 54.82, -40.34),
    _row("InternVL2.5-8B", (21.24, 26.03, 53.33, 55.23, 46.50, 51.50, 60.00, 52.00, 5.25), 41.23, -53.93),
    _row("InternVL2.5-26B", (30.50, 30.59, 43.33, 51.48, 52.50, 59.50, 59.70, 61.00, 21.75), 45.59, -49.57),
    _row("GPT-4o", (37.45, 39.27, 74.17, 80.62, 57.50, 50.00, 90.50, 47.00, 66.75), 60.36, -34.80),
)


def row(name: str) -> PublishedRow:
    for entry in TABLE1:
        if entry.name == name:
            return entry
    raise KeyError(f"{name!r} is not a row of VLM2-Bench Table 1 (rows: {[r.name for r in TABLE1]})")


__all__ = ["CITATION", "COLUMN_LABELS", "PAPER_URL", "PublishedRow", "TABLE1", "row"]
