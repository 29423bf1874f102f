"""Where each benchmark's data comes from: a local copy named by one environment variable, or the real
Hugging Face source at a pinned revision.

lmms-eval loads `dataset_path` itself before any hook runs, so a YAML cannot switch sources by
environment variable. Our task YAMLs therefore load a one-line manifest (`_source.jsonl` in the
benchmark folder, via lmms-eval's local-`data_files` support) and `process_docs` replaces it with
the benchmark's real documents through the functions here. Tests point the variables at generated
fixtures, so this exact code is what they exercise.
"""

from __future__ import annotations

import glob
import json
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import datasets

from lmms_tasks.utils.logging import logger


class DataError(RuntimeError):
    """Benchmark data is missing or malformed; the message names the file or record at fault."""


@dataclass(frozen=True)
class DataSource:
    """A benchmark's data: the HF dataset repository, its pinned revision and the override variable."""

    name: str
    repo_id: str
    revision: str
    env_var: str

    def local_root(self) -> Path | None:
        """The directory named by the environment variable, or None when it is unset."""
        value = os.environ.get(self.env_var, "").strip()
        if not value:
            return None
        root = Path(value).expanduser().resolve()
        if not root.is_dir():
            raise DataError(f"{self.env_var}={value!r} is not a directory (expected a local copy of {self.repo_id})")
        return root

    def describe(self) -> str:
        root = self.local_root()
        return f"{self.env_var}={root}" if root else f"hf://datasets/{self.repo_id}@{self.revision}"


def load_parquet_split(source: DataSource, split: str) -> datasets.Dataset:
    """Load one split of a parquet-backed HF dataset (e.g. HumanEval-V, HAERAE-Vision).

    Local: every `data/*.parquet` under the override directory (the HF repository layout); files whose
    name starts with another split's name (`validation-…`) are ignored when a `<split>-…` file exists.
    Hub: `load_dataset(repo, revision=…, split=…)` with split-size verification relaxed, because a
    dataset card's recorded sizes can be stale (HAERAE-Vision's is).
    """
    root = source.local_root()
    if root is not None:
        files = sorted(glob.glob(str(root / "data" / "*.parquet")))
        if not files:
            raise DataError(f"{source.env_var}={root}: no data/*.parquet files (expected the layout of {source.repo_id})")
        split_files = [f for f in files if Path(f).name.startswith(f"{split}-") or Path(f).name.startswith(f"{split}.")]
        logger.info(f"{source.name}: loading {len(split_files or files)} local parquet file(s) from {root}")
        return datasets.load_dataset("parquet", data_files={split: split_files or files}, split=split)
    logger.info(f"{source.name}: loading {source.repo_id}@{source.revision} split {split}")
    return datasets.load_dataset(source.repo_id, revision=source.revision, split=split, verification_mode="no_checks")


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
    target = hf_home / cache_name
    marker = target / f".extracted-{source.revision}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if marker.exists():
            return target
        snapshot = snapshot_download(repo_id=source.repo_id, revision=source.revision, repo_type="dataset", allow_patterns=["*.zip"])
        archives = sorted(glob.glob(os.path.join(snapshot, "**", "*.zip"), recursive=True))
        if not archives:
            raise DataError(f"{source.repo_id}@{source.revision} has no .zip archive to extract")
        target.mkdir(parents=True, exist_ok=True)
        for archive in archives:
            logger.info(f"{source.name}: extracting {archive} into {target}")
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(target)
        marker.write_text(source.revision)
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


def read_jsonl(path: Path) -> list[dict]:
    """Every object of a JSONL file (errors name the file and line)."""
    return [record for _, record in iter_jsonl(path)]
