"""What the three benchmarks' importers and exporters share: the one-line error, the imported file, the
tasks of a run to export, and staging an export so nothing is half-written."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks.utils.services.llm_judge.judge import RecordedReplies


class OfficialFormatError(ValueError):
    """An input is not in the official format or does not match the task's data; the message is one line
    naming the file, the record and the field."""


@dataclass
class Imported:
    """One official prediction file, turned into what a samples file of `task` would hold."""

    path: Path
    task: str
    official_format: str
    samples: list[dict[str, Any]]  # {"doc_id": ..., <metric>: <process_results value>, ...} per document
    n_expected: int | None = None  # documents of the task's data
    n_expected_from: str = ""
    setting: str | None = None  # the official setting / subtask the file belongs to
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # printed as they are (e.g. which metric is which)
    replay: RecordedReplies | None = None  # recorded judge replies (already judged files): no request is sent


def one_line(text: str) -> str:
    """An error message on one line (newlines of quoted values shown escaped)."""
    return " ".join(str(text).replace("\r", "\\r").split("\n"))


def sample(doc_id: Any, values: dict[str, Any]) -> dict[str, Any]:
    """A samples-file line: the document id and the value `process_results` returned under each metric."""
    return {"doc_id": doc_id, **values}


def safe_name(text: str, keep: str = "._-") -> str:
    """A file-name component: characters outside [A-Za-z0-9] and `keep` become "_"."""
    return re.sub(rf"[^A-Za-z0-9{re.escape(keep)}]", "_", str(text)) or "model"


@dataclass
class RunTask:
    """One task of a finished run to export: its samples file, results file and run (model)."""

    task: str
    samples_path: Path
    results_file: Any  # report.runs.ResultsFile
    run: Any  # report.runs.Run

    @property
    def model(self) -> str:
        return str(self.run.model)

    @property
    def stamp(self) -> str:
        return str(self.results_file.stamp)


@dataclass
class Written:
    """A file export-official wrote (relative to the export root) and the official command that reads it."""

    path: str
    command: str = ""


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A fresh directory beside `out` to write into; renamed to `out` at the end, removed on any error (so an
    export is complete or absent). `out` must not exist or be empty."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise OfficialFormatError(f"{out}: exists and is not an empty directory; export-official writes a new directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        yield stage
        if out.exists():
            out.rmdir()
        os.replace(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
