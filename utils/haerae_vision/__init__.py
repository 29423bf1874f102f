"""HAERAE-Vision (arXiv 2601.06165): data loading, the official inference messages, the checklist judge
message built byte for byte as the official `score.py` builds it, the official score parser, and the
aggregation (None -> 0, per-category means, the explicit-minus-original gap).

The task folder `lmms_tasks/haerae_vision/` only holds YAML and thin hooks; everything here is importable
as `lmms_tasks.utils.haerae_vision.<module>` and is what the tests exercise.
"""

from __future__ import annotations

# The release's question variants (its question_<variant> columns and the official outputs' question_type). A
# task's variant is what its YAML declares (`dataset_kwargs: {variant: original}`); any question_<variant> column
# of the data can be one.
VARIANTS = ("original", "explicit")
# What the group's underspec_gap pairs: the second variant minus the first, by question_idx. Only these two are
# needed (a run with more variants, or a task added for another one, leaves the gap as it is).
GAP = ("original", "explicit")
TASK_PREFIX = "haerae_vision_"
GROUP = "haerae_vision"


def task_name(variant: str) -> str:
    """`haerae_vision_<variant>`: `haerae_vision_original` / `haerae_vision_explicit`."""
    if not isinstance(variant, str) or not variant.isidentifier():
        raise ValueError(f"HAERAE-Vision question variant {variant!r} is not a name (a question_<variant> column)")
    return f"{TASK_PREFIX}{variant}"
