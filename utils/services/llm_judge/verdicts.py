"""Judge verdicts as per-item fields, and the check that a task's verdicts are mostly readable.

A judged task is judged once, in its batch step; the verdict of each item is written into the item
(`verdict_fields`), so every aggregation is a plain function of the items (`Verdict.of`). After judging,
`check_unparsed` looks at the share of replies without a usable verdict: counting them as 0 is the official
rule and the numbers stay as they are, but a run where (nearly) every reply is unparsed is almost always a
misconfigured judge (a wrong model or endpoint answering in free text), so the run says so and ends with
exit status 3.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lmms_tasks import HELP
from lmms_tasks.utils.services import status as run_status

PARSED, FAILED = "judge_parsed", "judge_failed"  # the item fields: the parsed verdict (None: unparsed), a failed request
MAX_SHARE_ENV = "LMMS_TASKS_UNPARSED_MAX_SHARE"
DEFAULT_MAX_SHARE = 0.5
SAMPLE_CHARS = 120  # how much of each sample reply the warning quotes


@dataclass(frozen=True)
class Verdict:
    parsed: Any  # the parser's value; None for a reply without a usable verdict (or a failed request)
    failed: bool  # the request still failed after its retries (no reply)

    @property
    def unparsed(self) -> bool:
        return not self.failed and self.parsed is None

    @classmethod
    def of(cls, item: Mapping[str, Any], what: str) -> Verdict:
        """The verdict the batch step wrote into `item`; `what` names the item in the error."""
        if FAILED not in item or PARSED not in item:
            raise ValueError(f"{what}: no judge verdict in the item ({PARSED}/{FAILED}; the task's process_results_batch writes them)")
        return cls(item[PARSED], bool(item[FAILED]))


def verdict_fields(outcome: Any) -> dict[str, Any]:
    """The fields of one judge outcome (`services.llm_judge.judge.JudgeOutcome`) an item carries."""
    failed = outcome.error is not None
    return {PARSED: None if failed else outcome.parsed, FAILED: failed}


def max_share() -> float:
    """LMMS_TASKS_UNPARSED_MAX_SHARE (a share in [0, 1], default 0.5); a bad value raises naming the variable."""
    raw = os.environ.get(MAX_SHARE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_SHARE
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{MAX_SHARE_ENV}={raw!r}: expected a share between 0 and 1 (default {DEFAULT_MAX_SHARE})")
    return value


def check_unparsed(task: str, outcomes: Mapping[str, Any]) -> bool:
    """After judging `task`: when more than the allowed share of the replies (and always when every reply)
    has no usable verdict, warn (task, count, two sample replies, cut short) and record the run as
    incomplete (exit status 3). The numbers are left as the official rule computes them. True if it warned."""
    replied = [o for o in outcomes.values() if o.error is None]
    unparsed = [o for o in replied if o.parsed is None]
    if not replied or not unparsed:
        return False
    share = len(unparsed) / len(replied)
    if share <= max_share() and len(unparsed) < len(replied):
        return False
    samples = "; ".join(repr(_cut(o.content or "")) for o in unparsed[:2])
    run_status.record_incomplete(
        task,
        f"{len(unparsed)} of {len(replied)} judge replies have no usable verdict (counted 0, as officially; the numbers "
        f"are unchanged); is the judge model/endpoint the one the benchmark expects? Sample replies: {samples}. "
        f"Threshold: {MAX_SHARE_ENV} (share, default {DEFAULT_MAX_SHARE}); see {HELP['judge_docs']}.",
    )
    return True


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SAMPLE_CHARS else text[: SAMPLE_CHARS - 3] + "..."


__all__ = ["FAILED", "MAX_SHARE_ENV", "PARSED", "Verdict", "check_unparsed", "max_share", "verdict_fields"]
