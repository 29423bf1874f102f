"""Check a benchmark's records at load time, before any model request: every error is one line naming the
benchmark, the file and row (or line), the record id and the field.

A `Field` names a column and a check that returns None when the value is acceptable and a short problem
description otherwise. Images are checked cheaply (`image_bytes_problem`): an image that would fail, or
be silently padded, while requests are built fails here instead, before generation.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

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


def image_bytes_problem(data: bytes | None, path: str | None = None, allow_truncated: bool = False) -> str | None:
    """None if `data` (or the file at `path`) holds a readable, complete image, else why not.

    Cheap: the header must identify an image; a PNG must end with its IEND chunk and pass PIL's chunk
    verification (CRCs: damage would otherwise decode as noise); a JPEG must carry its end-of-image marker
    near the end (what a truncated file lacks); other formats are decoded.
    These checks do not depend on PIL's `LOAD_TRUNCATED_IMAGES`, which lmms-eval switches on globally
    (a truncated image would otherwise be padded with grey, silently). `allow_truncated` accepts a
    truncated PNG or JPEG, as a benchmark that loads with that flag officially does."""
    from PIL import Image, UnidentifiedImageError

    if data is None and path is None:
        return "has no image data"
    try:
        if data is None:
            if not os.path.isfile(path or ""):
                return f"image file not found: {path}"
            size = os.path.getsize(path or "")
            with open(path or "", "rb") as fh:
                head = fh.read(64)
                fh.seek(max(0, size - _TAIL))
                tail = fh.read()
        else:
            head, tail = data[:64], data[-_TAIL:]
        source: Any = io.BytesIO(data) if data is not None else path
        with Image.open(source) as image:
            fmt = image.format
            if fmt == "PNG":
                if tail.endswith(_PNG_END):
                    image.verify()  # every chunk's CRC: catches damage that would otherwise decode as noise
                elif not allow_truncated:
                    image.verify()  # raises, naming what is wrong; a complete PNG ends with its IEND chunk
                    return "is a truncated PNG (no IEND chunk at the end)"
            elif fmt == "JPEG":
                if not allow_truncated and _JPEG_END not in tail:
                    return "is a truncated JPEG (no end-of-image marker)"
            else:
                image.load()
        return None
    except UnidentifiedImageError:
        return f"is not an image PIL can identify (starts with {head[:8]!r})"
    except (OSError, ValueError, SyntaxError) as exc:
        return f"cannot be decoded ({type(exc).__name__}: {exc})"


def image_cell_problem(cell: Any, allow_truncated: bool = False) -> str | None:
    """An HF `Image` feature value as stored in arrow ({"bytes": ..., "path": ...}) or a file path."""
    if cell is None:
        return "is null (no image)"
    if isinstance(cell, str):
        return image_bytes_problem(None, cell, allow_truncated)
    if not isinstance(cell, dict):
        return f"must be an image, got {_shown(cell)}"
    return image_bytes_problem(cell.get("bytes"), cell.get("path") if not cell.get("bytes") else None, allow_truncated)


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
            problem = image_cell_problem(cell, allow_truncated)
            if problem:
                return f"[{index}] {problem}" if isinstance(value, list) else problem
        return None

    with ThreadPoolExecutor(max_workers=max(1, min(workers, os.cpu_count() or 1))) as pool:
        problems = list(pool.map(problem_of, cells))
    for (where, record_id, _), problem in zip(cells, problems):
        if problem:
            raise SchemaError(f"{benchmark}: {where} ({id_field}={record_id!r}): field {field!r} {problem}")
