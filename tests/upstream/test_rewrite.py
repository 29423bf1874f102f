"""Import discovery and rewriting on the self-made tree: every reference form maps to the exported module,
dependencies are found, and code that is not ours (or a bare `python -m pkg` string) is left alone."""

from __future__ import annotations

import pytest

from lmms_tasks.utils.commands.upstream.pyrewrite import rewrite_python
from lmms_tasks.utils.commands.upstream.sources import ExportError, ModuleMap, SourceTree

SHARED = "lmms_eval.tasks._task_utils.task_runtime"

CASES = [
    # (source, own module, expected text, expected dependencies)
    ("from minipkg.utils.text import GREETING\n", None, f"from {SHARED}.text import GREETING\n", {"minipkg.utils.text"}),
    ("from minipkg.utils.mybench.parse import parse as p\n", None, "from lmms_eval.tasks.mybench.lib.parse import parse as p\n", {"minipkg.utils.mybench.parse"}),
    # submodules named in one from-import that land in different packages are split
    ("from minipkg.utils import mybench, text\n", None, f"from lmms_eval.tasks.mybench import lib as mybench\nfrom {SHARED} import text\n", {"minipkg.utils.mybench", "minipkg.utils.text"}),
    ("from minipkg import tasks_path\n", None, f"from {SHARED} import tasks_path\n", {"minipkg"}),
    ("from minipkg.mybench.utils import agg\n", None, "from lmms_eval.tasks.mybench.utils import agg\n", {"minipkg.mybench.utils"}),
    # plain import + attribute chain
    ("import minipkg.utils.text\nX = minipkg.utils.text.GREETING.upper()\n", None, f"import {SHARED}.text\nX = {SHARED}.text.GREETING.upper()\n", {"minipkg.utils.text"}),
    ("import minipkg.utils.text as t\n", None, f"import {SHARED}.text as t\n", {"minipkg.utils.text"}),
    # imports inside functions keep their indentation
    ("def f():\n    from minipkg.utils.text import GREETING\n    return GREETING\n", None, f"def f():\n    from {SHARED}.text import GREETING\n    return GREETING\n", {"minipkg.utils.text"}),
    # relative imports that cross the benchmark-library / shared-library boundary become absolute
    ("from ..text import GREETING\n", "minipkg.utils.mybench.hooks", f"from {SHARED}.text import GREETING\n", {"minipkg.utils.text"}),
    ("from . import parse\n", "minipkg.utils.mybench.hooks", "from lmms_eval.tasks.mybench.lib import parse\n", {"minipkg.utils.mybench.parse"}),
    # strings naming modules (importlib.resources, mock.patch targets) and dynamic-import f-strings
    ('R = "minipkg.utils.resources"\n', None, f'R = "{SHARED}.resources"\n', {"minipkg.utils.resources"}),
    ("P = 'minipkg.utils.text.GREETING'\n", None, f"P = '{SHARED}.text.GREETING'\n", {"minipkg.utils.text"}),
    ('M = f"minipkg.utils.testing.{name}"\n', None, f'M = f"{SHARED}.testing.{{name}}"\n', {"minipkg.utils.testing", "minipkg.utils.testing.helpers"}),
    # left alone: other packages, the bare package name (a `python -m` command), prose
    ('import os\nCMD = ["python", "-m", "minipkg", "score"]\n', None, 'import os\nCMD = ["python", "-m", "minipkg", "score"]\n', set()),
    ('"""See minipkg.utils.text for details."""\n', None, '"""See minipkg.utils.text for details."""\n', set()),
    # comments and fmt markers survive
    ("from minipkg.utils.text import GREETING  # noqa: F401\nT = {1: 2}  # fmt: skip\n", None, f"from {SHARED}.text import GREETING  # noqa: F401\nT = {{1: 2}}  # fmt: skip\n", {"minipkg.utils.text"}),
]


@pytest.mark.parametrize("source, module, expected, deps", CASES, ids=[c[0].splitlines()[0][:40] for c in CASES])
def test_rewrite_maps_every_reference_form(mini_tree: SourceTree, source: str, module: str | None, expected: str, deps: set[str]) -> None:
    result = rewrite_python(source, "case.py", module, ModuleMap(mini_tree))
    assert result.text == expected
    assert result.dependencies == deps


@pytest.mark.parametrize(
    "source, message",
    [
        ("from minipkg.utils.nonexistent import x\n", "case.py:1: 'minipkg.utils.nonexistent' is not a module"),
        ("from minipkg.elsewhere import x\n", "case.py:1: 'minipkg.elsewhere' is not a module"),
        ("def broken(:\n", "case.py:1: cannot parse"),
    ],
)
def test_bad_references_fail_naming_the_file_and_line(mini_tree: SourceTree, source: str, message: str) -> None:
    with pytest.raises(ExportError, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        rewrite_python(source, "case.py", None, ModuleMap(mini_tree))


def test_mapping_places_modules(mini_tree: SourceTree) -> None:
    mapping = ModuleMap(mini_tree)
    assert mapping.target_path("minipkg.utils.mybench", True) == "lmms_eval/tasks/mybench/lib/__init__.py"
    assert mapping.target_path("minipkg.utils.text", False) == "lmms_eval/tasks/_task_utils/task_runtime/text.py"
    assert mapping.target_path("minipkg", True) == "lmms_eval/tasks/_task_utils/task_runtime/__init__.py"
    assert mapping.target("numpy.linalg") == "numpy.linalg"
    with pytest.raises(ExportError, match="names no benchmark folder"):
        mapping.target("minipkg.otherbench.utils")


@pytest.mark.parametrize(
    "text, expected, left",
    [
        ('lmms-eval --tasks mybench --include_path "$(python -m minipkg path)" --limit 8\n', "lmms-eval --tasks mybench --limit 8\n", []),
        ("see `minipkg.utils.text.GREETING` and minipkg/utils/mybench/parse.py\n", f"see `{SHARED}.text.GREETING` and lmms_eval/tasks/mybench/lib/parse.py\n", []),
        ("pip install minipkg  # or pip install -e . in the mini-pkg... minipkg-extra\n", "pip install minipkg  # or pip install -e . in the mini-pkg... minipkg-extra\n", ["pip install minipkg  # or pip install -e . in the mini-pkg... minipkg-extra"]),
        # modules the export does not contain keep their name and are reported
        ("re-score with `python -m minipkg score` (minipkg/utils/unused.py)\n", "re-score with `python -m minipkg score` (minipkg/utils/unused.py)\n", ["re-score with `python -m minipkg score` (minipkg/utils/unused.py)"]),
    ],
)
def test_prose_names_exported_modules(mini_tree: SourceTree, text: str, expected: str, left: list[str]) -> None:
    from lmms_tasks.utils.commands.upstream.pyrewrite import rewrite_prose

    exported = {"minipkg.utils.text", "minipkg.utils.mybench.parse"}
    assert rewrite_prose(text, ModuleMap(mini_tree), lambda module: module in exported) == (expected, left)


def test_tests_marked_include_path_only_are_dropped() -> None:
    from lmms_tasks.utils.commands.upstream.pyrewrite import drop_marked_tests

    source = (
        "import pytest\n\n\n"
        "def test_kept() -> None:\n    assert 1\n\n\n"
        "@pytest.mark.include_path_only\n@pytest.mark.slow\ndef test_no_builtin_collision() -> None:\n    assert 2\n\n\n"
        "@pytest.mark.e2e\ndef test_also_kept() -> None:\n    assert 3\n"
    )
    text, dropped = drop_marked_tests(source, "t.py")
    assert dropped == ["test_no_builtin_collision"]
    assert text == "import pytest\n\n\ndef test_kept() -> None:\n    assert 1\n\n\n\n\n@pytest.mark.e2e\ndef test_also_kept() -> None:\n    assert 3\n"


@pytest.mark.parametrize(
    "source, expected, left",
    [
        # docstrings and comments name the exported module
        ('"""See minipkg.utils.text for details."""\n', f'"""See {SHARED}.text for details."""\n', []),
        ("X = 1  # from minipkg.utils.mybench.parse\n", "X = 1  # from lmms_eval.tasks.mybench.lib.parse\n", []),
        # a script run with `-c` and a `!function` prefix, in one statement, each string rewritten on its own
        ('S = "from minipkg.utils.text import G\\n" + r"""\nprint(G)\n"""; H = "!function minipkg.utils.text."\n', f'S = "from {SHARED}.text import G\\n" + r"""\nprint(G)\n"""; H = "!function {SHARED}.text."\n', []),
        # code is not this function's business, and a command in a message is no reference
        ('minipkg.utils.text.f("python -m minipkg score")\n', 'minipkg.utils.text.f("python -m minipkg score")\n', []),
        # a module the export does not contain keeps its name and is reported
        ('"""Uses minipkg.utils.unused."""\n', '"""Uses minipkg.utils.unused."""\n', ['"""Uses minipkg.utils.unused."""']),
    ],
)
def test_python_comments_and_strings_name_exported_modules(mini_tree: SourceTree, source: str, expected: str, left: list[str]) -> None:
    from lmms_tasks.utils.commands.upstream.pyrewrite import rewrite_python_prose

    exported = {"minipkg.utils.text", "minipkg.utils.mybench.parse"}
    assert rewrite_python_prose(source, ModuleMap(mini_tree), lambda module: module in exported) == (expected, left)
