"""Where each benchmark's data comes from: a local copy named by one environment variable, or the real
Hugging Face source at a pinned revision (overridable per benchmark: `<BENCH>_REVISION`).

Every task loads its documents through a `custom_dataset` loader made by `task_loader` (lmms-eval calls it
instead of `datasets.load_dataset`), so one environment variable can switch a benchmark between a local
copy and the pinned Hub revision. Tests point the variables at generated fixtures, so this exact code is
what they exercise.

What a task actually loaded is recorded in the run's outputs: the loader writes `DataSource.provenance()`
(the Hub commit where the Hub reports one, or the sha256 of every local data file read) into the task
config's `metadata.data_source`, which lmms-eval writes to results.json under `configs.<task>`.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.status import EXIT_DATA


class DataError(RuntimeError):
    """Benchmark data is missing or malformed; the message names the file or record at fault.

    It stops the run before any model request with exit status 1 (`exit_status`, read by lmms-eval's CLI
    when it catches an evaluation error)."""

    exit_status = EXIT_DATA


class MediaError(RuntimeError):
    """A media file named by a checked record could not be read while its request was being built (it was
    readable when the task loaded): the evaluation fails (exit status 4), naming the record and the file."""


def is_network_error(exc: BaseException) -> bool:
    """Worth retrying: a connection or timeout error, a transport error of requests/httpx/httpx2, or an HTTP
    429 or 5xx answer from the Hugging Face Hub. Anything else (bad data, a bug) is not. (The same rule as
    lmms-eval's `download` retry with our patch 0004.)"""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    try:
        import requests

        if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout, requests.exceptions.ChunkedEncodingError)):
            return True
    except ImportError:
        pass
    for transport in ("httpx", "httpx2"):  # huggingface_hub 2.x talks to the Hub through httpx2
        try:
            module = __import__(transport)
        except ImportError:
            continue
        if isinstance(exc, module.TransportError):
            return True
    try:
        from huggingface_hub.utils import HfHubHTTPError
    except ImportError:
        return False
    if isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        return status is not None and (status == 429 or status >= 500)
    return False


PROVENANCE_KEY = "data_source"  # the task config's metadata key that records what was loaded


def metadata_of(config: Any) -> dict[str, Any]:
    """The `metadata` mapping of a task config as lmms-eval hands it (a `TaskConfig`, or the dict a command
    loaded); {} when there is none. The attribute first: lmms-eval's TaskConfig is also a dict, an empty one."""
    metadata = getattr(config, "metadata", None)
    if metadata is None and isinstance(config, dict):
        metadata = config.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def task_loader(
    task: str,
    build: Callable[[dict[str, Any]], datasets.Dataset | list[dict[str, Any]]],
    split: str = "test",
    source: DataSource | None = None,
    source_split: str | None = None,
) -> Callable[..., datasets.DatasetDict]:
    """The `custom_dataset` loader of one task: `build(metadata)`'s documents as split `split`, where
    `metadata` is the task config's `metadata` mapping lmms-eval passes the loader (the YAML's, with
    `include:` resolved): the task's settings (its judge, its options) come from there, never from a
    re-read of the YAML.

    Any error while building or checking the documents becomes a `DataError` that names the task (exit
    status 1; lmms-eval does not retry it), except an error that already carries its `exit_status` (a
    `DataError`, a judge that fails its preflight, the missing code-execution opt-in): that one is raised as
    itself, its message prefixed with the task; a network error is raised as it is, so lmms-eval retries it.
    With `source`, what was loaded (`source.provenance(source_split)`) is written into the task config's
    metadata (lmms-eval passes the config's own dict), so results.json records it under
    `configs.<task>.metadata.data_source`.
    """

    def load(metadata: Any = None, **_: Any) -> datasets.DatasetDict:
        settings = metadata if isinstance(metadata, dict) else {}
        try:
            docs = build(settings)
            provenance = source.provenance(source_split) if source is not None else None
        except Exception as exc:  # noqa: BLE001 - every load error must name the task and stop the run
            if is_network_error(exc):
                raise
            if isinstance(getattr(exc, "exit_status", None), int):  # a named condition (bad data, a judge or an
                # opt-in to fix): raised as itself, its type naming the problem, with the task in its one line
                if not str(exc).startswith(f"{task}: "):
                    exc.args = (f"{task}: {exc}", *exc.args[1:])
                raise
            raise DataError(f"{task}: {exc}") from exc
        if provenance is not None and isinstance(metadata, dict):
            metadata[PROVENANCE_KEY] = provenance
        dataset = docs if isinstance(docs, datasets.Dataset) else datasets.Dataset.from_list(list(docs))
        return datasets.DatasetDict({split: dataset})

    load.__name__ = f"load_{task}"
    load.__qualname__ = load.__name__
    return load


COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class DataSource:
    """A benchmark's data: the HF dataset repository, its built-in revision, the override variable (a local
    copy) and the revision variable (`<BENCH>_REVISION`, e.g. `HAERAE_VISION_REVISION`: a commit sha, tag or
    branch to load instead of the built-in one). `local_files` are the data files a local copy's provenance
    hashes (globs under the copy's root); None: the split's parquet files. `root_setting` / `revision_setting`
    name a local copy or a revision explicitly, in place of the two variables (`named`: a command that must
    load what a run recorded hands the loaders such a source; the environment is only read, never written)."""

    name: str
    repo_id: str
    default_revision: str
    env_var: str
    revision_var: str
    local_files: tuple[str, ...] | None = None
    root_setting: str | None = None
    revision_setting: str | None = None

    def named(self, root: str | None = None, revision: str | None = None) -> DataSource:
        """This source with a local copy (`root`) or a revision named explicitly, over the variables."""
        return dataclasses.replace(self, root_setting=root, revision_setting=revision)

    @property
    def revision(self) -> str:
        """The revision to load: the one named explicitly, else `<BENCH>_REVISION` when set, else the built-in one."""
        return (self.revision_setting or "").strip() or os.environ.get(self.revision_var, "").strip() or self.default_revision

    @property
    def pinned(self) -> bool:
        """Whether the revision loaded from the Hub is a commit (fixed data), not a branch or tag that moves."""
        return bool(COMMIT.fullmatch(self.revision))

    def local_root(self) -> Path | None:
        """The directory named explicitly (`root_setting`), else by the environment variable; None when neither."""
        value = (self.root_setting or "").strip() or os.environ.get(self.env_var, "").strip()
        if not value:
            return None
        root = Path(value).expanduser().resolve()
        if not root.is_dir():
            raise DataError(f"{self.env_var}={value!r} is not a directory (expected a local copy of {self.repo_id})")
        return root

    def describe(self) -> str:
        root = self.local_root()
        return f"{self.env_var}={root}" if root else f"hf://datasets/{self.repo_id}@{self.revision}"

    def provenance(self, split: str | None = None) -> dict[str, Any]:
        """What a load of this source read: a local copy's data files with their sha256, or the Hub repository,
        the revision asked for and the commit it resolved to (None where neither the revision nor the local
        Hugging Face cache says)."""
        root = self.local_root()
        if root is not None:
            if self.local_files is None:
                files = split_files(self, split or "test") or []
            else:
                files = sorted({Path(f) for pattern in self.local_files for f in glob.glob(str(root / pattern), recursive=True) if Path(f).is_file()})
            return {
                "source": "local",
                "env_var": self.env_var,
                "root": str(root),
                "files": {path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path): file_sha256(path) for path in files},
            }
        return {"source": "hub", "repo_id": self.repo_id, "revision": self.revision, "revision_var": self.revision_var, "commit": hub_commit(self.repo_id, self.revision)}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def hub_commit(repo_id: str, revision: str, cache_dir: str | os.PathLike | None = None) -> str | None:
    """The commit a Hub revision resolved to: the revision itself when it is a commit sha, else the ref the
    Hugging Face cache recorded when the data was downloaded (`datasets--<owner>--<name>/refs/<revision>`),
    else None (never a network call)."""
    if COMMIT.fullmatch(revision):
        return revision
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    ref = Path(cache_dir or constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}" / "refs" / revision
    try:
        commit = ref.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return commit if COMMIT.fullmatch(commit) else None


def split_files(source: DataSource, split: str) -> list[Path] | None:
    """The local parquet files of `split` (None when the source is the Hub): every `data/*.parquet` under
    the override directory (the HF repository layout); files whose name starts with another split's name
    (`validation-…`) are ignored when a `<split>-…` file exists."""
    root = source.local_root()
    if root is None:
        return None
    files = sorted(glob.glob(str(root / "data" / "*.parquet")))
    if not files:
        raise DataError(f"{source.env_var}={root}: no data/*.parquet files (expected the layout of {source.repo_id})")
    chosen = [f for f in files if Path(f).name.startswith(f"{split}-") or Path(f).name.startswith(f"{split}.")]
    return [Path(f) for f in chosen or files]


def parquet_row_counts(source: DataSource, files: list[Path]) -> list[int]:
    """Rows per file, from each file's footer; an empty, truncated or non-parquet file is an error naming it."""
    import pyarrow.parquet as pq

    counts = []
    for path in files:
        size = path.stat().st_size
        if size == 0:
            raise DataError(f"{source.name}: {path}: the file is empty (0 bytes)")
        try:
            rows = pq.ParquetFile(path).metadata.num_rows
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
            raise DataError(f"{source.name}: {path}: not a readable parquet file, probably truncated or not parquet ({exc})") from exc
        if rows == 0:
            raise DataError(f"{source.name}: {path}: the file holds no rows")
        counts.append(rows)
    return counts


def load_parquet_split(source: DataSource, split: str) -> datasets.Dataset:
    """Load one split of a parquet-backed HF dataset (e.g. HumanEval-V, HAERAE-Vision).

    Local (`<ENV_VAR>` set): the files of `split_files`, each checked first (`parquet_row_counts`). Hub:
    `load_dataset(repo, revision=…, split=…)` with split-size verification relaxed, because a dataset
    card's recorded sizes can be stale (HAERAE-Vision's is). Errors name the file or the source.
    """
    files = split_files(source, split)
    try:
        if files is not None:
            parquet_row_counts(source, files)
            logger.info(f"{source.name}: loading {len(files)} local parquet file(s) from {source.local_root()}")
            dataset = datasets.load_dataset("parquet", data_files={split: [str(f) for f in files]}, split=split)
        else:
            logger.info(f"{source.name}: loading {source.repo_id}@{source.revision} split {split}")
            dataset = datasets.load_dataset(source.repo_id, revision=source.revision, split=split, verification_mode="no_checks")
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - datasets/pyarrow raise many types; the message must name the source
        raise DataError(f"{source.name}: cannot load split {split!r} from {source.describe()}: {type(exc).__name__}: {exc}") from exc
    if len(dataset) == 0:
        raise DataError(f"{source.name}: split {split!r} of {source.describe()} holds no rows")
    return dataset


def row_locations(source: DataSource, split: str, n_rows: int) -> list[str]:
    """Where each row of a loaded split comes from: `<file> row <i>` (local) or `<hub source> row <i>`."""
    files = split_files(source, split)
    if files is None:
        return [f"hf://datasets/{source.repo_id}@{source.revision} ({split}) row {i}" for i in range(n_rows)]
    locations = [f"{path} row {i}" for path, count in zip(files, parquet_row_counts(source, files)) for i in range(count)]
    if len(locations) != n_rows:  # cannot happen for the files just loaded; never mislabel a row
        return [f"{source.describe()} ({split}) row {i}" for i in range(n_rows)]
    return locations


def check_split(
    source: DataSource,
    split: str,
    dataset: datasets.Dataset,
    fields: list[Any],
    id_field: str,
    image_fields: dict[str, bool] | None = None,
) -> None:
    """Check every row of a loaded split against `fields` (see `lmms_tasks.utils.services.schema`) and decode-check
    the images of `image_fields` ({column: allow_truncated}); errors name the file, row, id and field."""
    from lmms_tasks.utils.services.schema import Record, SchemaError, check_images, check_records

    image_fields = image_fields or {}
    table = dataset.data
    names = [f.name for f in fields if f.name in dataset.column_names and f.name not in image_fields]
    columns = {name: table.column(name).to_pylist() for name in names}
    where = row_locations(source, split, len(dataset))
    records = (Record(where[i], {name: columns[name][i] for name in names}) for i in range(len(dataset)))
    present = [f for f in fields if f.name not in image_fields]
    try:
        for f in present:
            if f.required and f.name not in dataset.column_names:
                raise SchemaError(f"{source.name}: {source.describe()} ({split}): column {f.name!r} is missing (columns: {dataset.column_names})")
        check_records(source.name, records, present, id_field)
        ids = columns.get(id_field) or [None] * len(dataset)
        for column, allow_truncated in image_fields.items():
            if column not in dataset.column_names:
                raise SchemaError(f"{source.name}: {source.describe()} ({split}): column {column!r} is missing")
            cells = table.column(column).to_pylist()
            check_images(source.name, list(zip(where, ids, cells)), column, id_field, allow_truncated=allow_truncated)
    except SchemaError as exc:
        raise DataError(str(exc)) from exc


def release_root(source: DataSource, cache_name: str) -> Path:
    """Root of a benchmark released as zip archives in its HF repository (VLM2-Bench).

    Local: the override directory (the release extracted). Hub: the archives at the pinned revision are
    downloaded and extracted once into `$HF_HOME/<cache_name>`, where lmms-eval's own media mechanism
    (`dataset_kwargs: {video: True, cache_dir: …}`) puts them; a marker file and a file lock make this
    safe when several ranks or runs start together.
    """
    root = source.local_root()
    if root is not None:
        return root
    from filelock import FileLock
    from huggingface_hub import snapshot_download

    hf_home = Path(os.path.expanduser(os.environ.get("HF_HOME", "~/.cache/huggingface")))
    # another revision (`<BENCH>_REVISION`) is extracted beside the built-in one, never over it
    target = hf_home / (cache_name if source.revision == source.default_revision else f"{cache_name}@{source.revision}")
    marker = target / f".extracted-{source.revision}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if marker.exists():
            return target
        snapshot = snapshot_download(repo_id=source.repo_id, revision=source.revision, repo_type="dataset", allow_patterns=["*.zip"])
        # the snapshot folder is named by the commit (`snapshots/<sha>`), and the cache's refs/<revision> records it
        archives = sorted(glob.glob(os.path.join(snapshot, "**", "*.zip"), recursive=True))
        if not archives:
            raise DataError(f"{source.repo_id}@{source.revision} has no .zip archive to extract")
        target.mkdir(parents=True, exist_ok=True)
        for archive in archives:
            logger.info(f"{source.name}: extracting {archive} into {target}")
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(target)
        marker.write_text(Path(snapshot).name)  # the commit the revision resolved to
    return target


def iter_jsonl(path: Path, error: type[Exception] = DataError) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSONL file; a missing file or a malformed line
    raises `error` with a message naming the file and the line."""
    if not path.is_file():
        raise error(f"missing file: {path}")
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise error(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
            yield lineno, record
