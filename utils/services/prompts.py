"""Benchmark-defined prompt and judge strings, byte for byte.

They are data, not code: `resources/prompts_exact.json` is a verbatim copy of the reference file, each
entry with its sha256, which is checked on every load so an edited copy can never be used silently.
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources


class PromptIntegrityError(RuntimeError):
    """A stored prompt no longer matches its recorded sha256."""


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, dict]:
    text = resources.files("lmms_tasks.utils.services.resources").joinpath("prompts_exact.json").read_text(encoding="utf-8")
    return json.loads(text)


def prompt(key: str) -> str:
    """The exact text stored under `key` (e.g. 'haerae/judge/prompt_template'), sha256-verified."""
    entry = _table()[key]
    text = entry["text"]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest != entry["sha256"] or len(text) != entry["chars"]:
        raise PromptIntegrityError(f"prompt {key!r} does not match its recorded sha256 {entry['sha256']}")
    return text


def prompt_sha256(key: str) -> str:
    return _table()[key]["sha256"]


def keys() -> list[str]:
    return sorted(_table())
