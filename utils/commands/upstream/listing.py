"""The exported files, one Markdown line per folder, as `export-upstream --tree --list` prints them (`parse` reads
such a block back; the stack's own listing is `stack.listing`)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

START, END = "<!-- file-list:start -->", "<!-- file-list:end -->"
_LINE = re.compile(r"^- `(?P<folder>[^`]*/)` \((?P<count>\d+)\): (?P<names>.+)$")
_NAME = re.compile(r"`([^`]+)`")
_MODIFIED = re.compile(r"`([^`]+)` \(modified: \+(\d+) lines\)")


def markdown(files: Iterable[str], catalog: str | None = None, catalog_lines: int = 0) -> str:
    """Group `files` (paths relative to the checkout root) by folder; `catalog`, when given, is the file the
    export edits rather than writes (lmms-eval's `current_tasks.md`), shown with the number of lines added."""
    folders: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for path in files:
        folder, _, name = path.rpartition("/")
        folders[f"{folder}/"].append((name, f"`{name}`"))
    if catalog:
        folder, _, name = catalog.rpartition("/")
        folders[f"{folder}/"].append((name, f"`{name}` (modified: +{catalog_lines} lines)"))
    lines = []
    for folder in sorted(folders):
        entries = sorted(folders[folder])
        lines.append(f"- `{folder}` ({len(entries)}): " + ", ".join(shown for _, shown in entries))
    return "\n".join(lines)


def parse(text: str) -> tuple[set[str], dict[str, int]]:
    """The new files and the modified ones (with their added lines) of the block between the markers of `text`."""
    try:
        block = text.split(START, 1)[1].split(END, 1)[0]
    except IndexError:
        raise ValueError(f"no {START} ... {END} block") from None
    files: set[str] = set()
    modified: dict[str, int] = {}
    for line in filter(None, (raw.strip() for raw in block.splitlines())):
        match = _LINE.match(line)
        if match is None:
            raise ValueError(f"not a file-list line: {line!r}")
        folder, rest = match["folder"], match["names"]
        edited = _MODIFIED.findall(rest)
        names = _NAME.findall(_MODIFIED.sub("", rest))
        if len(names) + len(edited) != int(match["count"]):
            raise ValueError(f"{folder}: the count ({match['count']}) does not match the {len(names) + len(edited)} names listed")
        files.update(folder + n for n in names)
        modified.update((folder + n, int(added)) for n, added in edited)
    return files, modified
