"""Where a run's judgement and execution records go: beside the run they belong to, never shared.

lmms-eval writes a run as `<output_path>/<model>/<ts>_results.json` + `<ts>_samples_<task>.jsonl`, with
the timestamp chosen after scoring, so the batch step cannot know it. Each run's records therefore go to
a folder of their own beside its results, `<output_path>/<model>/records_<YYYYMMDD_HHMMSS>_<random>/`
(`judgements/`, `executions/`, `repeats/<j>/`), created when the run first writes a record, and the
folder's name is written into each task's config metadata (`metadata.records`), which lmms-eval saves in
the run's results file (`configs.<task>.metadata.records`): every command finds a run's records from that
run's results file. Two runs into one `--output_path`, of one model or several, never share a folder.

Runs of the previous layout have no `metadata.records`; their records are `<output_path>/judgements/` and
`<output_path>/executions/`, shared by every run in that folder: they are read only where one run has the
task (`legacy_dir`).
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

RECORDS_KEY = "records"  # metadata key: the run's records folder, relative to its results file's folder
RECORDS_PREFIX = "records_"
_RUN_ATTR = "lmms_tasks_records"  # the run's folder on lmms-eval's args, shared by every task of the run


def model_folder(args: Any) -> Path:
    """`<output_path>/<model>`: where lmms-eval writes this run's results, by lmms-eval's own rule (the
    model name from `--model_args`, sanitized; none: the output path itself)."""
    from lmms_eval.loggers.evaluation_tracker import GeneralConfigTracker
    from lmms_eval.utils import sanitize_model_name

    base = Path(str(args.output_path)).expanduser()
    if base.suffix in (".json", ".jsonl"):  # lmms-eval also accepts a results *file* as --output_path
        base = base.parent
    model_args = getattr(args, "model_args", "") or ""
    name = sanitize_model_name(GeneralConfigTracker._get_model_name(model_args if isinstance(model_args, str) else ""))
    return base / name if name else base


def run_dir(args: Any, metadata: MutableMapping[str, Any] | None) -> str | None:
    """This run's records folder (created on first use), recorded in the task's `metadata`; None when the
    run has no output path. A folder the metadata already names (a re-score hands its own) is used as given."""
    given = metadata.get(RECORDS_KEY) if metadata is not None else None
    if isinstance(given, str) and Path(given).is_absolute():
        return given
    if args is None or not getattr(args, "output_path", None):
        return None
    folder = model_folder(args)
    chosen = getattr(args, _RUN_ATTR, None)
    if chosen is None:
        folder.mkdir(parents=True, exist_ok=True)
        chosen = Path(tempfile.mkdtemp(prefix=f"{RECORDS_PREFIX}{time.strftime('%Y%m%d_%H%M%S')}_", dir=folder)).name
        try:
            setattr(args, _RUN_ATTR, chosen)
        except AttributeError:
            pass
    if metadata is not None:
        metadata[RECORDS_KEY] = chosen
    return str(folder / chosen)


def fresh_path(folder: Path) -> Path:
    """A records folder of its own in `folder` (a re-score's), named as a run's (`records_<YYYYMMDD_HHMMSS>_<random>`);
    made when the first record is written into it."""
    return Path(folder) / f"{RECORDS_PREFIX}{time.strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:8]}"


def chosen(args: Any) -> str | None:
    """The records folder's name this run chose (relative to its results file's folder), None before any
    record was written."""
    return getattr(args, _RUN_ATTR, None) if args is not None else None


def recorded_dir(results_path: Path, data: dict[str, Any]) -> Path | None:
    """The records folder a results file names (`configs.<task>.metadata.records`), None for a run of the
    previous layout."""
    for config in (data.get("configs") or {}).values():
        metadata = config.get("metadata") if isinstance(config, dict) else None
        value = metadata.get(RECORDS_KEY) if isinstance(metadata, dict) else None
        if isinstance(value, str) and value:
            return Path(value) if Path(value).is_absolute() else Path(results_path).parent / value
    return None
