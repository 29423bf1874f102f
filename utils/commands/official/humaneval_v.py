"""HumanEval-V's official prediction files.

In: the JSON list the official inference writes, `[{"qid", "prompt"?, "predictions": [...]}, ...]`, entries
aggregated by qid in file order as the official evaluator does (a V2T2C step-2 file holds one entry per
description). The version and setting come from what the file holds (`detect`): a `prompt` (or `prompts`)
makes it v2 and the prompt's official template names the setting; no prompt, v1 (`VERSIONS`). The official
file name `<model>_<V2C|V2C-CoT|GT-T2C|V2T2C_T2C|V2T2C-4o_T2C|V2T>_sample_<n>.json` decides only what the
content leaves open (GT-T2C and V2T2C share a template); `--setting` may not contradict the content. The
official evaluator's output (`*_executed.json`, entries with execution `results`) is refused, naming the
prediction file to pass. The number of predictions per task decides the metric
as the official `compute_score` does: 1 -> pass@1 (our greedy task), more -> pass@3 (our `_pass3` task; v1:
pass@10). Every task must have the same number; v2 needs every task of the data (the official evaluator
asserts it) unless `--allow-partial`.

Out: one prediction file per setting and sample count, named as the official scripts name them, in one
`exp_base_dir` (`<out>/humaneval_v/`): `python evaluate.py --model_name M --exp_type E --sample_num N
--exp_base_dir <out>/humaneval_v` scores each (from the official repository root). v1 runs: one
`<model>_sample_<n>.json` per task in `<out>/humaneval_v1/` (`{"qid", "predictions"}` entries, as v1's
`inference.py` writes them), scored by v1's `python evaluate.py --prediction_file <file>`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_tasks.utils.commands.official.common import Imported, OfficialFormatError, RunTask, Written, safe_name, sample
from lmms_tasks.utils.commands.tasks import declared_variants, humaneval_v1_tasks
from lmms_tasks.utils.humaneval_v import v1
from lmms_tasks.utils.humaneval_v.prompts import SETTINGS, TABLE
from lmms_tasks.utils.services.data import DataError, DataSource


@dataclass(frozen=True)
class Version:
    """A HumanEval-V release: its tasks by (setting, several samples?) and the k of its sampled metric."""

    name: str
    tasks: dict[tuple[str, bool], str]  # (setting, n > 1) -> our task
    sampled_k: int


OFFICIAL_V2_K = 3  # the official v2 scorer: one sample -> pass@1, more -> pass@3 (compute_score)
_DECLARED = declared_variants("humaneval_v", ("setting", "k"))  # (setting, k) -> our task, as the task YAMLs declare them
VERSIONS = {
    "v2": Version("v2", {(s, many): _DECLARED[(s, OFFICIAL_V2_K if many else 1)] for s in SETTINGS for many in (False, True)}, OFFICIAL_V2_K),
    # v1 (108 tasks, one setting): the tasks `humaneval_v1` / `humaneval_v1_pass10`, scored through their own YAML.
    "v1": Version("v1", {(v1.SETTING, k > 1): task for k, task in humaneval_v1_tasks().items()}, max(humaneval_v1_tasks())),
}
# official exp_type -> (our setting, the infix of its prediction file): the settings' table (humaneval_v/settings.csv),
# plus V2T2C with GPT-4o as the strong coder, whose T2C step the official pipeline writes as its own experiment
STRONG_CODER = "V2T2C-4o"
EXPERIMENTS = {row["label"]: (setting, row["result_infix"]) for setting, row in TABLE.items()} | {STRONG_CODER: ("t2c", "V2T2C-4o_T2C")}
_BY_INFIX = {infix: exp for exp, (_, infix) in EXPERIMENTS.items()}
V2_NAME = re.compile(rf"^(?P<model>.+)_(?P<infix>{'|'.join(map(re.escape, sorted(_BY_INFIX, key=len, reverse=True)))})_sample_(?P<n>\d+)\.json$")
V1_NAME = re.compile(r"^(?P<model>.+)_sample_(?P<n>\d+)\.json$")
# --setting: an exp_type in any case, or one of our settings' names
_SETTING_ALIASES = {**{exp.lower(): exp for exp in EXPERIMENTS}, **{setting: row["label"] for setting, row in TABLE.items()}, "v1": "v1"}


def parse_setting(value: str) -> str:
    """`--setting`: an official exp_type (V2C, V2C-CoT, GT-T2C, V2T2C, V2T2C-4o, V2T), one of our settings
    (v2c, v2c_cot, gt_t2c, t2c, v2t) or v1."""
    found = _SETTING_ALIASES.get(value.strip().lower())
    if found is None:
        raise OfficialFormatError(f"--setting {value!r}: expected one of {', '.join(EXPERIMENTS)} or v1")
    return found


def setting_from_name(path: Path) -> str | None:
    match = V2_NAME.match(path.name)
    if match:
        return _BY_INFIX[match.group("infix")]
    return "v1" if V1_NAME.match(path.name) else None


# official prompt template (by the first setting that uses it) -> the experiments whose requests use it (V2T2C's
# step 2, its strong-coder run and GT-T2C share T2C's)
_TEMPLATE_EXPERIMENTS = {
    next(s for s in TABLE if SETTINGS[s][0] == key): tuple(sorted(exp for exp, (s, _) in EXPERIMENTS.items() if SETTINGS[s][0] == key))
    for key in dict.fromkeys(key for key, _ in SETTINGS.values())
}


@functools.cache
def _template_pattern(setting: str) -> tuple[re.Pattern[str], int]:
    """A prompt template as a pattern (each placeholder: any text; the whole compared without its outer
    whitespace) and the length of its fixed text."""
    import string

    from lmms_tasks.utils.services.prompts import prompt

    literals = [literal for literal, *_ in string.Formatter().parse(prompt(SETTINGS[setting][0]).strip())]
    return re.compile("(?s)" + "(.*)".join(re.escape(literal) for literal in literals)), sum(map(len, literals))


def experiments_of_prompt(text: str) -> tuple[str, ...]:
    """The official experiments whose prompt template `text` was made from (() when none: not an official
    prompt); where several templates fit, the one with the most fixed text."""
    found = [(size, exps) for setting, exps in _TEMPLATE_EXPERIMENTS.items() for pattern, size in [_template_pattern(setting)] if pattern.fullmatch(text.strip())]
    return max(found)[1] if found else ()


def is_executed(entries: list[Any]) -> bool:
    """The official evaluator's output (`<prediction file>_executed.json`): entries carry execution results."""
    return any(isinstance(e, dict) and ("results" in e or "processed_predictions" in e) for e in entries)


def _prompts_of(entry: dict[str, Any]) -> list[str]:
    value = entry.get("prompts", entry.get("prompt"))
    return [value] if isinstance(value, str) else [p for p in value if isinstance(p, str)] if isinstance(value, list) else []


def detect(path: Path, entries: list[dict[str, Any]], setting: str | None = None) -> str:
    """The file's official experiment (V2C, ..., or v1), decided by what it holds: entries with a `prompt`
    (or `prompts`) are v2, and the prompt's text names the setting where it is an official template; no
    prompt is v1. The file name decides only what the content leaves open (which T2C experiment; a prompt
    that is no official template); `--setting` (`setting`) may not contradict the content."""
    name_says = setting_from_name(path)
    has_prompt = any("prompt" in e or "prompts" in e for e in entries)
    if not has_prompt:
        if setting is not None and setting != "v1":
            return setting  # nothing in the file says otherwise
        if name_says not in (None, "v1"):
            raise OfficialFormatError(
                f"{path}: named like a v2 {name_says} file but its entries have no 'prompt' (v2 files have one, v1 files none): "
                "pass --setting to score it as v2, or --setting v1"
            )
        return "v1"
    if setting == "v1":
        raise OfficialFormatError(f"{path}: its entries have a 'prompt', so it is a v2 file, not v1: pass its v2 --setting or none")
    prompts = {text for e in entries for text in _prompts_of(e)}
    by_prompt = {experiments_of_prompt(text) for text in prompts} - {()}
    if len(by_prompt) > 1:
        raise OfficialFormatError(f"{path}: its prompts come from several settings' templates ({', '.join('/'.join(e) for e in sorted(by_prompt))}): score one setting per file")
    candidates = next(iter(by_prompt)) if by_prompt else tuple(EXPERIMENTS)
    if setting is not None:
        if setting not in candidates:
            raise OfficialFormatError(f"{path}: --setting {setting} but its prompts are {'/'.join(candidates)} prompts: pass --setting {candidates[0]} or none")
        return setting
    if len(candidates) == 1:
        return candidates[0]
    if name_says in candidates:
        return str(name_says)
    what = f"its prompts are {'/'.join(candidates)} prompts" if by_prompt else "its prompts are no official template"
    raise OfficialFormatError(
        f"{path}: cannot tell its HumanEval-V setting ({what}): pass --setting {'|'.join(candidates)}, or name it as the official "
        "scripts do (<model>_V2C_sample_1.json, ...)"
    )


def detect_file(path: Path, setting: str | None = None) -> str:
    """`detect` on a file (refusing the official evaluator's output and malformed files)."""
    return detect(path, read_entries(path), parse_setting(setting) if setting else None)


def collect(paths: Iterable[Path]) -> list[Path]:
    """A file, or every prediction file directly in a folder (`*.json`, not the evaluator's `*_executed.json`)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            direct = sorted(p for p in path.glob("*.json") if p.is_file() and not p.name.endswith("_executed.json") and setting_from_name(p))
            if not direct:
                raise OfficialFormatError(f"{path}: no official HumanEval-V prediction file (<model>_<setting>_sample_<n>.json) in it")
            found += direct
        else:
            raise OfficialFormatError(f"{path}: no such file or directory")
    return found


def read_entries(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OfficialFormatError(f"{path}: not a JSON file ({exc}); an official HumanEval-V prediction file is a JSON list") from exc
    if not isinstance(data, list) or not data:
        raise OfficialFormatError(f"{path}: expected a non-empty JSON list of {{'qid', 'prompt', 'predictions'}} entries, got {type(data).__name__}")
    if is_executed(data):
        source = path.with_name(path.name.replace("_executed.json", ".json")) if path.name.endswith("_executed.json") else None
        raise OfficialFormatError(
            f"{path}: the official evaluator's output (entries with execution 'results'), not a prediction file: pass the "
            f"prediction file it was made from{f' ({source})' if source else ''}; its programs are run again here"
        )
    for index, entry in enumerate(data):
        where = f"{path}: entry {index}" + (f" (qid={entry.get('qid')!r})" if isinstance(entry, dict) else "")
        if not isinstance(entry, dict):
            raise OfficialFormatError(f"{where}: expected an object, got {type(entry).__name__}")
        for name in ("qid", "predictions"):
            if name not in entry:
                raise OfficialFormatError(f"{where}: field {name!r} is missing")
        if not isinstance(entry["qid"], str):
            raise OfficialFormatError(f"{where}: field 'qid' must be a string")
        predictions = entry["predictions"]
        if not isinstance(predictions, list) or not predictions or not all(isinstance(p, str) for p in predictions):
            raise OfficialFormatError(f"{where}: field 'predictions' must be a non-empty list of strings")
        if "prompt" in entry and not isinstance(entry["prompt"], str):
            raise OfficialFormatError(f"{where}: field 'prompt' must be a string")
        if "prompts" in entry and not (isinstance(entry["prompts"], list) and all(isinstance(p, str) for p in entry["prompts"])):
            raise OfficialFormatError(f"{where}: field 'prompts' must be a list of strings")
    return data


def aggregate_by_qid(path: Path, entries: list[dict[str, Any]], one_entry_per_qid: bool) -> dict[str, list[str]]:
    """qid -> predictions in file order (entries of a qid concatenated, as the official evaluator does)."""
    found: dict[str, list[str]] = {}
    for index, entry in enumerate(entries):
        qid = entry["qid"]
        if qid in found and one_entry_per_qid:
            raise OfficialFormatError(f"{path}: entry {index} (qid={qid!r}): duplicate qid (this setting has one entry per task)")
        found.setdefault(qid, []).extend(entry["predictions"])
    counts = {qid: len(p) for qid, p in found.items()}
    if len(set(counts.values())) > 1:
        first = next(iter(counts))
        odd = next(q for q, n in counts.items() if n != counts[first])
        raise OfficialFormatError(
            f"{path}: qid {odd!r} has {counts[odd]} prediction(s) but qid {first!r} has {counts[first]}: every task needs the same number "
            "(the official scorer reads n from the tasks and asserts it)"
        )
    return found


_rows_memo: dict[tuple[Any, ...], list[dict[str, Any]]] = {}


def _v2_rows(source: DataSource | None = None) -> list[dict[str, Any]]:
    """The test split's rows (without the diagram) of `source` (default: HUMANEVAL_V_DATA or the pinned HF
    revision); loaded and checked once per data source and process."""
    from lmms_tasks.utils.humaneval_v.hooks import SOURCE, load_documents

    source = source or SOURCE
    key = (source.local_root(), source.revision)
    if key not in _rows_memo:
        _rows_memo[key] = list(load_documents(source).remove_columns(["diagram"]))
    return _rows_memo[key]


def _task_docs(task: str) -> tuple[list[dict[str, Any]], Any]:
    """A task's documents and `process_results`, through its YAML (how a version without a module of ours
    here, v1, is scored)."""
    from lmms_eval.utils import load_yaml_config

    from lmms_tasks.utils.services.taskconfig import task_yaml_path

    try:
        config = load_yaml_config(yaml_path=str(task_yaml_path(task)), mode="full")
    except KeyError as exc:
        raise OfficialFormatError(f"task {task!r} is not installed in this version of lmms-tasks: cannot score this HumanEval-V version") from exc
    loader, process = config.get("custom_dataset"), config.get("process_results")
    if not callable(loader) or not callable(process):
        raise OfficialFormatError(f"task {task!r}: its YAML has no custom_dataset/process_results to score with")
    docs = loader(metadata=config.get("metadata"), **(config.get("dataset_kwargs") or {}))[config.get("test_split", "test")]  # as lmms-eval calls it
    return [dict(d) for d in docs], process


def read(path: Path, setting: str | None = None, allow_partial: bool = False) -> Imported:
    """One official prediction file as the samples of the task of its setting and sample count."""
    from lmms_tasks.utils.humaneval_v.hooks import process_results

    entries = read_entries(path)
    exp = detect(path, entries, parse_setting(setting) if setting else None)
    version = VERSIONS["v1" if exp == "v1" else "v2"]
    ours = "v1" if exp == "v1" else EXPERIMENTS[exp][0]
    by_qid = aggregate_by_qid(path, entries, one_entry_per_qid=ours not in ("t2c",))
    n = len(next(iter(by_qid.values())))
    task = version.tasks[(ours, n > 1)]
    try:
        if version.name == "v2":
            rows = {str(row["qid"]): row for row in _v2_rows()}
            process = process_results
        else:
            docs, process = _task_docs(task)
            rows = {str(doc["qid"]): doc for doc in docs}
    except DataError as exc:
        raise OfficialFormatError(" ".join(str(exc).split())) from exc
    unknown = [qid for qid in by_qid if qid not in rows]
    if unknown:
        raise OfficialFormatError(f"{path}: qid {unknown[0]!r} is not in the data ({len(unknown)} unknown qid(s))")
    samples = []
    k = next(k for (setting, k), declared in _DECLARED.items() if declared == task) if version.name == "v2" else None  # the k its YAML declares
    position = {qid: i for i, qid in enumerate(rows)}
    for qid, predictions in by_qid.items():
        row = rows[qid]
        if version.name == "v1":
            samples.append(sample(position[qid], process(row, predictions)))
            continue
        stamp = {"hev_task": task, "hev_setting": ours, "hev_k": k, "hev_specification": row["ground_truth_diagram_description"] if ours == "gt_t2c" else ""}
        if ours == "t2c":  # one document per description, one greedy code each, numbered as a run numbers them
            for index, prediction in enumerate(predictions):
                samples.append(sample(position[qid] * n + index, process({**row, **stamp, "hev_sample_index": index}, [prediction])))
        else:
            samples.append(sample(position[qid], process({**row, **stamp, "hev_sample_index": 0}, predictions)))
    missing = len(rows) - len(by_qid)
    imported = Imported(
        path=path,
        task=task,
        official_format=f"HumanEval-V {version.name} prediction file ({exp}, {n} prediction(s) per task)",
        samples=samples,
        n_expected=len(rows) * (n if ours == "t2c" else 1),
        n_expected_from="the tasks of the data",
        setting=exp,
    )
    if missing:
        message = f"{path} has predictions for {len(by_qid)} of the {len(rows)} tasks of the data"
        if version.name == "v2" and not allow_partial:
            raise OfficialFormatError(f"{message} (the official evaluator asserts every task): pass --allow-partial to score them")
    if n > 1 and n < version.sampled_k:
        imported.warnings.append(f"{path}: {n} predictions per task: pass@{version.sampled_k} needs at least {version.sampled_k}, as officially (no score)")
    if exp == STRONG_CODER:
        k = version.sampled_k if n > 1 else 1
        imported.notes.append(
            f"V2T2C w/ strong coder: its pass@k here is the strong_coder_pass_at_{k} of {_DECLARED[('v2t', k)]} in a run"
        )
    return imported


# -- export ------------------------------------------------------------------------------------------------


def _items(samples_path: Path) -> list[dict[str, Any]]:
    from lmms_tasks.utils.commands.score import read_samples

    items = []
    for line in read_samples(samples_path):
        item = next((v for v in line.values() if isinstance(v, dict) and "qid" in v), None)
        if item is None:
            raise OfficialFormatError(f"{samples_path}: doc_id {line.get('doc_id')}: no HumanEval-V item (with a qid)")
        items.append(item)
    return items


def _dump(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf8") as fh:  # as the official `dump_json`: indent 4, ASCII escapes
        json.dump(entries, fh, indent=4)


def _descriptions(run_tasks: list[RunTask], model: str, v2t_task: str) -> dict[str, list[str]] | None:
    for other in run_tasks:
        if other.task == v2t_task and other.model == model:
            return {str(i["qid"]): list(i["descriptions"]) for i in _items(other.samples_path)}
    return None


def _coder_replies(run_task: RunTask) -> dict[str, str] | None:
    """The strong coder's replies recorded with the run (`judgements/<task>_strong_coder.jsonl`), by
    `qid#index`; None when the run had no strong coder or another run overwrote the records."""
    from lmms_tasks.utils.commands.report.runs import summaries

    for summary in summaries(run_task.run, "judgements"):
        if summary.task == f"{run_task.task}_strong_coder" and summary.owner_task == run_task.task and not summary.stale:
            path = Path(summary.data.get("records") or summary.path.with_name(f"{summary.task}.jsonl"))
            replies = {}
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        record = json.loads(line)
                        replies[str(record["key"])] = record.get("reply") or ""
            return replies
    return None


def declared_setting(task: str, key: str = "setting") -> str | None:
    """What the task's YAML declares under `dataset_kwargs.<key>` (its setting; a t2c task's `descriptions_from`);
    None for a task we do not have."""
    from lmms_tasks.utils.services.taskconfig import task_config

    try:
        return (task_config(task).get("dataset_kwargs") or {}).get(key)
    except KeyError:
        return None


def export(run_tasks: list[RunTask], out: Path, source: DataSource | None = None) -> list[Written]:
    """One official prediction file per HumanEval-V task of the runs, in `out` (the exp_base_dir), with the
    data of `source` (the one the runs recorded: `data_sources.run_data`)."""
    from lmms_tasks.utils.commands.tasks import benchmark_of
    from lmms_tasks.utils.humaneval_v.prompts import build_prompt

    mine = [t for t in run_tasks if benchmark_of(t.task) == "humaneval_v" and declared_setting(t.task) in SETTINGS]
    if not mine:
        return []
    try:
        rows = {str(row["qid"]): row for row in _v2_rows(source)}
    except DataError as exc:
        raise OfficialFormatError(" ".join(str(exc).split())) from exc
    order = list(rows)
    written: list[Written] = []

    def write(run_task: RunTask, exp: str, n: int, entries: list[dict[str, Any]]) -> None:
        model = safe_name(run_task.model, keep=".-")
        name = f"{model}_{EXPERIMENTS[exp][1]}_sample_{n}.json"
        if (out / name).exists():  # another run of the model: its own files, the run's timestamp in the model name
            model = f"{model}-{safe_name(run_task.stamp, keep='')}"
            name = f"{model}_{EXPERIMENTS[exp][1]}_sample_{n}.json"
        if (out / name).exists():
            raise OfficialFormatError(f"{out / name}: two runs of {run_task.model} both have this setting; export them separately")
        _dump(out / name, entries)
        command = f"python evaluate.py --model_name {model} --exp_type {exp} --sample_num {n} --exp_base_dir <out>/humaneval_v"
        written.append(Written(name, "" if exp == "V2T" else command))

    for run_task in mine:
        setting = declared_setting(run_task.task)
        items = _items(run_task.samples_path)
        unknown = [i["qid"] for i in items if str(i["qid"]) not in rows]
        if unknown:
            raise OfficialFormatError(f"{run_task.samples_path}: qid {unknown[0]!r} is not in the data; export with the data the run used")
        if setting == "t2c":
            by_qid: dict[str, list[tuple[int, str]]] = {}
            for item in items:
                by_qid.setdefault(str(item["qid"]), []).extend((int(item.get("sample_index", 0)) + k, p) for k, p in enumerate(item["predictions"]))
            descriptions = _descriptions(run_tasks, run_task.model, str(declared_setting(run_task.task, "descriptions_from"))) or {}
            entries = []
            for qid in sorted(by_qid, key=order.index):
                for index, prediction in sorted(by_qid[qid]):
                    found = descriptions.get(qid) or []
                    description = found[index] if index < len(found) else ""
                    prompt = build_prompt("t2c", rows[qid]["function_signature"], description)
                    entries.append({"qid": qid, "prompt": prompt, "predictions": [prediction]})
            write(run_task, "V2T2C", len(next(iter(by_qid.values()))), entries)
            continue
        items.sort(key=lambda i: order.index(str(i["qid"])))
        key = "descriptions" if setting == "v2t" else "predictions"
        spec = {"gt_t2c": "ground_truth_diagram_description"}.get(setting)
        entries = [
            {
                "qid": str(i["qid"]),
                "prompt": build_prompt(setting, rows[str(i["qid"])]["function_signature"], rows[str(i["qid"])][spec] if spec else None),
                "predictions": list(i[key]),
            }
            for i in items
        ]
        exp = TABLE[setting]["label"]
        n = len(entries[0]["predictions"])
        write(run_task, exp, n, entries)
        if setting == "v2t":
            replies = _coder_replies(run_task)
            if replies is not None:
                coder = []
                for entry in entries:
                    for index, description in enumerate(entry["predictions"]):
                        prompt = build_prompt("t2c", rows[entry["qid"]]["function_signature"], description)
                        coder.append({"qid": entry["qid"], "prompt": prompt, "predictions": [replies.get(f"{entry['qid']}#{index}", "")]})
                write(run_task, STRONG_CODER, n, coder)
    return written


def export_v1(run_tasks: list[RunTask], out: Path) -> list[Written]:
    """One v1 prediction file per v1 task of the runs, in `out`: the replies as the run received them (v1
    scores them so), in the data's order (doc_id)."""
    from lmms_tasks.utils.commands.score import read_samples

    written: list[Written] = []
    v1_tasks = set(humaneval_v1_tasks().values())  # as their YAMLs declare
    for run_task in (t for t in run_tasks if t.task in v1_tasks):
        entries = []
        for line in sorted(read_samples(run_task.samples_path), key=lambda line: int(line.get("doc_id", 0))):
            item = next((v for v in line.values() if isinstance(v, dict) and "qid" in v), None)
            if item is None or "predictions" not in item:
                raise OfficialFormatError(f"{run_task.samples_path}: doc_id {line.get('doc_id')}: no HumanEval-V v1 item (qid, predictions)")
            entries.append({"qid": str(item["qid"]), "predictions": list(item["predictions"])})
        if not entries:
            continue
        name = f"{safe_name(run_task.model, keep='.-')}_sample_{len(entries[0]['predictions'])}.json"
        if (out / name).exists():
            raise OfficialFormatError(f"{out / name}: two runs of {run_task.model} both have this sample count; export them separately")
        _dump(out / name, entries)
        written.append(Written(name, f"python evaluate.py --prediction_file <out>/humaneval_v1/{name}"))
    return written
