"""HAERAE-Vision (arXiv 2601.06165): data loading, the official inference messages, the checklist judge
message built byte for byte as the official `score.py` builds it, the official score parser, and the
aggregation (None -> 0, per-category means, the explicit-minus-original gap).

The task folder `lmms_tasks/haerae_vision/` only holds YAML and thin hooks; everything here is importable
as `lmms_tasks.utils.haerae_vision.<module>` and is what the tests exercise.
"""

from __future__ import annotations

VARIANTS = ("original", "explicit")
TASK_PREFIX = "haerae_vision_"
GROUP = "haerae_vision"


def task_name(variant: str) -> str:
    """`haerae_vision_original` / `haerae_vision_explicit`."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown HAERAE-Vision question variant {variant!r}; expected one of {VARIANTS}")
    return f"{TASK_PREFIX}{variant}"
