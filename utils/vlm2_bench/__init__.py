"""VLM2-Bench (ACL 2025): data loading, prompts, video frames, answer parsers and the official scorers.

The task folder `lmms_tasks/vlm2_bench/` only holds YAML and thin hooks; everything here is importable
as `lmms_tasks.utils.vlm2_bench.<module>` and is what the tests exercise.
"""

from __future__ import annotations

# task name -> (family, kind). family picks the image folder and pairing rule; kind picks the scorer.
SUBTASKS: dict[str, tuple[str, str]] = {
    "gc_mat": ("gc", "tf_gc"),
    "gc_trk": ("gc", "tf_gc"),
    "oc_cpr": ("oc", "tf_cpr"),
    "oc_cnt": ("oc", "cnt"),
    "oc_grp": ("oc", "grp"),
    "pc_cpr": ("pc", "tf_cpr"),
    "pc_cnt": ("pc", "cnt"),
    "pc_grp": ("pc", "grp"),
    "pc_vid": ("pc", "vid"),
}

TASK_PREFIX = "vlm2_bench_"

# Paper Table 1, human row: the overall (9-subtask) mean the "gap to human" is measured against.
HUMAN_OVERALL = 95.16


def task_name(subtask: str) -> str:
    return f"{TASK_PREFIX}{subtask}"
