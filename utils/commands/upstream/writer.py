"""Write an export plan into a checkout: idempotent, and never over a file the exporter did not write.

A manifest (`lmms_eval/tasks/.lmms_tasks_export.json`) records the sha256 of every file written and the
catalog lines inserted. A planned file may be written when it is absent, already has the planned bytes,
or still has the bytes recorded in the manifest; anything else (a file of the checkout, or one of ours
edited since) is a conflict, and the export stops before writing anything unless `force` is given.
Files recorded by an earlier export and no longer planned are removed when unmodified.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from lmms_tasks.utils.commands.upstream import catalog
from lmms_tasks.utils.commands.upstream.sources import MANIFEST_NAME, ExportError
from lmms_tasks.utils.services.cache import write_atomic

MANIFEST_PATH = f"lmms_eval/tasks/{MANIFEST_NAME}"


@dataclass
class Plan:
    """What an export writes: owned files (checkout-relative posix path -> bytes) and catalog lines."""

    files: dict[str, bytes]
    catalog_lines: list[str] = field(default_factory=list)
    catalog_sections: dict[str, str] = field(default_factory=dict)
    edits_catalog: bool = True  # False: leave current_tasks.md alone (the stack's benchmark patches carry its lines)


@dataclass
class Outcome:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    catalog_changed: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed or self.catalog_changed)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_manifest(root: Path) -> dict:
    path = root / MANIFEST_PATH
    if not path.is_file():
        return {"files": {}, "catalog_lines": []}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path}: unreadable export manifest ({exc}); remove it and re-run with --force") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ExportError(f"{path}: not an lmms-tasks export manifest; remove it and re-run with --force")
    manifest.setdefault("catalog_lines", [])
    return manifest


def _new_file_mode() -> int:
    """The mode `open(path, "w")` would give a new file here: 0o666 less the umask (read without changing it
    where /proc says it; else set and restored at once)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file and a rename; the file keeps its mode, or gets a new file's (the
    temporary file's own 0o600 would make the checkout's files unreadable to anyone else)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, mode=path.stat().st_mode & 0o7777 if path.exists() else _new_file_mode())


def _prune_empty_dirs(path: Path, root: Path) -> None:
    parent = path.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def apply(root: Path, plan: Plan, force: bool = False, dry_run: bool = False) -> Outcome:
    """Bring the checkout at `root` to the plan (see the module docstring for the rules)."""
    manifest = load_manifest(root)
    recorded: dict[str, str] = manifest["files"]
    outcome = Outcome()
    conflicts: list[str] = []
    to_write: dict[str, bytes] = {}
    for rel, data in sorted(plan.files.items()):
        path = root / rel
        if not path.exists():
            to_write[rel] = data
            continue
        if not path.is_file():
            conflicts.append(f"{rel} (exists and is not a regular file)")
            continue
        current = path.read_bytes()
        if current == data:
            outcome.unchanged.append(rel)
        elif recorded.get(rel) == sha256(current) or force:
            to_write[rel] = data
        else:
            conflicts.append(f"{rel} ({'modified since the last export' if rel in recorded else 'not written by lmms-tasks'})")
    to_remove: list[str] = []
    for rel, digest in sorted(recorded.items()):
        path = root / rel
        if rel in plan.files or not path.is_file():
            continue
        if sha256(path.read_bytes()) == digest or force:
            to_remove.append(rel)
        else:
            conflicts.append(f"{rel} (exported earlier, modified since, no longer exported)")
    if conflicts:
        listing = "\n  ".join(conflicts)
        raise ExportError(f"refusing to overwrite {len(conflicts)} file(s) in {root} (use --force to overwrite):\n  {listing}")

    catalog_path = root / catalog.CATALOG_PATH
    old_catalog = catalog_path.read_text(encoding="utf-8") if catalog_path.is_file() else None
    new_catalog = catalog.patch(old_catalog, plan.catalog_lines, plan.catalog_sections, list(manifest["catalog_lines"])) if plan.edits_catalog else old_catalog
    outcome.catalog_changed = new_catalog != old_catalog
    new_manifest = {
        "generator": "python -m lmms_tasks export-upstream",
        "note": "bookkeeping of the lmms-tasks exporter; not part of a pull request",
        "files": {rel: sha256(data) for rel, data in sorted(plan.files.items())},
        "catalog_lines": list(plan.catalog_lines),
    }
    manifest_bytes = (json.dumps(new_manifest, indent=1, sort_keys=True) + "\n").encode("utf-8")
    outcome.written = sorted(to_write)
    outcome.removed = to_remove
    if dry_run:
        return outcome
    for rel, data in to_write.items():
        _write_atomic(root / rel, data)
    for rel in to_remove:
        (root / rel).unlink()
        _prune_empty_dirs(root / rel, root)
    if outcome.catalog_changed and new_catalog is not None:
        _write_atomic(catalog_path, new_catalog.encode("utf-8"))
    manifest_path = root / MANIFEST_PATH
    if not manifest_path.is_file() or manifest_path.read_bytes() != manifest_bytes:
        _write_atomic(manifest_path, manifest_bytes)
    return outcome
