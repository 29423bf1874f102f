"""A content-addressed on-disk cache: one JSON file per entry, written atomically.

Used by the judge (and usable by any other slow, deterministic-by-input step) so that a re-run or a
run resumed after a crash repeats no finished work. Entries are addressed by the sha256 of a canonical
JSON rendering of whatever identifies the work; each entry is its own file, written to a temporary file
in the same directory and renamed into place with `os.replace`, so concurrent threads, processes and
runs sharing one directory never see a half-written entry and never need a lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def content_key(material: Any) -> str:
    """sha256 of the canonical JSON of `material` (sorted keys, no ASCII escaping)."""
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DiskCache:
    """Entries under `root/<first two hex digits>/<key>.json`; a missing or unreadable file is a miss."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self.path(key), encoding="utf-8") as fh:
                entry = json.load(fh)
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) else None

    def put(self, key: str, entry: dict[str, Any]) -> Path:
        """Write `entry` atomically (tmp file + os.replace); the last writer of an identical key wins."""
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, ensure_ascii=False, default=str)  # no fsync: rename atomicity covers killed runs
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return target

    def __len__(self) -> int:
        if not self.root.is_dir():
            return 0
        return sum(1 for _ in self.root.glob("??/*.json"))
