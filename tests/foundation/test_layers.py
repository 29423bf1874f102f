"""The layout is the architecture: every import in the tree resolves to a file through the declared import
path -> folder mapping (setup.cfg's `package_dir`) and follows the layer table of docs/DEVELOPING.md.

The table is parsed from the document (so the picture a contributor reads is the rule the code obeys), the
mapping from setup.cfg (read by setup.py's own reader, so the packages built are the ones checked here).
Every `import` / `from ... import` of ours, at any depth of any module, every `!function lmms_tasks...` tag
of the YAML and every `python -m lmms_tasks...` of the scripts is resolved to the file it names, and the
layer of that file, not a reading of the module name, is checked. Nothing that goes into the wheel may
import the developer tools (setup.cfg `[lmms_tasks.not_installed]`: test support and the upstream exporter).
"""

from __future__ import annotations

import ast
import functools
import re
import runpy
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
    "developer tools": "developer",
    "testing": "testing",
}
# folders of utils/ that are a layer by themselves (the benchmark folders are "benchmarks"), most specific first
LAYER_FOLDERS = {("commands", "upstream"): "developer", ("commands",): "commands", ("services",): "services", ("compat",): "compat", ("testing",): "testing"}
FUNCTION_TAG = re.compile(r"!function\s+(lmms_tasks[\w.]*)")
MODULE_RUN = re.compile(r"-m\s+(lmms_tasks[\w.]*)")


def declared_layout() -> tuple[dict[str, str], list[str]]:
    """({import path: folder}, [packages left out of the wheel]) from setup.cfg, through setup.py's reader."""
    return runpy.run_path(str(ROOT / "setup.py"), run_name="layout")["declared_layout"](ROOT / "setup.cfg")


MAPPING, NOT_INSTALLED = declared_layout()


def module_path(module: str, root: Path = ROOT, mapping: dict[str, str] | None = None) -> Path | None:
    """The file (or, for a package without `__init__.py`, the folder) an import path names through the
    mapping: the longest mapped prefix's folder, then one folder per remaining part. None if none exists."""
    mapping = MAPPING if mapping is None else mapping
    prefixes = [name for name in mapping if module == name or module.startswith(name + ".")]
    if not prefixes:
        return None
    prefix = max(prefixes, key=len)
    base = root.joinpath(mapping[prefix], *module[len(prefix) :].strip(".").split(".")) if module != prefix else root / mapping[prefix]
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return base if base.is_dir() else None


@functools.cache
def _module_names(path: Path) -> frozenset[str]:
    return frozenset(_bound_names(ast.parse(path.read_text(encoding="utf-8")).body))


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """Names a module binds at top level (also inside top-level if/try blocks)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try)):
            names |= _bound_names(node.body + node.orelse + getattr(node, "finalbody", []) + [s for h in getattr(node, "handlers", []) for s in h.body])
    return names


def resolve(module: str, root: Path = ROOT, mapping: dict[str, str] | None = None) -> Path | None:
    """The file behind `module`, or behind its parent when the last part is a name the parent module binds
    (`from pkg.mod import fn` is read as `pkg.mod.fn`)."""
    found = module_path(module, root, mapping)
    if found is not None:
        return found
    parent, _, name = module.rpartition(".")
    owner = module_path(parent, root, mapping) if parent else None
    if owner is not None and owner.suffix == ".py" and name in _module_names(owner):
        return owner
    return None


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


def layer_of_file(path: Path, root: Path = ROOT) -> tuple[str, str | None] | None:
    """(layer, benchmark or None) of a file of the tree; None for the package root (lmms_tasks/*.py)."""
    rel = path.relative_to(root).parts
    if rel[0] == MAPPING["lmms_tasks"] and len(rel) > 2 and rel[1] in BENCHMARKS:
        return "tasks", rel[1]
    if rel[0] != MAPPING["lmms_tasks.utils"] or len(rel) < 3:
        return None
    if rel[1] in BENCHMARKS:
        return "benchmarks", rel[1]
    for folders, layer in LAYER_FOLDERS.items():
        if rel[1 : 1 + len(folders)] == folders:
            return layer, None
    return "unknown", rel[1]


def installed(path: Path, root: Path = ROOT) -> bool:
    """Whether a file of the tree goes into the wheel: under a mapped folder, outside every not-installed package."""
    left_out = [module_path(name, root) for name in NOT_INSTALLED]
    return any(path.is_relative_to(root / folder) for folder in MAPPING.values()) and not any(
        folder is not None and path.is_relative_to(folder.parent if folder.name == "__init__.py" else folder) for folder in left_out
    )


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module of ours a file imports, at any depth (`from lmms_tasks.utils import compat` counts as
    `lmms_tasks.utils.compat`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name == "lmms_tasks" or name.startswith("lmms_tasks.")]


def violations(rules: dict[str, set[str]], files: list[Path], root: Path = ROOT) -> list[str]:
    """Imports that resolve to no file, cross the layer table, or reach a developer tool from the wheel.
    `files` lie under `root`; what they import is resolved in the real tree."""
    problems = []
    for path in files:
        own = layer_of_file(path, root)
        for line, module in imported_modules(path):
            where = f"{path.relative_to(root)}:{line} imports {module}"
            target_file = resolve(module)
            if target_file is None:
                problems.append(f"{where}: resolves to no file through setup.cfg's package_dir {MAPPING}")
                continue
            if installed(path, root) and not installed(target_file):
                problems.append(f"{where}: a developer tool (not in the wheel) imported by a file the wheel installs")
                continue
            target = layer_of_file(target_file)
            if own is None or target is None:
                continue
            (layer, bench), (target_layer, target_bench) = own, target
            if target_layer == "unknown":
                problems.append(f"{where}: {target_bench!r} is in no layer of docs/DEVELOPING.md")
            elif target_layer == "benchmarks" and layer in ("tasks", "benchmarks"):
                if target_bench != bench:
                    problems.append(f"{where}: another benchmark's library")
            elif target_layer != layer and target_layer not in rules.get(layer, set()):
                problems.append(f"{where}: {layer} may not import {target_layer}")
    return problems


def python_files(*bases: str) -> list[Path]:
    return sorted(p for base in bases for p in (ROOT / base).rglob("*.py") if "__pycache__" not in p.parts)


def test_the_tree_follows_the_layer_table() -> None:
    rules = layer_rules(DOC.read_text(encoding="utf-8"))
    assert set(rules) == set(LAYER_NAMES.values())
    assert violations(rules, python_files("utils", "lmms_tasks")) == []


def test_every_import_path_of_the_repository_names_a_file_through_the_mapping() -> None:
    """Tests, benchmarks, YAML `!function` tags and the scripts' `-m` modules included: a reader or a tool
    that does not install the package finds each of them through setup.cfg's package_dir."""
    missing = [f"{p.relative_to(ROOT)}:{line}: {module}" for p in python_files("tests", "bench") for line, module in imported_modules(p) if resolve(module) is None]
    yaml_files = [p for p in (ROOT / MAPPING["lmms_tasks"]).rglob("*") if p.is_file() and (p.suffix == ".yaml" or p.name.endswith("_yaml"))]
    yaml_files += [p for p in (ROOT / MAPPING["lmms_tasks.yaml_templates"]).iterdir() if p.is_file()]
    tags = [(p, m) for p in yaml_files for m in FUNCTION_TAG.findall(p.read_text(encoding="utf-8"))]
    runs = [(p, m) for p in (ROOT / "scripts").glob("*.sh") for m in MODULE_RUN.findall(p.read_text(encoding="utf-8"))]
    missing += [f"{p.relative_to(ROOT)}: {m}" for p, m in tags + runs if resolve(m) is None]
    assert len(tags) > 20 and runs and missing == []


def test_the_mapping_matches_the_folders_and_the_yaml_templates_link() -> None:
    """Every mapped folder exists, with `__init__.py` where it holds Python; the task YAMLs reach
    yaml_templates/ through lmms_tasks/yaml_templates (a symlink in the repository, a folder in the wheel),
    which must point at the folder the mapping names."""
    assert {"lmms_tasks", "lmms_tasks.utils", "lmms_tasks.yaml_templates"} <= set(MAPPING)
    for name, folder in MAPPING.items():
        assert (ROOT / folder).is_dir(), f"setup.cfg maps {name} to {folder}/, which does not exist"
        if any((ROOT / folder).glob("*.py")):
            assert (ROOT / folder / "__init__.py").is_file(), f"{folder}/ holds modules but no __init__.py"
    for name, folder in MAPPING.items():
        parent, _, last = name.rpartition(".")
        natural = ROOT / MAPPING[parent] / last if parent in MAPPING else None
        if natural is not None and (natural.exists() or natural.is_symlink()):
            assert natural.resolve() == (ROOT / folder).resolve(), f"{natural.relative_to(ROOT)} is not {folder}/"
    link = ROOT / MAPPING["lmms_tasks"] / "yaml_templates"
    assert link.is_symlink() and link.resolve() == (ROOT / MAPPING["lmms_tasks.yaml_templates"]).resolve()
    for name in NOT_INSTALLED:
        assert module_path(name) is not None, f"setup.cfg leaves out {name}, which does not exist"


def test_developer_commands_reach_only_developer_tools() -> None:
    """`python -m lmms_tasks` runs its developer commands from modules the wheel leaves out (so a wheel
    install answers with the one-line message, tests/foundation/test_packaging.py), and nothing else."""
    from lmms_tasks.__main__ import DEVELOPER_COMMANDS

    assert DEVELOPER_COMMANDS
    for command, module in DEVELOPER_COMMANDS.items():
        path = resolve(module)
        assert path is not None and not installed(path), f"{command}: {module} is not a developer tool left out of the wheel"


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        ("utils/services/judge_extra.py", "from lmms_tasks.utils import compat\n", "services may not import compat"),
        ("utils/services/judge_extra.py", "def f():\n    from lmms_tasks.utils.compat import exit_status\n", "services may not import compat"),
        ("utils/vlm2_bench/extra.py", "from lmms_tasks.utils.commands.score import rescore\n", "benchmarks may not import commands"),
        ("utils/vlm2_bench/extra.py", "import lmms_tasks.utils.haerae_vision.metrics\n", "another benchmark's library"),
        ("utils/compat/extra.py", "from lmms_tasks.utils.humaneval_v import hooks\n", "compat may not import benchmarks"),
        ("utils/commands/extra.py", "from lmms_tasks.utils.testing import demo\n", "a developer tool (not in the wheel)"),
        ("utils/commands/report/extra.py", "from lmms_tasks.utils.commands.upstream.series import patch_files\n", "a developer tool (not in the wheel)"),
        ("lmms_tasks/vlm2_bench/extra.py", "def f():\n    import lmms_tasks.utils.testing.openai_server\n", "a developer tool (not in the wheel)"),
        ("utils/testing/extra.py", "from lmms_tasks.utils.commands.upstream.series import patch_files\n", None),
        ("utils/mystery/extra.py", "x = 1\n", None),
        ("utils/services/extra.py", "from lmms_tasks.utils.services.cache import no_such_name\n", "resolves to no file"),
        ("utils/services/extra.py", "from lmms_tasks.utils.mystery import x\n", "resolves to no file"),
        ("utils/services/extra.py", "import lmms_tasks.utils.services.cache\n", None),
    ],
)
def test_a_forbidden_import_is_reported(where: str, source: str, expected: str | None, tmp_path: Path) -> None:
    """The checker catches each kind of violation (planted in a copy of the tree's shape)."""
    file = tmp_path / where
    file.parent.mkdir(parents=True)
    file.write_text(source, encoding="utf-8")
    rules = layer_rules(DOC.read_text(encoding="utf-8"))
    found = violations(rules, [file], root=tmp_path)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


def test_a_module_moved_without_updating_the_mapping_is_reported(tmp_path: Path) -> None:
    """utils/ renamed in a copy of the tree while setup.cfg still maps lmms_tasks.utils to utils: the imports of
    the tree resolve to nothing; with the mapping updated, they resolve again."""
    for folder in MAPPING.values():
        if not (ROOT / folder).is_symlink():
            (tmp_path / folder).symlink_to(ROOT / folder, target_is_directory=True)
    (tmp_path / MAPPING["lmms_tasks.utils"]).rename(tmp_path / "lib")
    imports = [module for p in python_files(MAPPING["lmms_tasks"]) for _, module in imported_modules(p) if module.startswith("lmms_tasks.utils.")]
    assert imports and all(resolve(m, tmp_path) is None for m in imports)
    moved = {**MAPPING, "lmms_tasks.utils": "lib"}
    assert all(resolve(m, tmp_path, moved) is not None for m in imports)
