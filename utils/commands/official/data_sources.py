"""`export-official` pairs a run's answers with the data that run loaded, never with whatever today's
environment points at.

Each task's loader recorded what it read in results.json (`configs.<task>.metadata.data_source`,
`services.data.DataSource.provenance`): a local copy (its root and every data file's sha256) or a Hub
revision. Before exporting, each benchmark's data source is named from that record where the environment
names none (the recorded local root, or the recorded revision: `DataSource.named`, handed to the export's
loaders; the environment is only read), and compared with it where it does: a different copy (other file
contents) or another revision refuses the export in one line naming both.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from lmms_tasks.utils.commands.official.common import OfficialFormatError, RunTask
from lmms_tasks.utils.services.data import PROVENANCE_KEY, DataError, DataSource

# Where each benchmark declares its data source(s) (module, attribute).
_SOURCES = (
    ("lmms_tasks.utils.vlm2_bench.data", "SOURCE"),
    ("lmms_tasks.utils.humaneval_v.hooks", "SOURCE"),
    ("lmms_tasks.utils.humaneval_v.v1", "SOURCE"),
    ("lmms_tasks.utils.haerae_vision.data", "SOURCE"),
)


def sources() -> list[DataSource]:
    return [getattr(importlib.import_module(module), name) for module, name in _SOURCES]


def recorded(run_task: RunTask) -> Mapping[str, Any] | None:
    """What the task's loader recorded in the run's results.json, or None (a run from before the record)."""
    config = ((run_task.results_file.data.get("configs") or {}).get(run_task.task)) or {}
    found = (config.get("metadata") or {}).get(PROVENANCE_KEY) if isinstance(config, Mapping) else None
    return found if isinstance(found, Mapping) and found.get("source") in ("local", "hub") else None


def source_of(record: Mapping[str, Any]) -> DataSource | None:
    """The data source a record was written by: the one with its environment variable (local copy) or its
    revision variable (Hub)."""
    field = "env_var" if record["source"] == "local" else "revision_var"
    return next((s for s in sources() if getattr(s, field) == record.get(field)), None)


def describe(record: Mapping[str, Any]) -> str:
    if record["source"] == "local":
        return f"{record.get('env_var')}={record.get('root')} ({len(record.get('files') or {})} data file(s))"
    return f"hf://datasets/{record.get('repo_id')}@{record.get('revision')}"


def _where(run_task: RunTask) -> str:
    return f"{run_task.task} of {run_task.results_file.path}"


def settings(run_tasks: list[RunTask]) -> dict[str, dict[str, str]]:
    """Per benchmark data source (by name), what makes it load what its runs recorded: {"root": ...} or
    {"revision": ...} ({} where the environment already names it). Refused (OfficialFormatError, one line)
    when two runs loaded different data for one benchmark, or the environment names data other than the
    recorded one."""
    wanted: dict[str, tuple[DataSource, Mapping[str, Any], RunTask]] = {}
    for run_task in run_tasks:
        record = recorded(run_task)
        source = source_of(record) if record is not None else None
        if source is None:
            continue
        seen = wanted.get(source.name)
        if seen is not None and not same_data(seen[1], record):
            raise OfficialFormatError(
                f"{_where(run_task)} loaded {describe(record)}, {_where(seen[2])} loaded {describe(seen[1])}: "
                "export these runs separately (one export pairs each benchmark with one data source)"
            )
        wanted.setdefault(source.name, (source, record, run_task))
    return {source.name: _setting(source, record, run_task) for source, record, run_task in wanted.values()}


def same_data(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two records name the same data: the same file contents (local), or the same commit (else the
    same revision) of the same repository (Hub)."""
    if a["source"] != b["source"]:
        return False
    if a["source"] == "local":
        return dict(a.get("files") or {}) == dict(b.get("files") or {})
    if a.get("repo_id") != b.get("repo_id"):
        return False
    if a.get("commit") and b.get("commit"):
        return a["commit"] == b["commit"]
    return a.get("revision") == b.get("revision")


def _setting(source: DataSource, record: Mapping[str, Any], run_task: RunTask) -> dict[str, str]:
    local = os.environ.get(source.env_var, "").strip()
    revision = os.environ.get(source.revision_var, "").strip()
    if not local and not revision:  # nothing named today: load what the run recorded
        return {"root": str(record["root"])} if record["source"] == "local" else {"revision": str(record["revision"])}
    try:
        current = source.provenance()
    except DataError as exc:
        raise OfficialFormatError(f"{_where(run_task)}: {exc}") from exc
    if record["source"] == "hub" and current["source"] == "hub" and not record.get("commit"):
        current = {**current, "commit": None}  # the run did not know its commit: compare the revisions asked for
    if not same_data(record, current):
        raise OfficialFormatError(
            f"{_where(run_task)}: the run loaded {describe(record)}, but this environment names {describe(current)}: "
            f"unset {source.env_var} and {source.revision_var} to export with the run's data, or export the run it belongs to"
        )
    return {}


def run_data(run_tasks: list[RunTask]) -> dict[str, DataSource]:
    """Every benchmark data source (by name) as the export loads it: named from the runs' records where the
    environment names none (checked first; see `settings`), else as the environment names it."""
    named = settings(run_tasks)
    return {source.name: source.named(**named.get(source.name, {})) for source in sources()}
