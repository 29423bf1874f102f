"""HAERAE-Vision's official CSV formats.

In:
- the CSV the official `main.py` writes (every dataset column, then `response`, `question_type`,
  `question_used`; the earlier repository's has a single `question` column instead of the last two): each
  row is matched to its dataset item by `question_idx`, its `question_used` and `checklist` cells must be
  the data's (they are the judge's input), and the response cell is judged by our judge client exactly as
  the official `score.py` would judge that file (the cell as it is: `main.py` already cleaned it);
- the CSV `score.py` writes (the same columns after its read round trip, then `judge_response` and `score`):
  already judged, so it is re-aggregated from the recorded replies and no request is sent; a `score` cell
  (a number, the earlier `score.py`'s dict, or empty) that is not what its `judge_response` gives is refused.
A folder means every `*.csv` directly in it (the official `outputs/` and `scores/` folders).

Out: `<out>/haerae_vision/outputs/<model>-<variant>_<run>.csv` (the `main.py` CSV: the dataset's own
`to_pandas()` columns, written with `to_csv(index=False)`) and, when the run's judge replies are recorded,
`scores/<same name>` (the `score.py` CSV: the same round trip, then the replies and our parsed scores).
`merge_scores.ipynb` takes the model from the name minus its last `_<run>`, so the variants stay apart.
"""

from __future__ import annotations

import ast
import io
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lmms_tasks.utils.commands.official.common import Imported, OfficialFormatError, RunTask, Written, safe_name, sample
from lmms_tasks.utils.haerae_vision import VARIANTS, task_name
from lmms_tasks.utils.services.data import DataError, DataSource
from lmms_tasks.utils.services.llm_judge.judge import RecordedReplies

SCORED_COLUMNS = ("judge_response", "score")


def collect(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            direct = sorted(p for p in path.glob("*.csv") if p.is_file())
            if not direct:
                nested = sorted(p for sub in ("outputs", "scores") for p in (path / sub).glob("*.csv") if p.is_file())
                if not nested:
                    raise OfficialFormatError(f"{path}: no official HAERAE-Vision CSV (*.csv) in it or in its outputs/ and scores/ folders")
                direct = nested
            found += direct
        else:
            raise OfficialFormatError(f"{path}: no such file or directory")
    return found


def read_csv(path: Path) -> Any:
    """Every cell as the text the file holds (no missing-value conversion: the judge input is rebuilt from
    the text exactly as the official round trip renders it)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as exc:
        raise OfficialFormatError(f"{path}: not a CSV file pandas can read ({' '.join(str(exc).split())})") from exc
    if frame.columns.size and str(frame.columns[0]).startswith("Unnamed: 0"):
        frame = frame.drop(columns=frame.columns[0])  # an index column another tool wrote; nothing official reads it
    return frame


def _variant(path: Path, frame: Any, docs: dict[str, dict[str, dict[str, Any]]], task: str | None) -> str:
    if task:
        variant = task.removeprefix("haerae_vision_")
        if variant not in VARIANTS:
            raise OfficialFormatError(f"--task {task!r} is not a HAERAE-Vision task (haerae_vision_original, haerae_vision_explicit)")
        return variant
    if "question_type" in frame.columns:
        values = sorted(set(frame["question_type"]))
        if len(values) != 1 or values[0] not in VARIANTS:
            raise OfficialFormatError(f"{path}: field 'question_type' must be one of {VARIANTS} on every row, found {values}")
        return values[0]
    if "question" in frame.columns:  # the earlier repository: the variant shows only in the question text
        seen = set()
        for qidx, question in zip(frame["question_idx"], frame["question"]):
            matches = {v for v in VARIANTS if docs[v].get(str(qidx), {}).get("question_used") == question}
            if len(matches) == 1:
                seen |= matches
        if len(seen) == 1:
            return seen.pop()
    raise OfficialFormatError(f"{path}: cannot tell the question variant (no 'question_type' column): pass --task haerae_vision_original or haerae_vision_explicit")


_docs_memo: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}


def _docs() -> dict[str, dict[str, dict[str, Any]]]:
    """variant -> question_idx -> document (the data loaded and checked once per data source and process)."""
    from lmms_tasks.utils.haerae_vision.data import SOURCE, load_split, stamp_variant

    key = os.environ.get(SOURCE.env_var, "")
    if key not in _docs_memo:
        split = load_split().remove_columns(["images"])
        _docs_memo[key] = {v: {str(row["question_idx"]): row for row in stamp_variant(split, v)} for v in VARIANTS}
    return _docs_memo[key]


def _recorded_score(cell: str, where: str) -> float | None:
    """A `score` cell as `merge_scores.ipynb` reads it: empty -> None (counted 0), a number, or the earlier
    `score.py`'s dict string with a 'value'."""
    if cell.strip() == "" or cell.strip().lower() == "nan":
        return None
    try:
        return float(cell)
    except ValueError:
        pass
    try:
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError) as exc:
        raise OfficialFormatError(f"{where}: field 'score' is neither a number nor the earlier score.py's dict: {cell[:80]!r}") from exc
    if isinstance(value, dict) and "value" in value:
        return None if value["value"] is None else float(value["value"])
    raise OfficialFormatError(f"{where}: field 'score' is neither a number nor the earlier score.py's dict: {cell[:80]!r}")


def read(path: Path, task: str | None = None) -> Imported:
    """A `main.py` CSV (to judge) or a `score.py` CSV (judged: replayed) as the samples of its variant's task."""
    from lmms_tasks.utils.haerae_vision.judging import parse_score
    from lmms_tasks.utils.haerae_vision.metrics import process_results

    frame = read_csv(path)
    scored = all(c in frame.columns for c in SCORED_COLUMNS)
    question_column = "question_used" if "question_used" in frame.columns else "question"
    for column in ("question_idx", "response", "checklist", question_column):
        if column not in frame.columns:
            raise OfficialFormatError(f"{path}: column {column!r} is missing; not an official HAERAE-Vision CSV (main.py or score.py)")
    if frame.shape[0] == 0:
        raise OfficialFormatError(f"{path}: holds no rows")
    try:
        docs = _docs()
    except DataError as exc:
        raise OfficialFormatError(" ".join(str(exc).split())) from exc
    variant = _variant(path, frame, docs, task)
    by_id = docs[variant]
    seen: set[str] = set()
    samples, replies = [], {}
    for row_number, row in enumerate(frame.to_dict("records"), start=1):
        qidx = str(row["question_idx"]).strip()
        where = f"{path}: row {row_number} (question_idx={qidx!r})"
        doc = by_id.get(qidx)
        if doc is None:
            raise OfficialFormatError(f"{where}: question_idx is not in the data")
        if qidx in seen:
            raise OfficialFormatError(f"{where}: duplicate question_idx")
        seen.add(qidx)
        if row[question_column] != doc["question_used"]:
            raise OfficialFormatError(f"{where}: field {question_column!r} is not the data's question_{variant} (the judge reads it)")
        if row["checklist"] != doc["checklist_text"]:
            raise OfficialFormatError(f"{where}: field 'checklist' is not the data's checklist as the official CSV renders it (the judge reads it)")
        item_by_metric = process_results(doc, [row["response"]])
        item = {**next(iter(item_by_metric.values())), "response": row["response"]}  # judged as the cell holds it
        samples.append(sample(len(samples), {metric: item for metric in item_by_metric}))
        if scored:
            reply = row["judge_response"]
            recorded = _recorded_score(row["score"], where)
            parsed = parse_score(reply)
            if (recorded is None) != (parsed is None) or (recorded is not None and parsed is not None and not math.isclose(recorded, parsed, abs_tol=1e-12)):
                raise OfficialFormatError(f"{where}: field 'score' is {row['score']!r} but its judge_response gives {parsed!r}")
            replies[qidx] = reply
    imported = Imported(
        path=path,
        task=task_name(variant),
        official_format=f"HAERAE-Vision {'score.py' if scored else 'main.py'} CSV ({variant} questions)",
        samples=samples,
        n_expected=len(by_id),
        n_expected_from="the items of the data",
        setting=variant,
    )
    if scored:
        imported.replay = RecordedReplies(replies=replies, source=f"{path.name}(score.py)")
        imported.notes.append("already judged: the recorded judge replies were re-aggregated, no judge request was sent")
    return imported


# -- export ------------------------------------------------------------------------------------------------


def _replies(run_task: RunTask) -> tuple[dict[str, tuple[str | None, float | None]] | None, str]:
    """question_idx -> (judge reply, parsed score) recorded with the run, or (None, why not)."""
    from lmms_tasks.utils.commands.report.runs import summaries

    for summary in summaries(run_task.run, "judgements"):
        if summary.task != run_task.task or summary.owner_task != run_task.task:
            continue
        if summary.stale:
            return None, f"{summary.path} was written by a later run in the same output path"
        path = Path(summary.data.get("records") or summary.path.with_name(f"{summary.task}.jsonl"))
        found = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    record = json.loads(line)
                    ok = record.get("error") is None
                    found[str(record["key"])] = (record.get("reply") if ok else None, record.get("parsed") if ok else None)
        return found, ""
    return None, "the run recorded no judgements for it"


def export(run_tasks: list[RunTask], out: Path, source: DataSource | None = None) -> tuple[list[Written], list[str]]:
    """`outputs/` (main.py CSVs) and `scores/` (score.py CSVs) for every HAERAE-Vision task of the runs, with
    the data of `source` (the one the runs recorded: `data_sources.run_data`)."""
    import pandas as pd

    from lmms_tasks.utils.commands.score import read_samples
    from lmms_tasks.utils.haerae_vision.data import SOURCE, load_split

    mine = [t for t in run_tasks if t.task in {task_name(v) for v in VARIANTS}]
    if not mine:
        return [], []
    try:
        table = load_split(source or SOURCE).to_pandas()
    except DataError as exc:
        raise OfficialFormatError(" ".join(str(exc).split())) from exc
    written: list[Written] = []
    notes: list[str] = []
    for run_task in mine:
        variant = run_task.task.removeprefix("haerae_vision_")
        responses = {}
        for line in read_samples(run_task.samples_path):
            item = line.get("haerae_vision_score")
            if not isinstance(item, dict) or "question_idx" not in item:
                raise OfficialFormatError(f"{run_task.samples_path}: doc_id {line.get('doc_id')}: no haerae_vision_score item with a question_idx")
            responses[str(item["question_idx"])] = str(item["response"])
        ids = table["question_idx"].astype(str)
        unknown = sorted(set(responses) - set(ids))
        if unknown:
            raise OfficialFormatError(f"{run_task.samples_path}: question_idx {unknown[0]!r} is not in the data; export with the data the run used")
        frame = table[ids.isin(responses)].copy()
        frame["response"] = [responses[q] for q in frame["question_idx"].astype(str)]
        frame["question_type"] = variant
        frame["question_used"] = frame[f"question_{variant}"]
        stem = f"{safe_name(run_task.model, keep='.-')}-{variant}"
        run_number = 1
        while (out / "outputs" / f"{stem}_{run_number}.csv").exists():
            run_number += 1  # another run of the same model: merge_scores.ipynb pools the runs of a name
        name = f"{stem}_{run_number}.csv"
        (out / "outputs").mkdir(parents=True, exist_ok=True)
        text = frame.to_csv(index=False)
        (out / "outputs" / name).write_text(text, encoding="utf-8", newline="")
        written.append(Written(f"outputs/{name}", f"python score.py --input outputs/{name} --output scores/{name} --model gpt-5-mini"))
        replies, why = _replies(run_task)
        if replies is None:
            notes.append(f"{run_task.task} of {run_task.model}: no score.py CSV ({why})")
            continue
        judged = pd.read_csv(io.StringIO(text))  # score.py's own read of the main.py CSV
        keys = judged["question_idx"].astype(str)
        missing = [q for q in keys if q not in replies]
        if missing:
            notes.append(f"{run_task.task} of {run_task.model}: no score.py CSV (no judgement recorded for question_idx {missing[0]!r})")
            continue
        judged["judge_response"] = [replies[q][0] for q in keys]
        judged["score"] = [replies[q][1] for q in keys]
        (out / "scores").mkdir(parents=True, exist_ok=True)
        (out / "scores" / name).write_text(judged.to_csv(index=False), encoding="utf-8", newline="")
        written.append(Written(f"scores/{name}", "merge_scores.ipynb (cells 0 and 3) in the folder holding scores/"))
    return written, notes
