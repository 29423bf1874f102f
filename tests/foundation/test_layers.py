"""The layout is the architecture: every import in the tree follows the layer table of docs/DEVELOPING.md.

The table is parsed from the document (so the picture a contributor reads is the rule the code obeys) and
every `import` / `from ... import` of ours, at any depth of any module, is checked against it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from lmms_tasks import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "DEVELOPING.md"
LAYER_NAMES = {
    "task folders": "tasks",
    "benchmark libraries": "benchmarks",
    "services": "services",
    "compat": "compat",
    "commands": "commands",
    "testing": "testing",
}


def layer_rules(text: str) -> dict[str, set[str]]:
    """{layer: layers it may import} from the table between the `layers` markers."""
    block = text.split("<!-- layers:start -->", 1)[1].split("<!-- layers:end -->", 1)[0]
    rules: dict[str, set[str]] = {}
    for line in block.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        layer = LAYER_NAMES[cells[0]]
        allowed = {LAYER_NAMES[name.strip()] for name in re.split(r",\s*", cells[2]) if name.strip() in LAYER_NAMES}
        allowed |= {"benchmarks"} if "its benchmark library" in cells[2] else set()
        rules[layer] = allowed
    return rules


def layer_of_module(module: str) -> tuple[str, str | None] | None:
    """(layer, benchmark or None) of one of our modules; None for the package root itself."""
    parts = module.split(".")
    if parts[0] != "lmms_tasks" or len(parts) == 1:
        return None
    if parts[1] in BENCHMARKS:
        return "tasks", parts[1]
    if parts[1] != "utils" or len(parts) == 2:
        return None
    if parts[2] in BENCHMARKS:
        return "benchmarks", parts[2]
    return (parts[2], None) if parts[2] in LAYER_NAMES.values() else ("unknown", parts[2])


def layer_of_file(path: Path) -> tuple[str, str | None] | None:
    rel = path.relative_to(ROOT).parts
    if rel[0] == "lmms_tasks" and len(rel) > 2 and rel[1] in BENCHMARKS:
        return "tasks", rel[1]
    if rel[0] == "utils" and len(rel) > 2:
        return layer_of_module("lmms_tasks.utils." + rel[1])
    return None


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module of ours a file imports, at any depth (`from lmms_tasks.utils import compat` counts as
    `lmms_tasks.utils.compat`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("lmms_tasks")]


def violations(rules: dict[str, set[str]], files: list[Path]) -> list[str]:
    problems = []
    for path in files:
        own = layer_of_file(path)
        if own is None:
            continue
        layer, bench = own
        for line, module in imported_modules(path):
            target = layer_of_module(module)
            if target is None:
                continue
            target_layer, target_bench = target
            where = f"{path.relative_to(ROOT)}:{line} imports {module}"
            if target_layer == "unknown":
                problems.append(f"{where}: {target_bench!r} is in no layer of docs/DEVELOPING.md")
            elif target_layer == "benchmarks" and layer in ("tasks", "benchmarks"):
                if target_bench != bench:
                    problems.append(f"{where}: another benchmark's library")
            elif target_layer != layer and target_layer not in rules.get(layer, set()):
                problems.append(f"{where}: {layer} may not import {target_layer}")
    return problems


def python_files() -> list[Path]:
    return sorted(p for base in ("utils", "lmms_tasks") for p in (ROOT / base).rglob("*.py") if "__pycache__" not in p.parts)


def test_the_tree_follows_the_layer_table() -> None:
    rules = layer_rules(DOC.read_text(encoding="utf-8"))
    assert set(rules) == set(LAYER_NAMES.values())
    assert violations(rules, python_files()) == []


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        ("utils/services/judge_extra.py", "from lmms_tasks.utils import compat\n", "services may not import compat"),
        ("utils/services/judge_extra.py", "def f():\n    from lmms_tasks.utils.compat import exit_status\n", "services may not import compat"),
        ("utils/vlm2_bench/extra.py", "from lmms_tasks.utils.commands.score import rescore\n", "benchmarks may not import commands"),
        ("utils/vlm2_bench/extra.py", "import lmms_tasks.utils.haerae_vision.metrics\n", "another benchmark's library"),
        ("utils/compat/extra.py", "from lmms_tasks.utils.humaneval_v import hooks\n", "compat may not import benchmarks"),
        ("utils/commands/extra.py", "from lmms_tasks.utils.testing import demo\n", "commands may not import testing"),
        ("utils/mystery/extra.py", "x = 1\n", None),
        ("utils/services/extra.py", "from lmms_tasks.utils.mystery import x\n", "is in no layer"),
    ],
)
def test_a_forbidden_import_is_reported(where: str, source: str, expected: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker catches each kind of violation (planted in a copy of the tree's shape)."""
    fake_root = tmp_path
    file = fake_root / where
    file.parent.mkdir(parents=True)
    file.write_text(source, encoding="utf-8")
    monkeypatch.setitem(globals(), "ROOT", fake_root)
    rules = layer_rules(DOC.read_text(encoding="utf-8"))
    found = violations(rules, [file])
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found
