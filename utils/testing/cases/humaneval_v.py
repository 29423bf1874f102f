"""HumanEval-V reply cases (spec 2.5 table, quirks H1-H5) and their official verdicts.

The official pipeline hands the raw model output to `post_process` (no strip, no reasoning removal): the
task pins `reasoning_tags: none` and `strip_responses: false`. Each case is one task
of its own (qid = the case name) with signature `def solution(a):` + a docstring naming the case and the
test `assert solution(1) == 1`; its verdict is the completion `post_process` extracts (`<SIG>` stands for
the signature text) and whether the program passes under the official harness (pylint gate, then
`exec` with a 2 s timer).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_tasks.utils.testing.fixtures import FixtureSet
from lmms_tasks.utils.testing.fixtures import humaneval_v as dataset

SIG_TOKEN = "<SIG>"
TEST = "assert solution(1) == 1\n"


@dataclass(frozen=True)
class Case:
    name: str
    reply: str | None
    completion: str  # with SIG_TOKEN for the signature text
    passed: bool

    @property
    def signature(self) -> str:
        return f'def solution(a):\n    """case {self.name}"""\n'

    @property
    def marker(self) -> str:
        """Unique text of this case's prompt (its docstring)."""
        return f'"""case {self.name}"""'

    def expected_completion(self) -> str:
        return self.completion.replace(SIG_TOKEN, self.signature)

    def expected_program(self) -> str:
        return self.signature + "    pass\n\n" + self.expected_completion() + "\n\n" + TEST


STUB = SIG_TOKEN + "    pass"

CASES = [
    # spec table: unfenced code is never used (H1) -> the signature with a `pass` body
    Case("unfenced", "def solution(a):\n    return a", STUB, False),
    # spec table: one plain fence = the body continued, glued to the signature (indentation decides)
    Case("body_then_fence", "    return a\n```", SIG_TOKEN + "    return a", True),
    Case("body_then_fence_then_text", "    return a\n```\nThat is all.", SIG_TOKEN + "    return a", True),
    Case("body_after_newline", "\n    return a\n```", SIG_TOKEN + "    return a", True),
    # two-space body: glued, but the indentation clashes with the docstring's: raw text, gated by pylint
    Case("body_two_spaces", "  return a\n```", SIG_TOKEN + "  return a\n", False),
    # spec table: ```py -> the `py` line is an expression statement the AST filter drops
    Case("py_tag", "```py\ndef solution(a):\n    return a + 1\n```", "def solution(a):\n    return a + 1", False),
    # spec table: nested import hoisted after its function (H5)
    Case(
        "nested_import",
        "```python\ndef solution(a):\n    import math\n    return math.floor(a)\n```",
        "def solution(a):\n    import math\n    return math.floor(a)\nimport math",
        True,
    ),
    # spec table: a syntax error keeps the raw text (then fails the pylint gate)
    Case("syntax_error", "```python\ndef solution(a)\n    return a\n```", "\ndef solution(a)\n    return a\n", False),
    # H3: a single unclosed ```python block still works
    Case("single_unclosed", "x\n```python\ndef solution(a):\n    return 2\n", "def solution(a):\n    return 2", False),
    # H2: several blocks, the last one with `def solution` wins
    Case(
        "last_def_wins",
        "```python\ndef solution(a):\n    return 1\n```\ntext\n```python\ndef solution(a):\n    return 2\n```",
        "def solution(a):\n    return 2",
        False,
    ),
    Case(
        "earlier_def_beats_later_usage",
        "```python\ndef solution(a):\n    return 1\n```\n```python\nprint(solution(3))\n```",
        "def solution(a):\n    return 1",
        True,
    ),
    # H2: no block has `def solution` -> the EARLIEST closed block
    Case(
        "earliest_without_def",
        "```python\nX = 1\ndef helper():\n    return 1\n```\n```python\ndef other():\n    return 2\n```",
        "def helper():\n    return 1",
        False,
    ),
    # H3: with several blocks, unclosed pieces are skipped; the preamble before the first fence takes part
    Case("preamble_counts", "def solution(a):\n    return 9\n```\n```python\nfoo\n```python\nbar", "def solution(a):\n    return 9", False),
    Case("no_valid_block", "```python\nfoo\n```python\nbar", STUB, False),
    # "``` python" (with a space): the first such block
    Case(
        "spaced_tag",
        "a\n``` python\ndef solution(a):\n    return 7\n```\n``` python\ndef solution(a):\n    return 0\n```",
        "def solution(a):\n    return 7",
        False,
    ),
    # plain fences, 2 or more: between the first two
    Case("plain_fences", "```\ndef solution(a):\n    return 8\n```\n```\nother\n```", "def solution(a):\n    return 8", False),
    # body-only completion inside a block, starting with a newline and indentation
    Case("body_only_block", "```python\n    return a * 2\n```", SIG_TOKEN + "    return a * 2", False),
    # H4: top-level constants dropped (then pylint: undefined-variable)
    Case("constant_dropped", "```python\nK = 3\ndef solution(a):\n    return a * K\n```", "def solution(a):\n    return a * K", False),
    # defs nested in a top-level `if` are kept; a class is unparsed whole; imports inside it are hoisted
    Case(
        "if_and_class",
        "```python\nif True:\n    def solution(a):\n        return a\nclass C:\n    def m(self):\n        import os\n        return 1\n```",
        "def solution(a):\n    return a\nclass C:\n\n    def m(self):\n        import os\n        return 1\nimport os",
        True,
    ),
    # async def is not a FunctionDef: dropped, but a def inside it has no def/class parent and is kept
    Case("async_def", "```python\nasync def solution(a):\n    def inner():\n        return 1\n    return a\n```", "def inner():\n    return 1", False),
    # relative imports lose their dots (official uses node.module only)
    Case(
        "relative_import",
        "```python\nfrom . import x\ndef solution(a):\n    return a\n```",
        "from  import x\ndef solution(a):\n    return a",
        False,
    ),
    # comments, prints and `if __name__` blocks dropped; docstrings kept
    Case(
        "main_block_dropped",
        '```python\n# comment\ndef solution(a):\n    """keep me"""\n    return a  # inline\nprint(solution(1))\nif __name__ == "__main__":\n    print(2)\n```',
        'def solution(a):\n    """keep me"""\n    return a',
        True,
    ),
    Case(
        "aliases",
        "```python\nimport numpy as np\nfrom os import path as p\ndef solution(a):\n    return a\n```",
        "import numpy as np\nfrom os import path as p\ndef solution(a):\n    return a",
        True,
    ),
    # whitespace around the reply is the model's: kept, and harmless here
    Case("surrounding_whitespace", "\n\n```python\ndef solution(a):\n    return a\n```\n\n", "def solution(a):\n    return a", True),
    Case("spaces_after_fence", "```python\ndef solution(a):\n    return a\n```   \n", "def solution(a):\n    return a", True),
    Case("crlf_line_ends", "```python\r\ndef solution(a):\r\n    return a\r\n```", "def solution(a):\n    return a", True),
    Case("tab_indent", "```python\ndef solution(a):\n\treturn a\n```", "def solution(a):\n    return a", True),
    # <think> blocks take part in block selection officially
    Case(
        "think_draft_then_answer",
        "<think>\nDraft:\n```python\ndef solution(a):\n    return 0\n```\n</think>\n```python\ndef solution(a):\n    return a\n```",
        "def solution(a):\n    return a",
        True,
    ),
    Case("code_only_in_think", "<think>\n```python\ndef solution(a):\n    return a\n```\n</think>\nSee above.", "def solution(a):\n    return a", True),
    # empty and null replies: no fence -> the stub
    Case("empty", "", STUB, False),
    Case("null_content", None, STUB, False),
    # unicode in comments and strings
    Case("unicode_comment", "```python\ndef solution(a):\n    # 입력을 그대로 돌려준다 ✓\n    return a\n```", "def solution(a):\n    return a", True),
    Case(
        "unicode_string",
        "```python\ndef solution(a):\n    label = 'ünïcödé 한글'\n    return a if label else 0\n```",
        "def solution(a):\n    label = 'ünïcödé 한글'\n    return a if label else 0",
        True,
    ),
]


def rows() -> list[dict[str, Any]]:
    """One HumanEval-V record per case, in the fixture's record shape."""
    return [
        {
            "qid": case.name,
            "function_signature": case.signature,
            "test_script": TEST,
            "ground_truth_solution": case.signature + "    return a\n",
            "ground_truth_diagram_description": f"Return the input ({case.name}).",
            "capability_aspects": {name: [] for name in dataset.ASPECTS},
            "task_type": "Computation",
        }
        for case in CASES
    ]


def write(root: Path) -> FixtureSet:
    return dataset.write(root, rows())


def script(server: Any) -> None:
    """Every case's reply for its task's prompt (all samples of a pass@3 request get the same reply)."""
    for case in CASES:
        server.script(case.marker, case.reply)


def case_for(qid: str) -> Case:
    (case,) = [c for c in CASES if c.name == qid]
    return case
