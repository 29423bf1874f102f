"""Official post-processing, row by row (spec 2.5 table) and quirks H1-H5: expected values written by hand
(`lmms_tasks.utils.testing.cases.humaneval_v`)."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.humaneval_v.extraction import post_process, select_content
from lmms_tasks.utils.testing.cases import humaneval_v as cases

# The reply table is shared with tests/conformance, which replays it through the lmms-eval CLI.
SIG = 'def solution(a):\n    """doc"""\n'
TEST = "assert solution(1) == 1\n"


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_post_process_completion(case: cases.Case) -> None:
    got_completion, program = post_process(case.reply or "", case.signature, cases.TEST)
    assert got_completion == case.expected_completion()
    assert program == case.signature + "    pass\n\n" + case.expected_completion() + "\n\n" + cases.TEST


def test_signature_without_trailing_newline_gets_one() -> None:
    _, program = post_process("no code", SIG.rstrip("\n"), TEST)
    assert program.startswith(SIG + "    pass\n\n")


@pytest.mark.parametrize(
    "prediction,content",
    [
        ("no fences at all", "    pass"),
        ("```python\nA\n```", "\nA\n"),
        ("A\n```", "A\n"),
        ("```\nA\n```", "\nA\n"),
        ("```python\nA\n```python\nB\n```", "\nB\n"),  # last closed piece has no def: fallbacks [B]; [-1] = B
    ],
)
def test_select_content(prediction: str, content: str) -> None:
    assert select_content(prediction) == content
