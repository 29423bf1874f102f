"""Check a benchmark's records at load time, before any model request: every error is one line naming the
benchmark, the file and row (or line), the record id and the field.

A `Field` names a column and a check that returns None when the value is acceptable and a short problem
description otherwise. Images are fully decoded once (`image_bytes_problem`): an image that would fail, or be
silently padded or garbled, while requests are built fails here instead, before generation. A decoded image
is remembered by the sha256 of its bytes (in this process and in `LMMS_TASKS_MEDIA_CACHE_DIR`), so a file
shared by several records, subtasks, ranks or runs is decoded once.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_tasks.utils.services.cache import write_atomic

Check = Callable[[Any], "str | None"]

_PNG_END = b"IEND\xaeB`\x82"
_JPEG_END = b"\xff\xd9"
_TAIL = 4096  # a JPEG's end-of-image marker must lie this close to the end (some writers pad after it)


class SchemaError(ValueError):
    """A record does not have the shape the benchmark's scorer needs (one line, naming where)."""


@dataclass(frozen=True)
class Field:
    name: str
    check: Check
    required: bool = True


# -- value checks -------------------------------------------------------------------------------------------


def text(nonempty: bool = True) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            return f"must be a string, got {_shown(value)}"
        if nonempty and not value.strip():
            return "is empty"
        return None

    return check


def optional_text(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else f"must be a string or null, got {_shown(value)}"


def integer(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer, got {_shown(value)}"
    return None


def identifier(value: Any) -> str | None:
    """A record id: a non-empty string or an integer."""
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int)) or (isinstance(value, str) and not value.strip()):
        return f"must be a non-empty string or an integer, got {_shown(value)}"
    return None


def one_of(*allowed: str, normalise: Callable[[str], str] = str) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, str) or normalise(value) not in allowed:
            return f"must be one of {list(allowed)}, got {_shown(value)}"
        return None

    return check


def string_list(nonempty: bool = True) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            return f"must be a list of strings, got {_shown(value)}"
        if nonempty and not value:
            return "is an empty list"
        return None

    return check


def mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be a mapping, got {_shown(value)}"


def any_of(*checks: Check) -> Check:
    def check(value: Any) -> str | None:
        problems = [c(value) for c in checks]
        return None if any(p is None for p in problems) else " or ".join(p for p in problems if p)

    return check


def _shown(value: Any) -> str:
    text_ = repr(value)
    return f"{type(value).__name__} {text_[:60]}{'...' if len(text_) > 60 else ''}"


# -- images ----------------------------------------------------------------------------------------------


MEDIA_CACHE_ENV = "LMMS_TASKS_MEDIA_CACHE_DIR"
DEFAULT_MEDIA_CACHE = "~/.cache/lmms_tasks/media"


class _TruncationFlag:
    """PIL decides what a truncated or damaged image does by one module global, `LOAD_TRUNCATED_IMAGES`,
    which lmms-eval switches on at import. Decoding with the value a check needs, whatever lmms-eval set:
    threads wanting the same value decode together; the global is restored when the last one is done."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holders = 0
        self._value: bool | None = None
        self._saved = False

    @contextlib.contextmanager
    def set_to(self, value: bool) -> Iterator[None]:
        from PIL import ImageFile

        with self._cond:
            while self._holders and self._value != value:
                self._cond.wait()
            if not self._holders:
                self._saved = ImageFile.LOAD_TRUNCATED_IMAGES
                ImageFile.LOAD_TRUNCATED_IMAGES = value
                self._value = value
            self._holders += 1
        try:
            yield
        finally:
            with self._cond:
                self._holders -= 1
                if not self._holders:
                    ImageFile.LOAD_TRUNCATED_IMAGES = self._saved
                    self._value = None
                    self._cond.notify_all()


_flag = _TruncationFlag()
_verified: set[str] = set()
_indexed: set[str] = set()  # media-cache roots whose verdict files this process has read
_verified_lock = threading.Lock()


def _verdict_key(blob: bytes, allow_truncated: bool) -> str:
    from PIL import __version__ as pil_version

    digest = hashlib.sha256(blob).hexdigest()
    return hashlib.sha256(f"{digest}|truncated-ok={allow_truncated}|pil={pil_version}".encode()).hexdigest()


def _cache_root() -> Path:
    return Path(os.path.expanduser(os.environ.get(MEDIA_CACHE_ENV, "").strip() or DEFAULT_MEDIA_CACHE))


def _read_index(root: Path) -> None:
    """Load the media cache's verdicts (`??/*.good` files: one key of a decoded image per line), once per
    process and cache root."""
    with _verified_lock:
        if str(root) in _indexed:
            return
    keys: set[str] = set()
    for path in root.glob("??/*.good"):
        try:
            keys.update(path.read_text(encoding="ascii").split())
        except (OSError, UnicodeDecodeError):
            continue  # unreadable: those images are decoded again
    with _verified_lock:
        _verified.update(keys)
        _indexed.add(str(root))


def _known_good(key: str) -> bool:
    with _verified_lock:
        if key in _verified:
            return True
    _read_index(_cache_root())
    with _verified_lock:
        return key in _verified


def _remember_good(keys: Sequence[str]) -> None:
    """Remember decoded images, in this process and in the media cache: one verdict file per batch of keys
    (one file for a whole release's check, not one per image), written to a temporary name and renamed, so
    concurrent processes and killed runs never leave a half-written one."""
    if not keys:
        return
    with _verified_lock:
        _verified.update(keys)
    text = "".join(f"{key}\n" for key in sorted(set(keys)))
    name = hashlib.sha256(text.encode("ascii")).hexdigest()
    target = _cache_root() / name[:2] / f"{name}.good"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text, mode=0o644)
    except OSError:
        pass  # an unwritable cache only costs a decode next time


def image_bytes_problem(data: bytes | None, path: str | None = None, allow_truncated: bool = False, decoded_into: list[str] | None = None) -> str | None:
    """None if `data` (or the file at `path`) holds an image that decodes completely, else why not.

    The header must identify an image; a PNG must end with its IEND chunk, a JPEG carry its end-of-image
    marker near the end (what a truncated file lacks: named as such); then every pixel is decoded with
    PIL's `LOAD_TRUNCATED_IMAGES` off, whatever lmms-eval set globally (with it on, damaged compressed data
    decodes silently to grey or black). `allow_truncated` accepts an image whose data merely ends early (a
    benchmark whose official loader sets that flag pads it too), never one whose data is damaged. A decoded
    image is remembered by content (see `_remember_good`); with `decoded_into`, its key is appended there for
    the caller to remember with the rest of its batch."""
    from PIL import Image, UnidentifiedImageError

    if data is None and path is None:
        return "has no image data"
    if data is None:
        if not os.path.isfile(path or ""):
            return f"image file not found: {path}"
        try:
            with open(path or "", "rb") as fh:
                data = fh.read()
        except OSError as exc:
            return f"cannot be read ({exc})"
    key = _verdict_key(data, allow_truncated)
    if _known_good(key):
        return None
    head, tail = data[:64], data[-_TAIL:]
    try:
        with _flag.set_to(False), Image.open(io.BytesIO(data)) as image:
            fmt = image.format
            if fmt == "PNG":
                if not allow_truncated and not tail.endswith(_PNG_END):
                    image.verify()  # raises, naming what is wrong; a complete PNG ends with its IEND chunk
                    return "is a truncated PNG (no IEND chunk at the end)"
                if tail.endswith(_PNG_END):
                    image.verify()  # every chunk's CRC (verify() leaves the image unusable: decode a fresh one)
            elif fmt == "JPEG" and not allow_truncated and _JPEG_END not in tail:
                return "is a truncated JPEG (no end-of-image marker)"
            decoded = Image.open(io.BytesIO(data)) if fmt == "PNG" else image
            if fmt == "JPEG":
                # Every byte of the scan is still entropy-decoded (where damaged or cut data raises), but the
                # inverse DCT runs at 1/8 scale: about 1.7x faster on photographs, the same verdicts
                # (tests/bad_input/test_bad_data.py compares them with a full decode on damaged JPEGs).
                decoded.draft(decoded.mode, (max(1, decoded.width // 8), max(1, decoded.height // 8)))
            try:
                decoded.load()  # every pixel: damaged compressed data raises here
            except OSError as exc:
                if not (allow_truncated and str(exc).startswith("image file is truncated")):
                    raise
            finally:
                if decoded is not image:
                    decoded.close()
    except UnidentifiedImageError:
        return f"is not an image PIL can identify (starts with {head[:8]!r})"
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        return f"cannot be decoded ({type(exc).__name__}: {exc})"
    if decoded_into is not None:
        decoded_into.append(key)
    else:
        _remember_good([key])
    return None


def image_cell_problem(cell: Any, allow_truncated: bool = False, decoded_into: list[str] | None = None) -> str | None:
    """An HF `Image` feature value as stored in arrow ({"bytes": ..., "path": ...}) or a file path."""
    if cell is None:
        return "is null (no image)"
    if isinstance(cell, str):
        return image_bytes_problem(None, cell, allow_truncated, decoded_into)
    if not isinstance(cell, dict):
        return f"must be an image, got {_shown(cell)}"
    return image_bytes_problem(cell.get("bytes"), cell.get("path") if not cell.get("bytes") else None, allow_truncated, decoded_into)


# -- records ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One record to check: where it is (file and row or line), its id, its values."""

    where: str
    values: dict[str, Any]


def check_records(
    benchmark: str,
    records: Iterable[Record],
    fields: Sequence[Field],
    id_field: str,
    unique_ids: bool = True,
) -> None:
    """Raise SchemaError at the first record that lacks a required field, has a wrong value or repeats an id."""
    seen: dict[str, str] = {}
    for record in records:
        record_id = record.values.get(id_field)
        label = f"{benchmark}: {record.where} ({id_field}={record_id!r})"
        for field in fields:
            if field.name not in record.values:
                if field.required:
                    raise SchemaError(f"{label}: field {field.name!r} is missing")
                continue
            problem = field.check(record.values[field.name])
            if problem:
                raise SchemaError(f"{label}: field {field.name!r} {problem}")
        if unique_ids:
            key = str(record_id)
            if key in seen:
                raise SchemaError(f"{label}: field {id_field!r} repeats the id of {seen[key]}")
            seen[key] = record.where


def check_images(
    benchmark: str,
    cells: Sequence[tuple[str, str, Any]],
    field: str,
    id_field: str,
    allow_truncated: bool = False,
    workers: int = 4,
) -> None:
    """Check (where, record id, image cell or list of cells) triples on a small thread pool (reading and
    decoding release the GIL); raise SchemaError naming the first bad image in record order."""

    def problem_of(item: tuple[str, str, Any]) -> str | None:
        where, _record_id, value = item
        values = value if isinstance(value, list) else [value]
        if isinstance(value, list) and not value:
            return "is an empty list (no image)"
        for index, cell in enumerate(values):
            problem = image_cell_problem(cell, allow_truncated, decoded)
            if problem:
                return f"[{index}] {problem}" if isinstance(value, list) else problem
        return None

    decoded: list[str] = []  # keys of the images decoded here (list.append is atomic): remembered in one file
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, os.cpu_count() or 1))) as pool:
            problems = list(pool.map(problem_of, cells))
    finally:
        _remember_good(decoded)  # the good ones stay known even when another image stops the run
    for (where, record_id, _), problem in zip(cells, problems):
        if problem:
            raise SchemaError(f"{benchmark}: {where} ({id_field}={record_id!r}): field {field!r} {problem}")
