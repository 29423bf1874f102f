"""Make a benchmark folder's YAML self-contained and point its `!function` tags at the exported modules.

`include:` entries that leave the folder (`../yaml_templates/<x>`) are inlined as text, top-level key by
key, so comments and `!function` tags survive; entries inside the folder (`_default_template_yaml`) stay.
lmms-eval merges includes with the *first* listed entry winning and the including file winning over all
(`lmms_eval.utils.load_yaml_config`), so an inlined key would change meaning if a kept include that
takes precedence over it defined it too: that case is refused. Every result is checked by loading the
original and the exported file with that same merge rule and comparing the configurations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lmms_tasks.utils.commands.upstream.sources import ExportError

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
_FUNCTION_TAG = re.compile(r"(!function\s+)([A-Za-z_][\w.]*)")


class _Loader(yaml.SafeLoader):
    """Keeps `!function x` as the string "!function x": nothing is imported while comparing configs."""


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def is_yaml_file(path: Path) -> bool:
    """A task YAML (`*.yaml`) or an extensionless template (`*_yaml`, e.g. `_default_template_yaml`)."""
    return path.suffix == ".yaml" or path.name.endswith("_yaml")


def load_plain(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            loaded = yaml.load(fh, Loader=_Loader)
    except (OSError, yaml.YAMLError) as exc:
        raise ExportError(f"{path}: cannot read YAML: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ExportError(f"{path}: top level is not a mapping")
    return loaded


def _includes(config: dict[str, Any], path: Path) -> list[str]:
    value = config.get("include")
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ExportError(f"{path}: `include:` must be a string or a list of strings")


def _resolve_include(entry: str, yaml_dir: Path) -> Path:
    path = (yaml_dir / entry).resolve()
    if not path.is_file():
        raise ExportError(f"{yaml_dir}: included file {entry!r} does not exist")
    return path


def load_merged(path: Path) -> dict[str, Any]:
    """A YAML with its includes merged as lmms-eval merges them (first include wins; the file wins over all)."""
    config = load_plain(path)
    merged: dict[str, Any] = {}
    for entry in reversed(_includes(config, path)):
        merged.update(load_merged(_resolve_include(entry, path.parent)))
    config.pop("include", None)
    merged.update(config)
    return merged


@dataclass
class _Blocks:
    """A YAML file split at its top-level keys: the leading comment, then (key, text) in file order."""

    header: str
    blocks: list[tuple[str, str]]


def _split(text: str, path: Path) -> _Blocks:
    lines = text.splitlines(keepends=True)
    header: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    pending: list[str] = []
    for line in lines:
        match = _KEY.match(line)
        if match:
            blocks.append((match.group(1), pending + [line]))
            pending = []
        elif not blocks:
            if line.strip() and not line.lstrip().startswith("#"):
                raise ExportError(f"{path}: cannot inline: content before the first top-level key ({line.strip()!r})")
            header.append(line)
        elif not line.strip() or line.startswith("#"):
            pending.append(line)
        else:
            blocks[-1][1].extend(pending + [line])
            pending = []
    if blocks:
        blocks[-1][1].extend(pending)
    else:
        header.extend(pending)
    result = [(key, "".join(body)) for key, body in blocks]
    if len({k for k, _ in result}) != len(result):
        raise ExportError(f"{path}: a top-level key appears twice")
    return _Blocks("".join(header), result)


def _template_blocks(path: Path, inside: Callable[[Path], bool]) -> list[tuple[str, str]]:
    """The blocks a template contributes, its own out-of-folder includes inlined first (first entry wins)."""
    blocks = _split(path.read_text(encoding="utf-8"), path)
    own = {k for k, _ in blocks.blocks}
    entries = _includes(load_plain(path), path)
    result: list[tuple[str, str]] = []
    seen: set[str] = set(own)
    for entry in entries:
        target = _resolve_include(entry, path.parent)
        if inside(target):
            raise ExportError(f"{path}: a template outside the benchmark folder includes {entry!r} from inside it")
        for key, body in _template_blocks(target, inside):
            if key not in seen:
                result.append((key, body))
                seen.add(key)
    own_blocks = [(k, b) for k, b in blocks.blocks if k != "include"]
    if blocks.header and own_blocks:  # the template's explanatory comment travels with its keys
        own_blocks[0] = (own_blocks[0][0], blocks.header + own_blocks[0][1])
    return result + own_blocks


def rewrite_tags(text: str, rewrite: Callable[[str], str]) -> str:
    """Point `!function a.b.fn` at its exported module; `!function utils.fn` (folder-relative) is kept."""
    return _FUNCTION_TAG.sub(lambda m: m.group(1) + rewrite(m.group(2)), text)


def function_tags(text: str) -> list[str]:
    return [m.group(2) for m in _FUNCTION_TAG.finditer(text)]


def export_yaml(path: Path, folder: Path, rewrite: Callable[[str], str]) -> str:
    """The exported text of one YAML of `folder`: out-of-folder includes inlined, tags rewritten, verified."""
    folder = folder.resolve()

    def inside(p: Path) -> bool:
        return p.resolve().parent == folder

    text = path.read_text(encoding="utf-8")
    config = load_plain(path)
    entries = _includes(config, path)
    external = [e for e in entries if not inside(_resolve_include(e, path.parent))]
    if external:
        text = _inline(path, text, entries, external, inside)
    text = rewrite_tags(text, rewrite)
    _verify(path, text, rewrite)
    return text


def _inline(path: Path, text: str, entries: list[str], external: list[str], inside: Callable[[Path], bool]) -> str:
    blocks = _split(text, path)
    own = {k for k, _ in blocks.blocks}
    kept = [e for e in entries if e not in external]
    inlined: list[tuple[str, str]] = []
    seen = set(own)
    for entry in external:
        source = _resolve_include(entry, path.parent)
        for key, body in _template_blocks(source, inside):
            if key not in seen:
                inlined.append((key, body))
                seen.add(key)
    # A kept include listed before an external one wins over it in lmms-eval; once inlined the external
    # keys would win instead. Refuse when such a kept include defines an inlined key.
    for entry in kept:
        if entries.index(entry) < max(entries.index(e) for e in external):
            shadowing = set(load_merged(_resolve_include(entry, path.parent))) & {k for k, _ in inlined}
            if shadowing:
                raise ExportError(f"{path}: inlining {external} would override {sorted(shadowing)} from {entry!r}; list {entry!r} after them")
    pieces: list[str] = [blocks.header]
    for key, body in blocks.blocks:
        if key != "include":
            pieces.append(body)
            continue
        leading = "".join(line for line in body.splitlines(keepends=True) if line.startswith("#") or not line.strip())
        pieces.append(leading)
        if inlined:
            names = ", ".join(Path(e).name for e in external)
            pieces.append(f"# --- keys inlined from the shared template {names} ---\n")
            pieces.extend(body for _, body in inlined)
            pieces.append("# --- end of inlined keys ---\n")
        if kept:
            pieces.append("include: " + (kept[0] if len(kept) == 1 else "[" + ", ".join(kept) + "]") + "\n")
    result = "".join(pieces)
    return result if result.endswith("\n") else result + "\n"


def _map_functions(value: Any, rewrite: Callable[[str], str]) -> Any:
    if isinstance(value, str) and value.startswith("!function "):
        return "!function " + rewrite(value[len("!function ") :].strip())
    if isinstance(value, dict):
        return {k: _map_functions(v, rewrite) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_functions(v, rewrite) for v in value]
    return value


def _verify(path: Path, exported_text: str, rewrite: Callable[[str], str]) -> None:
    """The exported YAML must load to the same configuration as the original (tags mapped)."""
    original = _map_functions(load_merged(path), rewrite)
    try:
        exported = yaml.load(exported_text, Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise ExportError(f"{path}: exported text is not valid YAML: {exc}") from None
    merged: dict[str, Any] = {}
    for entry in reversed(_includes(exported, path)):
        merged.update(_map_functions(load_merged(_resolve_include(entry, path.parent)), rewrite))
    exported.pop("include", None)
    merged.update(exported)
    if merged != original:
        differing = sorted(k for k in set(merged) | set(original) if merged.get(k) != original.get(k))
        raise ExportError(f"{path}: exported YAML does not load to the same configuration (keys {differing})")
