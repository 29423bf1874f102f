"""Official post-processing, row by row (spec 2.5 table) and quirks H1-H5: expected values written by hand."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.humaneval_v.extraction import post_process, select_content

SIG = 'def solution(a):\n    """doc"""\n'
TEST = "assert solution(1) == 1\n"
STUB_DEF = 'def solution(a):\n    """doc"""\n    pass'

CASES = [
    # spec table: unfenced code is never used (H1) -> the signature with a `pass` body
    ("unfenced", "def solution(a):\n    return a", STUB_DEF),
    # spec table: one plain fence = the body continued, glued to the signature
    ("body_then_fence", "    return a\n```", 'def solution(a):\n    """doc"""\n    return a'),
    # spec table: ```py -> the `py` line is an expression statement the AST filter drops
    ("py_tag", "```py\ndef solution(a):\n    return a + 1\n```", "def solution(a):\n    return a + 1"),
    # spec table: nested import hoisted after its function (H5)
    (
        "nested_import",
        "```python\ndef solution(a):\n    import math\n    return math.floor(a)\n```",
        "def solution(a):\n    import math\n    return math.floor(a)\nimport math",
    ),
    # spec table: a syntax error keeps the raw text
    ("syntax_error", "```python\ndef solution(a)\n    return a\n```", "\ndef solution(a)\n    return a\n"),
    # H3: a single unclosed ```python block still works
    ("single_unclosed", "x\n```python\ndef solution(a):\n    return 2\n", "def solution(a):\n    return 2"),
    # H2: several blocks, the last one with `def solution` wins
    (
        "last_def_wins",
        "```python\ndef solution(a):\n    return 1\n```\ntext\n```python\ndef solution(a):\n    return 2\n```",
        "def solution(a):\n    return 2",
    ),
    (
        "earlier_def_beats_later_usage",
        "```python\ndef solution(a):\n    return 1\n```\n```python\nprint(solution(3))\n```",
        "def solution(a):\n    return 1",
    ),
    # H2: no block has `def solution` -> the EARLIEST closed block
    (
        "earliest_without_def",
        "```python\nX = 1\ndef helper():\n    return 1\n```\n```python\ndef other():\n    return 2\n```",
        "def helper():\n    return 1",
    ),
    # H3: with several blocks, unclosed pieces are skipped; the preamble before the first fence takes part
    ("preamble_counts", "def solution(a):\n    return 9\n```\n```python\nfoo\n```python\nbar", "def solution(a):\n    return 9"),
    ("no_valid_block", "```python\nfoo\n```python\nbar", STUB_DEF),
    # "``` python" (with a space): the first such block
    (
        "spaced_tag",
        "a\n``` python\ndef solution(a):\n    return 7\n```\n``` python\ndef solution(a):\n    return 0\n```",
        "def solution(a):\n    return 7",
    ),
    # plain fences, 2 or more: between the first two
    ("plain_fences", "```\ndef solution(a):\n    return 8\n```\n```\nother\n```", "def solution(a):\n    return 8"),
    # body-only completion starting with a newline and indentation
    ("body_only_block", "```python\n    return a * 2\n```", 'def solution(a):\n    """doc"""\n    return a * 2'),
    # H4: top-level constants dropped
    ("constant_dropped", "```python\nK = 3\ndef solution(a):\n    return a * K\n```", "def solution(a):\n    return a * K"),
    # defs nested in a top-level `if` are kept; a class is unparsed whole; imports inside it are hoisted
    (
        "if_and_class",
        "```python\nif True:\n    def solution(a):\n        return a\nclass C:\n    def m(self):\n        import os\n        return 1\n```",
        "def solution(a):\n    return a\nclass C:\n\n    def m(self):\n        import os\n        return 1\nimport os",
    ),
    # async def is not a FunctionDef: dropped, but a def inside it has no def/class parent and is kept
    ("async_def", "```python\nasync def solution(a):\n    def inner():\n        return 1\n    return a\n```", "def inner():\n    return 1"),
    # relative imports lose their dots (official uses node.module only)
    (
        "relative_import",
        "```python\nfrom . import x\ndef solution(a):\n    return a\n```",
        "from  import x\ndef solution(a):\n    return a",
    ),
    # comments, prints and `if __name__` blocks dropped; docstrings kept
    (
        "main_block_dropped",
        '```python\n# comment\ndef solution(a):\n    """keep me"""\n    return a  # inline\nprint(solution(1))\nif __name__ == "__main__":\n    print(2)\n```',
        'def solution(a):\n    """keep me"""\n    return a',
    ),
    (
        "aliases",
        "```python\nimport numpy as np\nfrom os import path as p\ndef solution(a):\n    return a\n```",
        "import numpy as np\nfrom os import path as p\ndef solution(a):\n    return a",
    ),
]


@pytest.mark.parametrize("name,prediction,completion", CASES, ids=[c[0] for c in CASES])
def test_post_process_completion(name: str, prediction: str, completion: str) -> None:
    got_completion, program = post_process(prediction, SIG, TEST)
    assert got_completion == completion
    assert program == SIG + "    pass\n\n" + completion + "\n\n" + TEST


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
