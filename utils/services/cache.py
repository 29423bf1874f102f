"""A content-addressed on-disk cache: one JSON file per entry, written atomically.

Used by the judge (and usable by any other slow, deterministic-by-input step) so that a re-run or a
run resumed after a crash repeats no finished work. Entries are addressed by the sha256 of a canonical
JSON rendering of whatever identifies the work; each entry is its own file, written to a temporary file
in the same directory and renamed into place with `os.replace`, so concurrent threads, processes and
runs sharing one directory never see a half-written entry and never need a lock to read.

Work that costs money (a judge call) is also claimed before it starts (`DiskCache.claim`): an exclusive
`flock` on `<key>.inflight`, which the kernel drops when its holder exits or is killed, so concurrent
processes sharing a cache compute each entry once, and a killed run never blocks the next one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lmms_tasks.utils.services.logging import logger


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write `data` (text as UTF-8) to a temporary file beside `path` and rename it into place, so a reader, a
    concurrent writer or a killed run never sees a half-written file; `mode`, when given, is the file's mode
    (else the temporary file's 0o600). The temporary file is removed if anything fails."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:24]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
        write_atomic(target, json.dumps(entry, ensure_ascii=False, default=str))  # no fsync: rename atomicity covers killed runs
        return target

    @contextlib.contextmanager
    def claim(self, key: str) -> Iterator[bool]:
        """Try, without waiting, to become the one process computing `key`: yields True while this process
        holds the claim (compute, `put`, then leave the block), False when another process holds it.

        The claim is an exclusive `flock` on `<key>.inflight` beside the entry; the holder removes the file
        before releasing it, and a process that locked a file already removed retries on the new one."""
        lock_path = self.path(key).with_suffix(".inflight")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    yield False
                    return
                raise
            try:
                current = os.fstat(fd).st_ino == os.stat(lock_path).st_ino
            except FileNotFoundError:
                current = False
            except BaseException:
                os.close(fd)
                raise
            if not current:  # the previous holder removed this file after we opened it: take the new one
                os.close(fd)
                continue
            try:
                yield True
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(lock_path)
                os.close(fd)
            return

    def __len__(self) -> int:
        if not self.root.is_dir():
            return 0
        return sum(1 for _ in self.root.glob("??/*.json"))


def compute_once(
    cache: DiskCache,
    key: str,
    compute: Callable[[], dict[str, Any] | None],
    wait: float,
    poll: float = 0.2,
) -> tuple[dict[str, Any] | None, bool]:
    """The entry for `key`, computed at most once across processes sharing `cache`: (entry, from_cache).

    When another process holds the claim, this one waits (polling) for its entry; if the holder exits
    without one (a failure) the claim passes on; if the holder is still computing after `wait` seconds
    (hung, not dead: the kernel releases a dead one's claim) this process computes anyway. `compute()`
    returns the entry, or None for a failure (nothing is stored). An unwritable cache costs a repeat
    later, never this result."""
    deadline = time.monotonic() + wait
    while True:
        entry = cache.get(key)
        if entry is not None:
            return entry, True
        try:
            with cache.claim(key) as owned:
                if owned:
                    entry = cache.get(key)  # finished between our look and our claim
                    if entry is not None:
                        return entry, True
                    return _store(cache, key, compute()), False
        except OSError as exc:  # no claim possible (read-only cache directory): just compute
            logger.warning(f"cache claim failed under {cache.root}: {exc}")
            return _store(cache, key, compute()), False
        if time.monotonic() >= deadline:
            logger.warning(f"cache entry {key[:12]} still being computed by another process after {wait:.0f} s; computing it here too")
            return _store(cache, key, compute()), False
        time.sleep(poll)


def _store(cache: DiskCache, key: str, entry: dict[str, Any] | None) -> dict[str, Any] | None:
    if entry is not None:
        try:
            cache.put(key, entry)
        except OSError as exc:
            logger.warning(f"cache write failed under {cache.root}: {exc}")
    return entry
