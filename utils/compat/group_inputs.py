"""Group-level metrics built from the subtasks' values, through lmms-eval's group aggregation.

lmms-eval (0.7.3, `evaluator_utils.consolidate_group_results`) gives a group's `aggregate_metric_list`
entry only the subtasks' values of a metric of the same name (matched by substring), and stores the result
under that name: a group metric exists only if every subtask reports one. When the per-subtask number would
mislead (VLM2-Bench's gap to the 9-task human overall, HAERAE-Vision's per-item scores), a subtask reports
a `GroupInput`: a string that says the value is reported by the group (what the subtask's table row and
results.json show) and that carries the payload the group's aggregation function reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class GroupInput(str):
    """A subtask's input to a group metric: shown as `text`, carries `payload` (any picklable value)."""

    payload: Any

    def __new__(cls, text: str, payload: Any) -> GroupInput:  # noqa: PYI034 - str subclass
        value = super().__new__(cls, text)
        value.payload = payload
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (GroupInput, (str(self), self.payload))


def payloads(metrics: Sequence[Any], metric: str) -> list[Any]:
    """The payloads of the subtasks' values; a value that is not a GroupInput is a configuration error."""
    found = []
    for value in metrics:
        if not isinstance(value, GroupInput):
            raise TypeError(f"group metric {metric!r}: expected the subtasks' group inputs, got {type(value).__name__} {value!r}")
        found.append(value.payload)
    return found
