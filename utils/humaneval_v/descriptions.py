"""V2T2C plumbing: find the diagram descriptions a `humaneval_v_v2t[_pass3]` run of the SAME model on the
SAME data wrote into its samples file, and (strong-coder setting) turn them into code with an
OpenAI-compatible coder model.

`HUMANEVAL_V_DESCRIPTIONS` names either a samples file (used as named, whatever model wrote it: the user
chose it) or a directory: then only the samples files of runs of the model being evaluated now (lmms-eval's
own model name: `pretrained=` / `model=` / `model_version=` ... of `--model_args`, as in its output folder
names, read from each file's `<ts>_results.json`) are candidates, the newest wins, and any other model's
files are named in the error when none matches. Either way the descriptions must have been made on the data
being evaluated now (a fingerprint of the tasks' ids, signatures and tests, recorded with every v2t sample):
descriptions of other data are an error. The chosen file and why are logged.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_tasks.utils.services.data import DataError, iter_jsonl

DESCRIPTIONS_ENV = "HUMANEVAL_V_DESCRIPTIONS"
STRONG_CODER_ENV = "HUMANEVAL_V_STRONG_CODER"
DEFAULT_CODER = "gpt-4o"
DESCRIPTION_KEY = "description_rate"  # the v2t metric whose per-sample value carries the descriptions


def data_fingerprint(rows: Iterable[tuple[Any, Any, Any]]) -> str:
    """What makes two copies of the data the same for V2T2C: every task's qid, signature and test, in order."""
    digest = hashlib.sha256()
    for qid, signature, test in rows:
        digest.update(json.dumps([str(qid), str(signature), str(test)], ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]


def model_name(model_args: str | None) -> str | None:
    """lmms-eval's name for the model of a `--model_args` string (what names its output folder)."""
    if not model_args:
        return None
    from lmms_eval.loggers.evaluation_tracker import GeneralConfigTracker

    name = GeneralConfigTracker._get_model_name(model_args)  # noqa: SLF001 - lmms-eval's own rule, read not patched
    return name or None


def current_model(argv: Sequence[str] | None = None) -> str | None:
    """The model this lmms-eval process evaluates, from its `--model_args` (None outside the CLI)."""
    argv = list(sys.argv if argv is None else argv)
    for index, arg in enumerate(argv):
        if arg == "--model_args" and index + 1 < len(argv):
            return model_name(argv[index + 1])
        if arg.startswith("--model_args="):
            return model_name(arg.split("=", 1)[1])
    return None


def samples_model(samples: Path) -> str | None:
    """The model of the run that wrote `samples` (its `<ts>_results.json` beside it), None if unknown."""
    stamp = samples.name.split("_samples_", 1)[0]
    results = samples.with_name(f"{stamp}_results.json")
    try:
        config = json.loads(results.read_text(encoding="utf-8")).get("config", {})
    except (OSError, ValueError, AttributeError):
        return None
    model_args = config.get("model_args") if isinstance(config, dict) else None
    return model_name(model_args) if isinstance(model_args, str) else None


@dataclass(frozen=True)
class Choice:
    path: Path
    why: str


def resolve_samples_file(wanted: str, configured: str | None = None, model: str | None = None) -> Choice:
    """The samples file of the v2t task `wanted` (the one the t2c task's YAML declares, `dataset_kwargs.descriptions_from`):
    $HUMANEVAL_V_DESCRIPTIONS (else the YAML's `metadata.descriptions`), a file as named, or in a directory the
    newest `*_samples_<wanted>.jsonl` of a run of `model`."""
    value = os.environ.get(DESCRIPTIONS_ENV, "").strip() or (configured or "").strip()
    if not value:
        raise DataError(
            f"no descriptions. Run `{wanted}` first (with --log_samples), then set "
            f"{DESCRIPTIONS_ENV}=<its output directory or its *_samples_{wanted}.jsonl file>."
        )
    path = Path(value).expanduser()
    if path.is_file():
        return Choice(path, f"named by {DESCRIPTIONS_ENV}")
    if not path.is_dir():
        raise DataError(f"{DESCRIPTIONS_ENV}={path} does not exist")
    found = sorted((Path(p) for p in glob.glob(str(path / "**" / f"*_samples_{wanted}.jsonl"), recursive=True)), key=os.path.getmtime)
    if not found:
        raise DataError(f"{DESCRIPTIONS_ENV}={path} holds no *_samples_{wanted}.jsonl file")
    models = {p: samples_model(p) for p in found}
    if model is None:
        distinct = {m for m in models.values()}
        if len(distinct) == 1:
            return Choice(found[-1], f"the newest of {len(found)} {wanted} samples file(s) under {path}, all of model {next(iter(distinct))!r}")
        raise DataError(
            f"{DESCRIPTIONS_ENV}={path} holds {wanted} samples of several models ({sorted(map(str, distinct))}) and this run's model "
            f"is unknown: name the samples file itself"
        )
    matching = [p for p in found if models[p] == model]
    if not matching:
        others = sorted({f"{m!r} ({p})" for p, m in models.items()})
        raise DataError(
            f"{DESCRIPTIONS_ENV}={path} holds no {wanted} samples of model {model!r} (found: {'; '.join(others)}). "
            f"Run {wanted} with this model first, or name another model's samples file explicitly."
        )
    return Choice(matching[-1], f"the newest {wanted} samples file of model {model!r} under {path}")


def read_descriptions(path: Path) -> tuple[dict[str, list[str]], set[str]]:
    """(qid -> descriptions in sample order, the data fingerprints the samples recorded) from a v2t samples
    JSONL; errors name the file and line."""
    out: dict[str, list[str]] = {}
    fingerprints: set[str] = set()
    for lineno, record in iter_jsonl(path):
        value = record.get(DESCRIPTION_KEY)
        if not isinstance(value, dict) or "qid" not in value or not isinstance(value.get("descriptions"), list):
            raise DataError(f"{path}:{lineno}: not a humaneval_v_v2t sample (no '{DESCRIPTION_KEY}' with qid and descriptions)")
        out[str(value["qid"])] = [str(d) for d in value["descriptions"]]
        if value.get("data_fingerprint"):
            fingerprints.add(str(value["data_fingerprint"]))
    if not out:
        raise DataError(f"{path}: no descriptions")
    return out, fingerprints


def strong_coder_enabled(metadata: dict[str, Any] | None = None) -> bool:
    if os.environ.get(STRONG_CODER_ENV, "").strip() == "1":
        return True
    return bool((metadata or {}).get("strong_coder"))
