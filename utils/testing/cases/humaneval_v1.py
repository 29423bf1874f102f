"""HumanEval-V v1 reply cases with the verdicts the OFFICIAL v1 code (commit `00d2cf2`) gives them.

Every row is data: a model reply, the task it answers (four small made-up tasks, `TASKS`: signature and
test script), and the official v1 results, obtained by running the untouched official `post_process`,
`pylint_check` and `execute_code` (pylint gate, then `check_correctness` with the 2 s limit) on that reply:
`official` for the reply as given (what `evaluate.py` scores in a prediction file), `stopped` for the
reply cut before "\\n```\\n", as the official v1 models return it (present only where the reply holds
that stop string; the tasks score the reply as received, as evaluate.py does, and mark such samples
`contains_stop`). The rows cover every
v1 extraction branch: one ```python block (closed, unclosed), several (concatenated, pieces with 0 or 2+
fences skipped, the preamble), ``` python with a space, one bare fence, two or more, no fence, the
body-only rule, the AST filter, parse errors, and the execution outcomes (pass, assert, exception,
timeout, SystemExit, pylint errors).

Results are compared as `comparable(result)`: pylint names the file in "Parsing failed" messages (a uuid
officially, a batch file name here), so that name is `<file>`; a run of the real CLI adds one line to each
program (the case marker, see `Case.marked_signature`), so `comparable(result, lines=False)` drops the
line numbers of such locations too. `here`: where this environment's verdict text differs from the official run's, with `why`.
Rows 1-63 are `v1_cases.json` of the research notes; the last six add replies without the stop string
(the concatenation as a real run reaches it) and replies the stop string empties.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_tasks.utils.testing.fixtures import FixtureSet
from lmms_tasks.utils.testing.fixtures import humaneval_v1 as dataset


@dataclass(frozen=True)
class Verdict:
    """What the official v1 code makes of one reply: the extracted completion and the per-sample result
    ("passed", "pylint fail:\\n<messages>", "timed out" or "failed: <exception>")."""

    completion: str
    result: str
    raw: bool = False  # the AST extraction failed and the completion is the raw content (a parse error)

    @property
    def passed(self) -> bool:
        return self.result == "passed"

    @property
    def gated(self) -> bool:
        return self.result.startswith("pylint fail:")


@dataclass(frozen=True)
class Case:
    name: str
    task: str
    branch: str
    note: str
    reply: str
    official: Verdict
    stopped: Verdict | None = None
    here: str | None = None  # this environment's result text where it differs from the official run's
    why: str = ""

    @property
    def signature(self) -> str:
        return TASKS[self.task][0]

    @property
    def test_script(self) -> str:
        return TASKS[self.task][1]

    @property
    def marked_signature(self) -> str:
        """The signature with a first line naming the case: the prompt the stand-in server recognises. A
        comment line changes no verdict (only line numbers): the AST filter drops it, raw completions keep
        it (see `marked`)."""
        return f"# case {self.name}\n{self.signature}"

    def after_stop(self) -> Verdict:
        """The official verdict on the reply as the tasks score it (cut at the stop string)."""
        return self.stopped or self.official

    def result_here(self, verdict: Verdict) -> str:
        """The result text this environment gives where the official run gave `verdict` (see `here`)."""
        return self.here if self.here is not None else verdict.result

    def marked(self, verdict: Verdict) -> str:
        """The completion of `verdict` for the marked signature: a raw completion that holds the glued
        signature holds the marker line too; an AST-filtered one has no comments, so it is unchanged."""
        if not verdict.raw:
            return verdict.completion
        official = self.signature if self.signature.endswith("\n") else self.signature + "\n"
        return verdict.completion.replace(official, f"# case {self.name}\n{official}")

    def program(self, completion: str, marked: bool = False) -> str:
        signature = self.marked_signature if marked else self.signature
        if not signature.endswith("\n"):
            signature += "\n"
        return signature + "    pass\n\n" + completion + "\n\n" + self.test_script


def comparable(result: str, lines: bool = True) -> str:
    """A result with the file name of a "(<file>, line N)" location replaced (pylint's "Parsing failed", a
    SyntaxError raised by exec), and every "line N" too unless `lines`."""
    result = re.sub(r"\([^()\s]+, line (\d+)\)", r"(<file>, line \1)", result)
    return result if lines else re.sub(r"\bline \d+", "line <n>", result)


def rows() -> list[dict[str, Any]]:
    """One v1 record per case (qid = the case name, the marked signature)."""
    return [
        {
            "qid": case.name,
            "ground_truth_solution": "",
            "image_description": f"case {case.name}",
            "test_script": case.test_script,
            "function_signature": case.marked_signature,
        }
        for case in CASES
    ]


def write(root: Path) -> FixtureSet:
    return dataset.write(root, rows())


def script(server: Any) -> None:
    """Every case's reply for its prompt (identified by the marker line)."""
    for case in CASES:
        server.script(f"# case {case.name}\n", case.reply)


def case_for(qid: str) -> Case:
    (case,) = [c for c in CASES if c.name == qid]
    return case


TASKS: dict[str, tuple[str, str]] = {
    "t_add": (
        'def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n',
        "assert solution(1, 2) == 3\nassert solution(-5, 5) == 0\nassert solution(10, 20) == 30\n",
    ),
    "t_max": (
        'from typing import List\n\ndef solution(nums: List[int]) -> int:\n    """\n    Return the largest element of nums.\n    """\n',
        "def check(candidate):\n    assert candidate([1, 5, 3]) == 5\n    assert candidate([-2, -7]) == -2\n\ncheck(solution)\n",
    ),
    "t_norm": (
        'import math\n\ndef solution(x: float, y: float) -> float:\n    """\n    Return the Euclidean norm of (x, y), rounded to 3 decimals.\n    """\n',
        "assert solution(3, 4) == 5.0\nassert solution(1, 1) == 1.414\n",
    ),
    "t_rev": (
        'def solution(s: str) -> str:\n    """Return s reversed."""',
        'assert solution("abc") == "cba"\nassert solution("") == ""\n',
    ),
}

CASES = [
    Case(
        "py1_closed",
        "t_add",
        "python_x1",
        "one closed ```python block, full def",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "py1_unclosed_stop",
        "t_add",
        "python_x1",
        'one ```python block with NO closing fence (what the stop string "\\n```\\n" leaves)',
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a + b",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "py1_prose_around",
        "t_add",
        "python_x1",
        "prose before and after the block",
        reply="Here is the solution:\n\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```\n\nThis adds the two numbers.",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "py1_wrong_answer",
        "t_add",
        "python_x1",
        "parses fine, fails an assert -> AssertionError with empty message",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
    ),
    Case(
        "py1_example_usage_dropped",
        "t_add",
        "python_x1+ast",
        "top-level print / example usage is dropped by the AST filter",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n\nprint(solution(1, 2))\nresult = solution(3, 4)\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "py1_global_const_dropped",
        "t_add",
        "python_x1+ast",
        "top-level constant dropped -> undefined-variable in pylint",
        reply="```python\nOFFSET = 0\n\ndef solution(a: int, b: int) -> int:\n    return a + b + OFFSET\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b + OFFSET", "pylint fail:\nUndefined variable 'OFFSET'"),
    ),
    Case(
        "py1_main_guard_dropped",
        "t_add",
        "python_x1+ast",
        "if __name__ == '__main__' block dropped",
        reply='```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n\nif __name__ == "__main__":\n    print(solution(2, 3))\n```',
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "py1_nested_import",
        "t_norm",
        "python_x1+ast",
        "import nested inside the function is hoisted to a top-level line after the def",
        reply="```python\ndef solution(x: float, y: float) -> float:\n    import math\n    from math import sqrt as s\n    return round(s(x * x + y * y), 3)\n```",
        official=Verdict(
            "def solution(x: float, y: float) -> float:\n    import math\n    from math import sqrt as s\n    return round(s(x * x + y * y), 3)\nimport math\nfrom math import sqrt as s",
            "passed",
        ),
    ),
    Case(
        "py1_imports_multi_alias",
        "t_norm",
        "python_x1+ast",
        "import a, b as c / from m import x, y: one line per alias",
        reply="```python\nimport math, os.path as osp\nfrom math import hypot, sqrt as sq\n\ndef solution(x: float, y: float) -> float:\n    return round(hypot(x, y), 3)\n```",
        official=Verdict(
            "import math\nimport os.path as osp\nfrom math import hypot\nfrom math import sqrt as sq\ndef solution(x: float, y: float) -> float:\n    return round(hypot(x, y), 3)",
            "passed",
        ),
    ),
    Case(
        "py1_star_import",
        "t_norm",
        "python_x1+ast",
        "from m import * is kept as 'from math import *'",
        reply="```python\nfrom math import *\n\ndef solution(x: float, y: float) -> float:\n    return round(sqrt(x*x + y*y), 3)\n```",
        official=Verdict(
            "from math import *\ndef solution(x: float, y: float) -> float:\n    return round(sqrt(x * x + y * y), 3)", "passed"
        ),
    ),
    Case(
        "py1_relative_import_dotonly",
        "t_add",
        "python_x1+ast",
        "'from . import x' -> module None -> emitted as 'from  import x' (syntax error downstream)",
        reply="```python\nfrom . import helpers\n\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict(
            "from  import helpers\ndef solution(a: int, b: int) -> int:\n    return a + b",
            "pylint fail:\nParsing failed: 'invalid syntax (<file>, line 7)'",
        ),
    ),
    Case(
        "py1_relative_import_dotted",
        "t_add",
        "python_x1+ast",
        "'from .utils import x' -> leading dots lost -> 'from utils import x' (import-error)",
        reply="```python\nfrom .utils import helper\n\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict(
            "from utils import helper\ndef solution(a: int, b: int) -> int:\n    return a + b",
            "pylint fail:\nNo name 'helper' in module 'utils'",
        ),
        here="pylint fail:\nUnable to import 'utils'",
        why="the official scorer runs in its repository, whose own utils.py astroid resolves ('No name ... in module'); here no module named utils exists (pylint runs in an empty directory), so the gate fails with import-error",
    ),
    Case(
        "py1_helper_and_class",
        "t_max",
        "python_x1+ast",
        "top-level helper function and class are kept in order; comments dropped",
        reply="```python\n# helper\nclass Box:\n    def __init__(self, v):\n        self.v = v\n\ndef biggest(xs):\n    return max(xs)\n\ndef solution(nums):\n    return Box(biggest(nums)).v\n```",
        official=Verdict(
            "class Box:\n\n    def __init__(self, v):\n        self.v = v\ndef biggest(xs):\n    return max(xs)\ndef solution(nums):\n    return Box(biggest(nums)).v",
            "passed",
        ),
    ),
    Case(
        "py1_def_in_if_block",
        "t_add",
        "python_x1+ast",
        "def nested in a top-level if is still extracted (no function/class parent)",
        reply="```python\nif True:\n    def solution(a, b):\n        return a + b\n```",
        official=Verdict("def solution(a, b):\n    return a + b", "passed"),
    ),
    Case(
        "py1_async_def_dropped",
        "t_add",
        "python_x1+ast",
        "async def is not handled -> dropped -> only the stub remains",
        reply="```python\nasync def solution(a, b):\n    return a + b\n```",
        official=Verdict("", "failed: "),
    ),
    Case(
        "py1_def_inside_async",
        "t_add",
        "python_x1+ast",
        "a def inside an async def has no FunctionDef/ClassDef parent -> extracted as top-level",
        reply="```python\nasync def wrapper():\n    def solution(a, b):\n        return a + b\n    return solution\n```",
        official=Verdict("def solution(a, b):\n    return a + b", "passed"),
    ),
    Case(
        "py1_lambda_assign_dropped",
        "t_add",
        "python_x1+ast",
        "solution = lambda ... is an assignment -> dropped",
        reply="```python\nsolution = lambda a, b: a + b\n```",
        official=Verdict("", "failed: "),
    ),
    Case(
        "py1_method_only",
        "t_add",
        "python_x1+ast",
        "solution defined only as a method of a class -> module-level stub used",
        reply="```python\nclass Solution:\n    def solution(self, a, b):\n        return a + b\n```",
        official=Verdict("class Solution:\n\n    def solution(self, a, b):\n        return a + b", "failed: "),
    ),
    Case(
        "py1_decorator_kept",
        "t_add",
        "python_x1+ast",
        "decorators are kept by ast.unparse; nested import hoisted",
        reply="```python\nfrom functools import lru_cache\n\n@lru_cache(maxsize=None)\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict(
            "from functools import lru_cache\n@lru_cache(maxsize=None)\ndef solution(a: int, b: int) -> int:\n    return a + b", "passed"
        ),
    ),
    Case(
        "py1_future_import",
        "t_add",
        "python_x1+ast",
        "from __future__ import moved below the stub -> SyntaxError only at exec",
        reply="```python\nfrom __future__ import annotations\n\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict(
            "from __future__ import annotations\ndef solution(a: int, b: int) -> int:\n    return a + b",
            "failed: from __future__ imports must occur at the beginning of the file (<string>, line 7)",
        ),
    ),
    Case(
        "py1_fence_inside_string",
        "t_add",
        "python_x1",
        "a ``` inside a string literal truncates the block -> syntax error fallback",
        reply="```python\ndef solution(a, b):\n    marker = '```'\n    return a + b\n```",
        official=Verdict(
            "\ndef solution(a, b):\n    marker = '",
            "pylint fail:\nParsing failed: 'unterminated string literal (detected at line 9) (<file>, line 9)'",
            raw=True,
        ),
    ),
    Case(
        "py1_syntax_error",
        "t_add",
        "python_x1+parse_error",
        "unparsable block -> completion = raw content -> pylint syntax-error",
        reply="```python\ndef solution(a, b)\n    return a + b\n```",
        official=Verdict(
            "\ndef solution(a, b)\n    return a + b\n", "pylint fail:\nParsing failed: 'expected ':' (<file>, line 8)'", raw=True
        ),
    ),
    Case(
        "py1_body_only_glued",
        "t_add",
        "python_x1+body_only",
        "block holds only the indented body -> glued to the signature",
        reply="```python\n    return a + b\n```",
        official=Verdict(
            'def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    return a + b', "passed"
        ),
    ),
    Case(
        "py1_indented_full_def",
        "t_add",
        "python_x1+body_only",
        "block starts with a 2-space-indented full def -> glued to the signature (4-space body) -> unindent error -> raw fallback -> pylint fail",
        reply="```python\n  def solution(a, b):\n      return a + b\n```",
        official=Verdict(
            'def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n\n  def solution(a, b):\n      return a + b\n',
            "pylint fail:\nParsing failed: 'unindent does not match any outer indentation level (<file>, line 12)'",
            raw=True,
        ),
    ),
    Case(
        "py1_tab_body",
        "t_add",
        "python_x1",
        "tab-indented body does not match the '  ' rule -> parse error fallback",
        reply="```python\n\treturn a + b\n```",
        official=Verdict(
            "\n\treturn a + b\n",
            "pylint fail:\nParsing failed: 'inconsistent use of tabs and spaces in indentation (<file>, line 8)'",
            raw=True,
        ),
    ),
    Case(
        "py1_crlf",
        "t_add",
        "python_x1",
        "CRLF line endings",
        reply="```python\r\ndef solution(a: int, b: int) -> int:\r\n    return a + b\r\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "py1_unicode",
        "t_rev",
        "python_x1",
        "unicode identifiers, comments and strings (signature without trailing newline)",
        reply="```python\ndef solution(s: str) -> str:\n    # inverser la chaîne → 逆序\n    résultat = s[::-1]\n    return résultat\n```",
        official=Verdict("def solution(s: str) -> str:\n    résultat = s[::-1]\n    return résultat", "passed"),
    ),
    Case(
        "py1_runtime_error",
        "t_add",
        "python_x1",
        "raises ValueError at call time",
        reply="```python\ndef solution(a, b):\n    raise ValueError('boom')\n```",
        official=Verdict("def solution(a, b):\n    raise ValueError('boom')", "failed: boom"),
    ),
    Case(
        "py1_timeout",
        "t_add",
        "python_x1",
        "infinite loop -> 2 s timer",
        reply="```python\ndef solution(a, b):\n    while True:\n        pass\n```",
        official=Verdict("def solution(a, b):\n    while True:\n        pass", "timed out"),
    ),
    Case(
        "py1_sys_exit",
        "t_add",
        "python_x1",
        "SystemExit is a BaseException -> failed",
        reply="```python\nimport sys\n\ndef solution(a, b):\n    sys.exit(0)\n```",
        official=Verdict("import sys\ndef solution(a, b):\n    sys.exit(0)", "failed: 0"),
    ),
    Case(
        "py1_import_error",
        "t_add",
        "python_x1",
        "import of a module missing from the environment -> pylint import-error",
        reply="```python\nimport nonexistent_pkg_xyz\n\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict(
            "import nonexistent_pkg_xyz\ndef solution(a: int, b: int) -> int:\n    return a + b",
            "pylint fail:\nUnable to import 'nonexistent_pkg_xyz'",
        ),
    ),
    Case(
        "py1_wrong_arity",
        "t_add",
        "python_x1",
        "def with the wrong number of parameters -> pylint E1121 too-many-function-args on the test calls (not a syntax error, still fails the gate)",
        reply="```python\ndef solution(a):\n    return a\n```",
        official=Verdict(
            "def solution(a):\n    return a",
            "pylint fail:\nToo many positional arguments for function call\nToo many positional arguments for function call\nToo many positional arguments for function call",
        ),
    ),
    Case(
        "py1_numpy",
        "t_norm",
        "python_x1",
        "third-party import present in the venv (numpy) -> passes (environment dependent)",
        reply="```python\nimport numpy as np\n\ndef solution(x, y):\n    return round(float(np.hypot(x, y)), 3)\n```",
        official=Verdict("import numpy as np\ndef solution(x, y):\n    return round(float(np.hypot(x, y)), 3)", "passed"),
    ),
    Case(
        "pyN_helper_then_solution",
        "t_max",
        "python_xN",
        "two closed blocks: helper, then solution -> concatenated (v2 would keep only the last def-solution block)",
        reply="First a helper:\n```python\ndef biggest(xs):\n    return max(xs)\n```\nThen the solution:\n```python\ndef solution(nums):\n    return biggest(nums)\n```",
        official=Verdict("def biggest(xs):\n    return max(xs)\ndef solution(nums):\n    return biggest(nums)", "passed"),
        stopped=Verdict("def biggest(xs):\n    return max(xs)", "failed: "),
    ),
    Case(
        "pyN_solution_then_usage",
        "t_add",
        "python_xN",
        "solution block then usage block -> concatenated, usage dropped by AST",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```\nUsage:\n```python\nprint(solution(1, 2))\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "pyN_wrong_then_right",
        "t_add",
        "python_xN",
        "wrong def then corrected def -> both kept; the later def wins at runtime",
        reply="Draft:\n```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```\nCorrected:\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict(
            "def solution(a: int, b: int) -> int:\n    return a - b\ndef solution(a: int, b: int) -> int:\n    return a + b", "passed"
        ),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
    ),
    Case(
        "pyN_right_then_wrong",
        "t_add",
        "python_xN",
        "right def then wrong def -> both kept; the later (wrong) def wins at runtime",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```\nAlternative:\n```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```",
        official=Verdict(
            "def solution(a: int, b: int) -> int:\n    return a + b\ndef solution(a: int, b: int) -> int:\n    return a - b", "failed: "
        ),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "pyN_last_unclosed_skipped",
        "t_add",
        "python_xN",
        "last block unclosed (0 fences in its piece) -> skipped; earlier closed block used",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```\nFixed version:\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
    ),
    Case(
        "pyN_bare_block_between_skipped",
        "t_add",
        "python_xN",
        "piece holding the solution also holds a bare ```...``` output block (3 fences) -> skipped",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```\nOutput:\n```\n3\n```\nTest:\n```python\nprint(solution(1, 2))\n```",
        official=Verdict("", "failed: "),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "pyN_preamble_one_fence",
        "t_add",
        "python_xN",
        "the preamble piece (before the first ```python) holds exactly one ``` -> its text is prepended -> syntax error",
        reply="Use a ``` fenced block\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```\n```python\nprint(solution(1, 2))\n```",
        official=Verdict(
            "Use a \ndef solution(a: int, b: int) -> int:\n    return a + b\n\nprint(solution(1, 2))\n",
            "pylint fail:\nParsing failed: 'invalid syntax (<file>, line 7)'",
            raw=True,
        ),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "pyN_glued_body_only",
        "t_add",
        "python_xN+body_only",
        "concatenated content begins with an indented body -> glued to the signature",
        reply="```python\n    return a + b\n```\nand\n```python\ndef extra():\n    return 1\n```",
        official=Verdict(
            'def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    return a + b\ndef extra():\n    return 1',
            "passed",
        ),
        stopped=Verdict(
            'def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    return a + b', "passed"
        ),
    ),
    Case(
        "pyN_all_unclosed",
        "t_add",
        "python_xN",
        "two ```python openings, no closing fence at all -> every piece skipped -> content '' -> stub only",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n",
        official=Verdict("", "failed: "),
    ),
    Case(
        "pyN_empty_block",
        "t_add",
        "python_xN",
        "an empty ```python``` block plus a full one",
        reply="```python\n```\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
        stopped=Verdict("", "failed: "),
    ),
    Case(
        "pysp_closed",
        "t_add",
        "python_space",
        "``` python (space) block",
        reply="``` python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "pysp_two_blocks_first_only",
        "t_add",
        "python_space",
        "two ``` python blocks -> only the first is used (no concatenation)",
        reply="``` python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```\n``` python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
    ),
    Case(
        "pysp_and_python_nospace",
        "t_add",
        "python_x1",
        "both ``` python and ```python present -> the ```python branch wins",
        reply="``` python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
    ),
    Case(
        "bare1_body_before",
        "t_add",
        "bare_x1",
        "one bare fence: text before it is the body (continuation style)",
        reply="    return a + b\n```",
        official=Verdict(
            'def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    return a + b', "passed"
        ),
    ),
    Case(
        "bare1_full_def_before",
        "t_add",
        "bare_x1",
        "one bare fence: full def before it",
        reply="def solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "bare1_opening_only",
        "t_add",
        "bare_x1",
        "one bare fence that is actually an opening fence -> text before it is '' -> stub only",
        reply="```\ndef solution(a: int, b: int) -> int:\n    return a + b\n",
        official=Verdict("", "failed: "),
    ),
    Case(
        "bare2_plain",
        "t_add",
        "bare_x2plus",
        "``` ... ``` without language tag",
        reply="```\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "bare2_py_tag",
        "t_add",
        "bare_x2plus",
        "```py tag: 'py' stays in content but is a bare-name statement dropped by the AST",
        reply="```py\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "bare2_Python_capital",
        "t_add",
        "bare_x2plus",
        "```Python (capital P) is not '```python' -> bare branch, 'Python' line dropped",
        reply="```Python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "bare2_python3_tag",
        "t_add",
        "bare_x2plus",
        "```python3 CONTAINS '```python' -> python_x1 branch; the '3' line is an expression, dropped",
        reply="```python3\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "bare4_first_block_only",
        "t_add",
        "bare_x2plus",
        "two bare blocks -> only the first is used",
        reply="```\ndef solution(a: int, b: int) -> int:\n    return a - b\n```\n```\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
        stopped=Verdict("", "failed: "),
    ),
    Case(
        "bare3_odd",
        "t_add",
        "bare_x2plus",
        "three bare fences -> still text between the first two",
        reply="```\ndef solution(a: int, b: int) -> int:\n    return a + b\n```\nthen\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
        stopped=Verdict("", "failed: "),
    ),
    Case(
        "nofence_full_code",
        "t_add",
        "no_fence",
        "unfenced full code is never used -> '    pass' -> glued to the signature",
        reply="def solution(a: int, b: int) -> int:\n    return a + b\n",
        official=Verdict('def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    pass', "failed: "),
    ),
    Case(
        "nofence_body",
        "t_add",
        "no_fence",
        "unfenced body -> '    pass'",
        reply="    return a + b",
        official=Verdict('def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    pass', "failed: "),
    ),
    Case(
        "empty_reply",
        "t_add",
        "no_fence",
        "empty string",
        reply="",
        official=Verdict('def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    pass', "failed: "),
    ),
    Case(
        "think_then_block",
        "t_add",
        "python_x1",
        "<think> with prose only, then one block",
        reply="<think>\nThe picture shows two numbers being added.\n</think>\n\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
    ),
    Case(
        "think_with_draft_block",
        "t_add",
        "python_xN",
        "<think> containing a wrong draft block, then the final block -> both concatenated, later def wins",
        reply="<think>\nDraft:\n```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```\nHmm, that subtracts.\n</think>\n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict(
            "def solution(a: int, b: int) -> int:\n    return a - b\ndef solution(a: int, b: int) -> int:\n    return a + b", "passed"
        ),
        stopped=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
    ),
    Case(
        "think_unclosed_cut",
        "t_add",
        "python_x1",
        "reply cut inside <think> after opening a block -> one ```python, no closing -> ALL the rest of the text (incl. prose) is content -> syntax error",
        reply="<think>\nLet me write it:\n```python\ndef solution(a, b):\n    return a + b\n\nWait, check again",
        official=Verdict(
            "\ndef solution(a, b):\n    return a + b\n\nWait, check again",
            "pylint fail:\nParsing failed: 'invalid syntax (<file>, line 11)'",
            raw=True,
        ),
    ),
    Case(
        "think_draft_right_final_wrong",
        "t_max",
        "python_xN",
        "<think> holds a correct draft; final answer block wrong -> later (wrong) def wins",
        reply="<think>\n```python\ndef solution(nums):\n    return max(nums)\n```\n</think>\n```python\ndef solution(nums):\n    return min(nums)\n```",
        official=Verdict("def solution(nums):\n    return max(nums)\ndef solution(nums):\n    return min(nums)", "failed: "),
        stopped=Verdict("def solution(nums):\n    return max(nums)", "passed"),
    ),
    Case(
        "think_no_code",
        "t_add",
        "no_fence",
        "reasoning only, no code",
        reply="<think>\nHmm.\n</think>\nThe answer is a + b.",
        official=Verdict('def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    pass', "failed: "),
    ),
    Case(
        "pyN_crlf_helper_then_solution",
        "t_max",
        "python_xN",
        "CRLF line ends: no stop string, so the two blocks reach the v1 concatenation (helper + solution)",
        reply="First a helper:\r\n```python\r\ndef biggest(xs):\r\n    return max(xs)\r\n```\r\nThen the solution:\r\n```python\r\ndef solution(nums):\r\n    return biggest(nums)\r\n```",
        official=Verdict("def biggest(xs):\n    return max(xs)\ndef solution(nums):\n    return biggest(nums)", "passed"),
    ),
    Case(
        "pyN_fence_space_right_then_wrong",
        "t_add",
        "python_xN",
        "a space after the first closing fence: no stop string; both blocks concatenated, the later (wrong) def wins",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n``` \nAlternative:\n```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n```",
        official=Verdict(
            "def solution(a: int, b: int) -> int:\n    return a + b\ndef solution(a: int, b: int) -> int:\n    return a - b", "failed: "
        ),
    ),
    Case(
        "pyN_inline_fences_helper",
        "t_max",
        "python_xN",
        "closing fences at the end of code lines: no stop string; helper and solution concatenated with no separator between the blocks' texts",
        reply="```python\ndef biggest(xs):\n    return max(xs)```\n```python\ndef solution(nums):\n    return biggest(nums)```",
        official=Verdict("def biggest(xs):\n    return max(xs)\ndef solution(nums):\n    return biggest(nums)", "passed"),
    ),
    Case(
        "pyN_unclosed_last_no_stop",
        "t_add",
        "python_xN",
        "no stop string; a closed wrong block then an unclosed right block: the unclosed piece is dropped",
        reply="```python\ndef solution(a: int, b: int) -> int:\n    return a - b\n``` \n```python\ndef solution(a: int, b: int) -> int:\n    return a + b\n",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a - b", "failed: "),
    ),
    Case(
        "stop_at_start",
        "t_add",
        "bare_x1",
        "the reply starts with the stop string: the official models return an empty reply",
        reply="\n```\ndef solution(a: int, b: int) -> int:\n    return a + b\n```",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
        stopped=Verdict('def solution(a: int, b: int) -> int:\n    """\n    Return the sum of a and b.\n    """\n    pass', "failed: "),
    ),
    Case(
        "stop_bare_fenced_block",
        "t_add",
        "bare_x2plus",
        "a bare-fenced block closed by the stop string: one bare fence is left, at the start: the empty program",
        reply="```\ndef solution(a: int, b: int) -> int:\n    return a + b\n```\nDone.",
        official=Verdict("def solution(a: int, b: int) -> int:\n    return a + b", "passed"),
        stopped=Verdict("", "failed: "),
    ),
]
