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


# -- issue 43: which piece holds the solution, and when a body is glued to the signature ------------------------
# Rules of the official `evaluate.post_process` (v2, spec 2.5): with several ```python blocks the pieces of
# `reply.split("```python")` are walked in reverse, a piece with a closing-fence count other than 1 is skipped,
# and the first piece whose TEXT (the code and whatever follows its closing fence) contains "def solution" wins;
# else the earliest valid block. A body is glued only when the content starts with "\n  " or "  ".

PIECES = [
    (  # the winning piece names "def solution" after its closing fence: that piece wins, not the earlier def
        "```python\ndef solution(a):\n    return 1\n```\n```python\ndef helper(a):\n    return a\n```\nhelper is what def solution calls.",
        "\ndef helper(a):\n    return a\n",
    ),
    (  # the last piece holds "def solution" but three fences: skipped; the earlier one (no def solution) is the fallback
        "```python\ndef helper():\n    return 0\n```\n```python\ndef solution(a):\n    return a\n```\n```\nextra\n```",
        "\ndef helper():\n    return 0\n",
    ),
    (  # a plain substring test: "def solution_check" counts as "def solution"
        "```python\ndef solution(a):\n    return a\n```\n```python\ndef solution_check():\n    return 1\n```",
        "\ndef solution_check():\n    return 1\n",
    ),
    (  # no piece with def solution: the earliest of three valid blocks
        "```python\nA = 1\n```\n```python\nB = 2\n```\n```python\nC = 3\n```",
        "\nA = 1\n",
    ),
    (  # "def solution" in the preamble, which has no closing fence: skipped like any invalid piece
        "I will write def solution.\n```python\nX = 1\n```\n```python\nY = 2\n```",
        "\nX = 1\n",
    ),
    (  # the preamble (text before the first ```python, one closing fence) is walked last and holds the solution
        "def solution(a):\n    return 9\n```\n```python\nX = 0\n```\n```python\nY = 1\n```",
        "def solution(a):\n    return 9\n",
    ),
]


@pytest.mark.parametrize(("reply", "content"), PIECES, ids=range(len(PIECES)))
def test_the_piece_that_holds_the_solution(reply: str, content: str) -> None:
    assert select_content(reply) == content


GLUE = [
    # (reply, content after the body-only rule, completion)
    ("```python\n    return a\n```", SIG + "\n    return a\n", 'def solution(a):\n    """doc"""\n    return a'),
    ("    return a\n```", SIG + "    return a\n", 'def solution(a):\n    """doc"""\n    return a'),
    # a blank line before the body: "\n\n    " starts with neither "\n  " nor "  ": not glued, a parse error, the raw text
    ("```python\n\n    return a\n```", "\n\n    return a\n", "\n\n    return a\n"),
    ("\n\n    return a\n```", "\n\n    return a\n", "\n\n    return a\n"),
    ("```python\n\n\n        return a\n```", "\n\n\n        return a\n", "\n\n\n        return a\n"),
    # one space, or a tab: not the two spaces the rule asks for
    ("```python\n return a\n```", "\n return a\n", "\n return a\n"),
    ("```python\n\treturn a\n```", "\n\treturn a\n", "\n\treturn a\n"),
    (" return a\n```", " return a\n", " return a\n"),
    # a def after a blank line is a whole function, not a body
    ("```python\n\ndef solution(a):\n    return a\n```", "\n\ndef solution(a):\n    return a\n", "def solution(a):\n    return a"),
]


@pytest.mark.parametrize(("reply", "glued", "completion"), GLUE, ids=range(len(GLUE)))
def test_a_body_is_glued_only_after_newline_and_two_spaces_or_two_spaces(reply: str, glued: str, completion: str) -> None:
    from lmms_tasks.utils.humaneval_v import extraction_v1

    got, program = post_process(reply, SIG, TEST)
    assert got == completion
    assert program == SIG + "    pass\n\n" + completion + "\n\n" + TEST
    # v1 shares the rule (and selects the same text for one block or none)
    assert extraction_v1.post_process(reply, SIG, TEST) == (got, program)
    if glued.startswith(SIG):  # glued: the completion parses as the signature's function
        assert completion.startswith("def solution(a):")
