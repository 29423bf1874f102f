"""V2T2C plumbing: read the diagram descriptions a `humaneval_v_v2t[_pass3]` run wrote into its samples
file, and (strong-coder setting) turn them into code with an OpenAI-compatible coder model."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any

from lmms_tasks.utils.services.data import DataError, iter_jsonl

DESCRIPTIONS_ENV = "HUMANEVAL_V_DESCRIPTIONS"
STRONG_CODER_ENV = "HUMANEVAL_V_STRONG_CODER"
DEFAULT_CODER = "gpt-4o"
DESCRIPTION_KEY = "description_rate"  # the v2t metric whose per-sample value carries the descriptions


def source_task(t2c_task: str) -> str:
    """humaneval_v_t2c -> humaneval_v_v2t; humaneval_v_t2c_pass3 -> humaneval_v_v2t_pass3."""
    return t2c_task.replace("_t2c", "_v2t", 1)


def resolve_samples_file(t2c_task: str, configured: str | None = None) -> Path:
    """The v2t samples file: $HUMANEVAL_V_DESCRIPTIONS (a file, or a directory searched recursively for
    the newest `*_samples_<v2t task>.jsonl`), else the YAML's `metadata.descriptions`."""
    value = os.environ.get(DESCRIPTIONS_ENV, "").strip() or (configured or "").strip()
    wanted = source_task(t2c_task)
    if not value:
        raise DataError(
            f"{t2c_task}: no descriptions. Run `{wanted}` first (with --log_samples), then set "
            f"{DESCRIPTIONS_ENV}=<its output directory or its *_samples_{wanted}.jsonl file>."
        )
    path = Path(value).expanduser()
    if path.is_dir():
        found = sorted(glob.glob(str(path / "**" / f"*_samples_{wanted}.jsonl"), recursive=True), key=os.path.getmtime)
        if not found:
            raise DataError(f"{t2c_task}: {DESCRIPTIONS_ENV}={path} holds no *_samples_{wanted}.jsonl file")
        return Path(found[-1])
    if not path.is_file():
        raise DataError(f"{t2c_task}: {DESCRIPTIONS_ENV}={path} does not exist")
    return path


def read_descriptions(path: Path) -> dict[str, list[str]]:
    """qid -> descriptions, in sample order, from a v2t samples JSONL (errors name file and line)."""
    out: dict[str, list[str]] = {}
    for lineno, record in iter_jsonl(path):
        value = record.get(DESCRIPTION_KEY)
        if not isinstance(value, dict) or "qid" not in value or not isinstance(value.get("descriptions"), list):
            raise DataError(f"{path}:{lineno}: not a humaneval_v_v2t sample (no '{DESCRIPTION_KEY}' with qid and descriptions)")
        out[str(value["qid"])] = [str(d) for d in value["descriptions"]]
    if not out:
        raise DataError(f"{path}: no descriptions")
    return out


def strong_coder_enabled(metadata: dict[str, Any] | None = None) -> bool:
    if os.environ.get(STRONG_CODER_ENV, "").strip() == "1":
        return True
    return bool((metadata or {}).get("strong_coder"))
