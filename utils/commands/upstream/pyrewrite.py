"""Find which of our modules a Python file needs, and rewrite its references to their exported names.

Both are done on the syntax tree (never by regex on text), and edits are applied at the exact byte spans
of the nodes, so comments, `# fmt: skip` markers and the rest of the file stay untouched:
- `from pkg.x import y` / `import pkg.x [as z]` (also inside functions) and relative imports of ours;
- dotted attribute chains rooted at the package name (`pkg.utils.x.f` after `import pkg.utils.x`);
- strings that name one of our modules (`"pkg.utils.resources"` for importlib.resources, `mock.patch`
  targets) and f-strings that start with a package prefix (`f"pkg.utils.testing.fixtures.{name}"`).
A bare `"pkg"` string is left alone: it usually means the `python -m pkg` command, not an import.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lmms_tasks.utils.commands.upstream.sources import ExportError, ModuleMap

_FILE_NAME = re.compile(r"[\w.-]+\.[A-Za-z0-9]{1,8}")


@dataclass
class Rewritten:
    """A rewritten file: its new text, the modules of ours it references, and mentions left as they were."""

    text: str
    dependencies: set[str] = field(default_factory=set)
    leftovers: list[str] = field(default_factory=list)
    top_level_names: set[str] = field(default_factory=set)  # names imported from the package's own __init__
    file_names: set[str] = field(default_factory=set)  # string constants shaped like a file name ("x_child.py")


@dataclass
class _Edit:
    start: int
    end: int
    text: str


class _FileRewriter:
    def __init__(self, source: str, filename: str, module: str | None, mapping: ModuleMap) -> None:
        self.source = source
        self.data = source.encode("utf-8")
        self.filename = filename
        self.module = module
        self.mapping = mapping
        self.tree = mapping.tree
        self.pkg = mapping.tree.package
        self.edits: list[_Edit] = []
        self.deps: set[str] = set()
        self.leftovers: list[str] = []
        self.top_level_names: set[str] = set()
        self.file_names: set[str] = set()
        self._dotted = re.compile(rf"{re.escape(self.pkg)}(\.[A-Za-z_]\w*)+")
        starts = [0]
        for line in self.data.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        self._line_starts = starts

    # -- positions -------------------------------------------------------------------------------
    def _span(self, node: ast.AST) -> tuple[int, int]:
        return self._line_starts[node.lineno - 1] + node.col_offset, self._line_starts[node.end_lineno - 1] + node.end_col_offset

    def _segment(self, node: ast.AST) -> str:
        start, end = self._span(node)
        return self.data[start:end].decode("utf-8")

    def _where(self, node: ast.AST) -> str:
        return f"{self.filename}:{getattr(node, 'lineno', '?')}"

    # -- name resolution -------------------------------------------------------------------------
    def _longest_module(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            candidate = ".".join(parts[:n])
            if self.tree.module_file(candidate) is not None:
                return candidate
        return None

    def _require(self, dotted: str, node: ast.AST) -> str:
        """The longest prefix of `dotted` that is one of our modules (recorded as a dependency)."""
        found = self._longest_module(dotted)
        if found is None:
            raise ExportError(f"{self._where(node)}: {dotted!r} is not a module of {self.pkg} that exists in the source tree")
        self.deps.add(found)
        return found

    def _require_exact(self, module: str, node: ast.AST) -> None:
        if self.tree.module_file(module) is None:
            raise ExportError(f"{self._where(node)}: {module!r} is not a module of {self.pkg} that exists in the source tree")
        self.deps.add(module)

    def _target(self, dotted: str, node: ast.AST) -> str:
        try:
            return self.mapping.target(dotted)
        except ExportError as exc:
            raise ExportError(f"{self._where(node)}: {exc}") from None

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        """The absolute module of an ImportFrom (relative imports resolved against this file's package)."""
        if node.level == 0:
            return node.module
        if self.module is None:
            return None
        is_pkg = self.tree.is_package(self.module)
        base = self.module.split(".") if is_pkg else self.module.split(".")[:-1]
        if node.level - 1 > len(base) - 1:
            raise ExportError(f"{self._where(node)}: relative import goes above the package root")
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    # -- rewriting -------------------------------------------------------------------------------
    def _import_from(self, node: ast.ImportFrom, indent: str) -> None:
        module = self._absolute(node)
        if module is None or not self.mapping.is_ours(module):
            return
        statements: dict[str, list[str]] = {}
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if alias.name != "*" and self.tree.module_file(full) is not None:
                self.deps.add(full)
                parent, _, last = self._target(full, node).rpartition(".")
                local = alias.asname or alias.name
                statements.setdefault(parent, []).append(last if local == last else f"{last} as {local}")
            else:
                self._require_exact(module, node)
                if module == self.pkg:
                    self.top_level_names.add(alias.name)
                name = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
                statements.setdefault(self._target(module, node), []).append(name)
        text = f"\n{indent}".join(f"from {parent} import {', '.join(names)}" for parent, names in statements.items())
        start, end = self._span(node)
        self.edits.append(_Edit(start, end, text))

    def _import(self, node: ast.Import, indent: str) -> None:
        if not any(self.mapping.is_ours(alias.name) for alias in node.names):
            return
        parts = []
        for alias in node.names:
            if self.mapping.is_ours(alias.name):
                self._require_exact(alias.name, node)
                target = self._target(alias.name, node)
                parts.append(f"import {target}" + (f" as {alias.asname}" if alias.asname else ""))
            else:
                parts.append(f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""))
        start, end = self._span(node)
        self.edits.append(_Edit(start, end, f"\n{indent}".join(parts)))

    def _attribute_chain(self, node: ast.Attribute) -> None:
        names: list[str] = []
        links: list[ast.expr] = []
        current: ast.expr = node
        while isinstance(current, ast.Attribute):
            names.append(current.attr)
            links.append(current)
            current = current.value
        if not (isinstance(current, ast.Name) and current.id == self.pkg):
            return
        names.append(current.id)
        links.append(current)
        names.reverse()
        links.reverse()
        dotted = ".".join(names)
        module = self._require(dotted, node)
        upto = links[module.count(".")]
        start, _ = self._span(current)
        _, end = self._span(upto)
        self.edits.append(_Edit(start, end, self._target(module, node)))

    def _string(self, node: ast.Constant) -> None:
        value = node.value
        if _FILE_NAME.fullmatch(value):
            self.file_names.add(value)
        if not self._dotted.fullmatch(value):
            return
        module = self._longest_module(value)
        if module is None:
            self.leftovers.append(f"{self._where(node)}: string {value!r} names no module of ours; left as is")
            return
        self.deps.add(module)
        new = self._target(module, node) + value[len(module) :]
        start, end = self._span(node)
        segment = self.data[start:end].decode("utf-8")
        if value not in segment:
            raise ExportError(f"{self._where(node)}: cannot rewrite the string {value!r} (escaped or split across literals)")
        self.edits.append(_Edit(start, end, segment.replace(value, new, 1)))

    def _fstring(self, node: ast.JoinedStr) -> None:
        head = node.values[0] if node.values else None
        if not (isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value.startswith(self.pkg + ".")):
            return
        prefix = head.value.rsplit(".", 1)[0]
        if not self.tree.is_package(prefix):
            raise ExportError(f"{self._where(node)}: f-string {head.value!r}... does not start with a package of ours")
        target = self._target(prefix, node)
        package_dir = self.tree.module_file(prefix).parent  # type: ignore[union-attr]
        self.deps.add(prefix)
        for child in sorted(package_dir.iterdir()):
            name = child.stem if child.suffix == ".py" else child.name
            if name.startswith("__") or not (child.suffix == ".py" or (child / "__init__.py").is_file()):
                continue
            if self._target(f"{prefix}.{name}", node) != f"{target}.{name}":
                raise ExportError(f"{self._where(node)}: dynamic import under {prefix!r} crosses export locations")
            self.deps.add(f"{prefix}.{name}")
        start, end = self._span(node)
        segment = self.data[start:end].decode("utf-8")
        self.edits.append(_Edit(start, end, segment.replace(prefix + ".", target + ".", 1)))

    def run(self) -> Rewritten:
        try:
            module_ast = ast.parse(self.source, filename=self.filename)
        except SyntaxError as exc:
            raise ExportError(f"{self.filename}:{exc.lineno}: cannot parse: {exc.msg}") from None
        inner: set[int] = set()
        for node in ast.walk(module_ast):
            if isinstance(node, ast.Attribute):
                inner.add(id(node.value))
            elif isinstance(node, ast.JoinedStr):
                inner.update(id(v) for v in node.values)
                inner.update(id(v) for v in ast.walk(node) if isinstance(v, ast.Constant))
        for node in ast.walk(module_ast):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                line = self.data[self._line_starts[node.lineno - 1] :].decode("utf-8", "replace")
                indent = line[: len(line) - len(line.lstrip(" \t"))]
                (self._import_from if isinstance(node, ast.ImportFrom) else self._import)(node, indent)  # type: ignore[arg-type]
            elif isinstance(node, ast.Attribute) and id(node) not in inner:
                self._attribute_chain(node)
            elif isinstance(node, ast.JoinedStr):
                self._fstring(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner:
                self._string(node)
        return Rewritten(self._apply(), self.deps, self.leftovers, self.top_level_names, self.file_names)

    def _apply(self) -> str:
        data = self.data
        last_start = len(data) + 1
        for edit in sorted(self.edits, key=lambda e: e.start, reverse=True):
            if edit.end > last_start:
                raise ExportError(f"{self.filename}: overlapping rewrites at byte {edit.start}")
            data = data[: edit.start] + edit.text.encode("utf-8") + data[edit.end :]
            last_start = edit.start
        return data.decode("utf-8")


def rewrite_python(source: str, filename: str, module: str | None, mapping: ModuleMap) -> Rewritten:
    """Rewrite one file's references to our modules; `module` is its own dotted name (for relative imports)."""
    result = _FileRewriter(source, filename, module, mapping).run()
    _check_clean(result.text, filename, mapping)
    return result


def _check_clean(text: str, filename: str, mapping: ModuleMap) -> None:
    """No import of our package may survive: the exported code must run without it installed."""
    for node in ast.walk(ast.parse(text, filename=filename)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if mapping.is_ours(name):
                raise ExportError(f"{filename}:{node.lineno}: import of {name!r} survived the rewrite")


def read_python(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"{path}: cannot read: {exc}") from None


def rewrite_prose(text: str, mapping: ModuleMap, exported: Callable[[str], bool] = lambda module: True) -> tuple[str, list[str]]:
    """Docs and comments: our dotted module names and file paths become the exported ones, and the
    `--include_path "$(python -m pkg path)"` argument disappears (the tasks are built in upstream).
    Returns the text and the mentions of the package that remain (e.g. `python -m pkg score`)."""
    tree = mapping.tree
    pkg = re.escape(tree.package)
    text = re.sub(rf"\s--include_path\s+\"?\$\(python -m {pkg} path\)\"?", "", text)

    def dotted(match: re.Match[str]) -> str:
        value = match.group(0)
        parts = value.split(".")
        for n in range(len(parts), 0, -1):
            module = ".".join(parts[:n])
            if n > 1 and tree.module_file(module) is not None and exported(module):
                try:
                    return mapping.target(module) + value[len(module) :]
                except ExportError:
                    return value
        return value

    def path(match: re.Match[str]) -> str:
        value = match.group(0)
        module = tree.module_of_file(_source_path(tree, value))
        if module is None or tree.module_file(module) is None or not exported(module):
            return value
        try:
            return mapping.target_path(module, tree.is_package(module))
        except ExportError:
            return value

    text = re.sub(rf"\b{pkg}(?:\.[A-Za-z_]\w*)+", dotted, text)
    text = re.sub(rf"\b{pkg}/[\w/]+\.py\b", path, text)
    names = f"{pkg}|{re.escape(tree.package.replace('_', '-'))}"  # the import name and the distribution name
    left = sorted({line.strip() for line in text.splitlines() if re.search(rf"(?<![./\w-])(?:{names})\b", line)})
    return text, left


def rewrite_python_prose(text: str, mapping: ModuleMap, exported: Callable[[str], bool] = lambda module: True) -> tuple[str, list[str]]:
    """`rewrite_prose` on a Python file's comments and string literals (docstrings, scripts run with `-c`,
    `"!function pkg.…"` prefixes), which the syntax-tree rewrite leaves alone unless a string is exactly a
    module name. Code is untouched. Returns the text and the mentions of the package that remain."""
    lines = text.splitlines(keepends=True)
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []
    left: list[str] = []
    dotted = re.compile(rf"(?<![./\w-]){re.escape(mapping.tree.package)}\.[A-Za-z_]")
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in (tokenize.COMMENT, tokenize.STRING) or mapping.tree.package not in token.string:
            continue
        rewritten, remaining = rewrite_prose(token.string, mapping, exported)
        left += [line for line in remaining if dotted.search(line)]  # `python -m pkg …` in a message is not a reference
        if rewritten != token.string:
            edits.append((token.start, token.end, rewritten))
    for (start_row, start_col), (end_row, end_col), rewritten in reversed(edits):
        head = lines[start_row - 1][:start_col]
        tail = lines[end_row - 1][end_col:]
        lines[start_row - 1 : end_row] = [head + rewritten + tail]
    return "".join(lines), left


def _source_path(tree, rel: str) -> Path:  # type: ignore[no-untyped-def]
    """`pkg/utils/x.py` (as written in docs) -> the real file, `pkg/<bench>/utils.py` likewise."""
    parts = rel.split("/")[1:]
    if parts and parts[0] == "utils":
        return tree.library_dir.joinpath(*parts[1:])
    return tree.package_dir.joinpath(*parts)


UPSTREAM_SKIP_MARKER = "include_path_only"
# Tests kept out of the export though they would hold upstream: `@pytest.mark.not_exported(reason=...)` on a test
# (or `pytestmark = pytest.mark.not_exported(reason=...)` for a whole file), e.g. the cases of a suite beyond one
# per class, which would make lmms-eval's test run slow; they still run here.
NOT_EXPORTED_MARKER = "not_exported"


def drop_marked_tests(source: str, filename: str, marker: str | tuple[str, ...] = (UPSTREAM_SKIP_MARKER, NOT_EXPORTED_MARKER)) -> tuple[str, list[str]]:
    """Remove test functions/classes decorated with `@pytest.mark.<marker>`, and fixtures decorated with a
    plain `@<marker>` (pytest marks cannot decorate fixtures): checks that only hold while the tasks live
    outside lmms-eval (e.g. "no built-in task has our names") are false once merged, and tests marked
    `not_exported` stay in lmms-tasks."""
    markers = (marker,) if isinstance(marker, str) else marker
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ExportError(f"{filename}:{exc.lineno}: cannot parse: {exc.msg}") from None
    lines = source.splitlines(keepends=True)
    dropped: list[tuple[int, int, str]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [ast.unparse(d).split("(")[0] for d in node.decorator_list]
            if any(name.endswith(f"mark.{m}") or name == m for name in names for m in markers):
                start = min(d.lineno for d in node.decorator_list)
                dropped.append((start, node.end_lineno or start, node.name))
    for start, end, _ in sorted(dropped, reverse=True):
        del lines[start - 1 : end]
    return "".join(lines), [name for _, _, name in sorted(dropped)]


def not_exported_reason(source: str, filename: str) -> str | None:
    """The reason of a module-level `pytestmark = pytest.mark.not_exported(reason=...)` (or in a list of
    marks): the whole file stays in lmms-tasks. None when the file has no such mark."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ExportError(f"{filename}:{exc.lineno}: cannot parse: {exc.msg}") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for mark in marks:
                call = mark if isinstance(mark, ast.Call) else None
                name = ast.unparse(call.func if call else mark)
                if name.endswith(f"mark.{NOT_EXPORTED_MARKER}"):
                    reason = next((k.value for k in (call.keywords if call else []) if k.arg == "reason"), None)
                    reason = reason or (call.args[0] if call and call.args else None)
                    if not (isinstance(reason, ast.Constant) and isinstance(reason.value, str) and reason.value):
                        raise ExportError(f"{filename}:{node.lineno}: not_exported needs a reason (a string)")
                    return reason.value
    return None


COMPAT_PACKAGE = "utils.compat"  # below the package: lmms_tasks.utils.compat, the 0.7.3 backports


def drop_compat(source: str, filename: str, package: str) -> str:
    """Remove what ties a file to our compat layer (never exported: the patch series replaces it upstream):
    top-level `import`s of `<package>.utils.compat` (or of `compat` from `<package>.utils`) and top-level
    calls through the names they bind (`compat.activate()`). Any other use of those names is an error."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ExportError(f"{filename}:{exc.lineno}: cannot parse: {exc.msg}") from None
    compat = f"{package}.{COMPAT_PACKAGE}"
    bound: set[str] = set()
    spans: list[tuple[int, int]] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module == compat or node.module.startswith(compat + "."):
                bound |= {a.asname or a.name for a in node.names}
                spans.append((node.lineno, node.end_lineno or node.lineno))
            elif node.module == compat.rsplit(".", 1)[0] and any(a.name == "compat" for a in node.names):
                if len(node.names) > 1:
                    raise ExportError(f"{filename}:{node.lineno}: import compat on its own line (it is not exported)")
                bound |= {a.asname or a.name for a in node.names}
                spans.append((node.lineno, node.end_lineno or node.lineno))
        elif isinstance(node, ast.Import) and any(a.name == compat or a.name.startswith(compat + ".") for a in node.names):
            raise ExportError(f"{filename}:{node.lineno}: use `from {compat.rsplit('.', 1)[0]} import compat` (it is dropped on export)")
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            root = node.value.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                spans.append((node.lineno, node.end_lineno or node.lineno))
    dropped = {line for start, end in spans for line in range(start, end + 1)}
    lines = [line for number, line in enumerate(source.splitlines(keepends=True), start=1) if number not in dropped]
    result = "".join(lines)
    if bound:
        remaining = ast.parse(result, filename=filename)
        used = sorted({n.id for n in ast.walk(remaining) if isinstance(n, ast.Name) and n.id in bound})
        if used:
            raise ExportError(f"{filename}: uses {used} from the compat layer beyond importing it and calling it at top level")
    return result


EXPORTED_NAME = "lmms_eval"  # what the project's own name becomes in exported text


def project_names(package: str) -> tuple[str, str]:
    """The two spellings of the package's name the rename handles: the identifier and its environment prefix."""
    return package, f"{package.upper()}_"


def rename_project(text: str, package: str, hyphenated: bool = False) -> str:
    """Exported text (code, YAML, Markdown; after the module rewrites) with no name of ours left in identifiers,
    environment variables, cache directories or file prefixes: `<PKG>_X` environment variables become
    `LMMS_EVAL_X`, and `<pkg>` (as in `~/.cache/<pkg>/judge`, `<pkg>_sbx_`, `<pkg> sandbox:`) becomes `lmms_eval`;
    with `hyphenated`, the distribution's name too, in its case (`X-Lmms-Tasks-Preflight` -> `X-Lmms-Eval-Preflight`):
    for lmms-eval's own files, where no text is about this repository (prose that is, is the task README's business)."""
    name, env = project_names(package)
    text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(env)}", f"{EXPORTED_NAME.upper()}_", text)
    text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", EXPORTED_NAME, text)
    if hyphenated:
        ours, theirs = name.split("_"), EXPORTED_NAME.split("_")
        if len(ours) == len(theirs):
            pattern = rf"(?<![A-Za-z0-9])({'-'.join(map(re.escape, ours))})(?![A-Za-z0-9])"

            def same_case(match: re.Match[str]) -> str:
                parts = match.group(1).split("-")
                return "-".join(t.upper() if p.isupper() else t.capitalize() if p[:1].isupper() else t for p, t in zip(parts, theirs))

            text = re.sub(pattern, same_case, text, flags=re.IGNORECASE)
    return text


def exported_env(env: dict[str, str], package: str) -> dict[str, str]:
    """`env` with each of our `<PKG>_X` variables also under the name the exported code reads (`rename_project`)."""
    _, prefix = project_names(package)
    return {**env, **{rename_project(key, package): value for key, value in env.items() if key.startswith(prefix)}}
