"""VLM2-Bench's official formats.

In: the JSONL files the official inference scripts write, one record per answered question (GC: `q_id`,
`task`, `question`, `edit_prompt`, `model_answer`, `gt_answer`; OC/PC images: `q_id`, `type`, `question`,
`model_answer`, `gt_answer`; PC-VID: the question entry plus `model_answer`), a file, a folder of them (every
`*.jsonl` directly in it, each file scored on its own, as the official scorers read their `--input_folder`)
or a tree holding the official result folders (`code/gc/test/test_res/test_mat`, ...). The subtask comes
from `--task`, else the official folder names, else the records (`vid` -> PC-VID, GC's `task` field).

Out: the official result tree under `<out>/vlm2_bench/` (`code/.../test_res/<folder>/<model>_<ts>_answers.jsonl`,
`vid_<model>_<ts>.jsonl` for PC-VID, `json.dumps` with ASCII escaping, the official key order) plus the
counting question files the counting scorers read (`jsonl/{oc,pc}/vanilla/*_cnt.jsonl`), and for GC a second
folder `test_<mat|trk>_std/` whose answers are standardized to "T"/"F" by the official T/F parser (the
official standardizer was never published): the official GC scorer gives our `gc_exact_*` numbers on the
first folder and our `tf_*` / `vlm2_score` numbers on the second.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lmms_tasks.utils.commands.official.common import Imported, OfficialFormatError, RunTask, Written, one_line, safe_name, sample
from lmms_tasks.utils.commands.tasks import declared_variants, vlm2_declared
from lmms_tasks.utils.services.data import DataError, DataSource
from lmms_tasks.utils.vlm2_bench import TABLE, task_name
from lmms_tasks.utils.vlm2_bench.data import SOURCE, dataset_root, load_docs, question_file
from lmms_tasks.utils.vlm2_bench.hooks import SCORE, process_results
from lmms_tasks.utils.vlm2_bench.parsers import parse_tf

# Where the official inference scripts write each subtask (relative to the repository root) and the official
# scorer of each (run from the repository root): the subtask table's `result_folder` and `scorer` columns.
RESULT_FOLDERS = {name: row.result_folder for name, row in TABLE.items()}
SCORERS = {name: row.scorer for name, row in TABLE.items()}
STD_SUFFIX = "_std"  # test_mat_std/: GC answers standardized to T/F (ours)


_SUBTASK_OF = {task: subtask for (subtask,), task in declared_variants("vlm2_bench", ("subtask",)).items()}  # as each YAML declares


def declared(subtask: str) -> dict[str, Any]:
    """The subtask's `dataset_kwargs` as its task's YAML declares them (`subtask`, `kind`, `strip_tf_prefix`)."""
    found = vlm2_declared().get(subtask)
    if found is None:
        raise OfficialFormatError(f"no VLM2-Bench task declares dataset_kwargs.subtask {subtask!r}")
    return found


def kind_of(subtask: str) -> str:
    return str(declared(subtask)["kind"])


def _folder_subtasks() -> dict[str, list[str]]:
    """Official result folder name (and each GC folder's `_std` twin) -> the subtasks written to a folder of
    that name (OC and PC share test_cpr, test_cnt and test_grp)."""
    found: dict[str, list[str]] = {}
    for name, row in TABLE.items():
        leaf = Path(row.result_folder).name
        found.setdefault(leaf, []).append(name)
        if kind_of(name) == "tf_gc":
            found.setdefault(f"{leaf}{STD_SUFFIX}", []).append(name)
    return found


_FOLDER_SUBTASKS = _folder_subtasks()
SIDE_FOLDERS = {"correct", "wrong", "real_correct", "scored_files"}  # what the official scorers write; never read
_IMAGE_KEYS = ("q_id", "type", "question", "model_answer", "gt_answer")
RECORD_KEYS = {"tf_gc": ("q_id", "task", "question", "edit_prompt", "model_answer", "gt_answer")}
# What the official scorer of each kind reads (the importer also needs the id to find the document).
REQUIRED = {
    "tf_gc": ("q_id", "gt_answer", "model_answer"),
    "tf_cpr": ("q_id", "gt_answer", "model_answer"),
    "cnt": ("q_id", "gt_answer", "model_answer"),
    "grp": ("q_id", "gt_answer", "model_answer"),
    "vid": ("vid", "model_answer"),
}


def subtask_of_task(task: str) -> str:
    """The subtask the task's YAML declares (`dataset_kwargs.subtask`)."""
    if task not in _SUBTASK_OF:
        raise OfficialFormatError(f"--task {task!r} is not a VLM2-Bench task (one of {', '.join(sorted(_SUBTASK_OF))})")
    return _SUBTASK_OF[task]


def subtask_from_path(path: Path) -> str | None:
    """The subtask an official file belongs to, from the official folder it sits in (a folder name two
    families share: the nearest family folder above it decides), or a `vid_` file name."""
    candidates = _FOLDER_SUBTASKS.get(path.parent.name, [])
    if len(candidates) == 1:
        return candidates[0]
    for part in reversed(path.resolve().parent.parts[:-1] if candidates else ()):
        chosen = [name for name in candidates if TABLE[name].family == part]
        if chosen:
            return chosen[0]
    if path.name.startswith("vid_"):
        return _video_subtask()
    return None


def _video_subtask() -> str | None:
    return next((name for name in TABLE if kind_of(name) == "vid"), None)


def subtask_from_records(records: list[dict[str, Any]]) -> str | None:
    first = records[0]
    if "vid" in first:
        return _video_subtask()
    gc = f"gc_{first.get('task')}"
    if "edit_prompt" in first and gc in TABLE and kind_of(gc) == "tf_gc":
        return gc
    return None


def collect(paths: Iterable[Path]) -> list[Path]:
    """The official files to score: a file; every `*.jsonl` directly in a folder that has some (not
    recursive, as the official scorers read a folder); else every such file in the official result folders
    of a tree (the scorers' side folders `correct/`, `wrong/`, `real_correct/`, `scored_files/` are skipped)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
            continue
        if not path.is_dir():
            raise OfficialFormatError(f"{path}: no such file or directory")
        direct = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        if direct:
            found += direct
            continue
        tree = []
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d not in SIDE_FOLDERS and not d.startswith("."))
            if Path(dirpath).name in _FOLDER_SUBTASKS:
                tree += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".jsonl")]
        if not tree:
            raise OfficialFormatError(f"{path}: no official VLM2-Bench prediction file (*.jsonl) in it or in an official result folder under it")
        found += tree
    return found


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) of an official JSONL file; every line must be a JSON object (the official scorers
    `json.loads` every line: a blank or malformed line crashes them)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OfficialFormatError(f"{path}: cannot be read as UTF-8 text ({exc})") from exc
    records = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            raise OfficialFormatError(f"{path}:{lineno}: blank line (the official scorers crash on it: every line must be a JSON record)")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise OfficialFormatError(f"{path}:{lineno}: not valid JSON ({exc.msg}); not an official VLM2-Bench prediction file") from exc
        if not isinstance(record, dict):
            raise OfficialFormatError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
        records.append((lineno, record))
    if not records:
        raise OfficialFormatError(f"{path}: holds no records")
    return records


def _norm_id(value: Any) -> str:
    """A q_id as our documents hold it (strings as they are, other JSON values dumped)."""
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value))


def _data(subtask: str, source: DataSource = SOURCE) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Path]:
    """The subtask's documents of `source` (no media check: scoring needs no pixels), the raw question-file
    records they index (`doc_index`), and the question file."""
    root = dataset_root(source)
    kwargs = declared(subtask)
    path = question_file(root, subtask, kwargs["kind"])
    docs = load_docs(subtask, root, check_media=False, kind=kwargs["kind"], strip_tf_prefix=bool(kwargs.get("strip_tf_prefix")))
    with open(path, encoding="utf-8") as fh:
        raw = [json.loads(line) for line in fh if line.strip()]
    return docs, raw, path


def read(path: Path, task: str | None = None) -> Imported:
    """One official prediction file as the samples of its subtask's task."""
    records = read_records(path)
    subtask = subtask_of_task(task) if task else (subtask_from_path(path) or subtask_from_records([r for _, r in records]))
    if subtask is None:
        raise OfficialFormatError(
            f"{path}: cannot tell its VLM2-Bench subtask (keep it in its official folder, e.g. {RESULT_FOLDERS['oc_cpr']}/, or pass --task vlm2_bench_<subtask>)"
        )
    kind = kind_of(subtask)
    id_field = "vid" if kind == "vid" else "q_id"
    docs, raw, qfile = _data(subtask)
    index: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        index.setdefault(doc["vid"] if kind == "vid" else doc["q_id"], []).append(doc)
    kept = {doc["doc_index"] for doc in docs}
    skipped = {_norm_id(r.get(id_field)) for i, r in enumerate(raw) if i not in kept}
    used: set[int] = set()
    samples = []
    for lineno, record in records:
        where = f"{path}:{lineno}"
        for name in REQUIRED[kind]:
            if name not in record:
                raise OfficialFormatError(f"{where}: field {name!r} is missing")
        rid = record[id_field]
        where = f"{path}:{lineno} ({id_field}={rid!r})"
        if kind == "tf_cpr" and not isinstance(rid, str):
            raise OfficialFormatError(f"{where}: field 'q_id' must be a string (the official comparison scorer crashes on a {type(rid).__name__})")
        if kind == "vid" and not isinstance(rid, str):
            raise OfficialFormatError(f"{where}: field 'vid' must be a string")
        answer = record["model_answer"]
        if not isinstance(answer, str):
            raise OfficialFormatError(f"{where}: field 'model_answer' must be a string, got {json.dumps(answer)} (the official scorer crashes on it)")
        key = rid if kind == "vid" else _norm_id(rid)
        pool = index.get(key)
        if not pool:
            why = " (its record in the data has fewer than 2 images: the official inference skips it)" if key in skipped else ""
            raise OfficialFormatError(f"{where}: {id_field} {rid!r} is not in the data ({qfile}){why}")
        if kind != "vid":
            data_id = raw[pool[0]["doc_index"]].get("q_id")
            if type(data_id) is not type(rid):
                raise OfficialFormatError(
                    f"{where}: field 'q_id' is {json.dumps(rid)} ({type(rid).__name__}) but the data's is {json.dumps(data_id)} "
                    f"({type(data_id).__name__}); the official scorer groups by the raw JSON value"
                )
            gt = record["gt_answer"]
            same_gt = [d for d in pool if _same(raw[d["doc_index"]].get("gt_answer"), gt)]
            if not same_gt:
                theirs = raw[pool[0]["doc_index"]].get("gt_answer")
                raise OfficialFormatError(f"{where}: field 'gt_answer' is {json.dumps(gt)} but the data's is {json.dumps(theirs)}")
            candidates = [d for d in same_gt if d["doc_index"] not in used]
            by_question = [d for d in candidates if raw[d["doc_index"]].get("question") == record.get("question")]
            candidates = by_question or candidates
        else:
            candidates = [d for d in pool if d["doc_index"] not in used]
        if not candidates:
            raise OfficialFormatError(f"{where}: duplicate record: {id_field} {rid!r} appears more often than in the data ({len(pool)} time(s))")
        doc = candidates[0]
        used.add(doc["doc_index"])
        samples.append(sample(doc["doc_index"], process_results(doc, [answer])))
    imported = Imported(
        path=path,
        task=task_name(subtask),
        official_format=f"VLM2-Bench official inference output ({subtask})",
        samples=samples,
        n_expected=len(docs),
        n_expected_from=f"the documents of {qfile.name}; scored over the records it holds, as the official scorer does",
        setting=subtask,
    )
    if kind == "tf_gc":
        imported.notes.append(
            "the official GC scorer (exact 'T'/'F' match) prints gc_exact_pos_acc | gc_exact_neg_acc | gc_exact_pair_acc; "
            "vlm2_score / tf_* parse each answer first (the official scorer on answers standardized to T/F)"
        )
    return imported


def _same(a: Any, b: Any) -> bool:
    """Whether a record's `gt_answer` is the data's as the official scorers compare it: numbers (JSON
    booleans included, Python's 1 and 0) by value, since the counting scorer's `parsed == gt_answer` and
    `abs(parsed - gt_answer)` treat 2.0 as 2 and true as 1; anything else by type and value (a string "2"
    makes that scorer raise, and the T/F and grouping scorers compare strings)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


# -- export ------------------------------------------------------------------------------------------------


def _items(run_task: RunTask) -> list[dict[str, Any]]:
    from lmms_tasks.utils.commands.score import read_samples

    items = []
    for line in read_samples(run_task.samples_path):
        item = line.get(SCORE)
        if not isinstance(item, dict) or "doc_index" not in item:
            raise OfficialFormatError(f"{run_task.samples_path}: doc_id {line.get('doc_id')}: no {SCORE!r} item with a doc_index")
        items.append(item)
    return sorted(items, key=lambda i: int(i["doc_index"]))


def _record(kind: str, raw: dict[str, Any], answer: str) -> dict[str, Any]:
    """The official inference script's record for one answer, keys in its order."""
    if kind == "vid":
        record = dict(raw)
        record["model_answer"] = answer
        record["gt_answer"] = record.get("gt_answer", "")  # kept in place when present, else appended
        return record
    if kind == "tf_gc":
        values = {"q_id": raw.get("q_id"), "task": raw.get("task"), "question": raw.get("question"), "edit_prompt": raw.get("edited_prompt")}
    else:
        values = {"q_id": raw.get("q_id"), "type": raw.get("type"), "question": raw.get("question")}
    return {**values, "model_answer": answer, "gt_answer": raw.get("gt_answer")}


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="ascii", newline="\n") as fh:  # json.dumps escapes every non-ASCII character
        fh.writelines(json.dumps(record) + "\n" for record in records)


def export(run_tasks: list[RunTask], out: Path, source: DataSource = SOURCE) -> list[Written]:
    """The official result tree of every VLM2-Bench task of the runs under `out` (a repository-root
    stand-in), with the data of `source` (the one the runs recorded: `data_sources.run_data`)."""
    written: list[Written] = []
    copied: set[str] = set()
    for run_task in run_tasks:
        subtask = _SUBTASK_OF.get(run_task.task)
        if subtask is None:
            continue
        kind = kind_of(subtask)
        try:
            docs, raw, qfile = _data(subtask, source)
        except DataError as exc:
            raise OfficialFormatError(one_line(f"{run_task.task}: {exc}")) from exc
        by_index = {doc["doc_index"]: doc for doc in docs}
        records, std_records = [], []
        for item in _items(run_task):
            doc = by_index.get(int(item["doc_index"]))
            if doc is None or (kind != "vid" and doc["q_id"] != item.get("q_id")):
                raise OfficialFormatError(
                    f"{run_task.samples_path}: doc_index {item['doc_index']} (q_id={item.get('q_id')!r}) is not in the data ({qfile}); export with the data the run used"
                )
            answer = str(item.get("response") or "").strip()
            records.append(_record(kind, raw[doc["doc_index"]], answer))
            if kind == "tf_gc":
                std_records.append(_record(kind, raw[doc["doc_index"]], parse_tf(answer) or answer))
        model = safe_name(run_task.model)
        folder = out / RESULT_FOLDERS[subtask]
        if kind == "vid":
            name = f"vid_{model.replace('_', '-')}_{run_task.stamp}.jsonl"  # the scorer keeps `vid_[^_]+` as the model
        else:
            name = f"{model}_{run_task.stamp}_answers.jsonl"
        if (folder / name).exists():
            raise OfficialFormatError(f"{folder / name}: two runs of {run_task.model} at {run_task.stamp} both have {run_task.task}")
        _write_jsonl(folder / name, records)
        command = f"python {SCORERS[subtask]} --input_folder {RESULT_FOLDERS[subtask]}" if kind != "vid" else f"python {SCORERS[subtask]}"
        written.append(Written(str(Path(RESULT_FOLDERS[subtask]) / name), command))
        if kind == "tf_gc":
            std_folder = f"{RESULT_FOLDERS[subtask]}{STD_SUFFIX}"
            _write_jsonl(out / std_folder / f"{model}_{run_task.stamp}_std_answers.jsonl", std_records)
            written.append(Written(f"{std_folder}/{model}_{run_task.stamp}_std_answers.jsonl", f"python {SCORERS[subtask]} --input_folder {std_folder}"))
        if kind == "cnt" and subtask not in copied:  # the counting scorers read L from the question file
            relative = qfile.relative_to(dataset_root(source))
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(qfile, out / relative)
            copied.add(subtask)
            written.append(Written(str(relative)))
    return written
