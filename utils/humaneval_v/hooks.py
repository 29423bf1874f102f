"""lmms-eval hooks for the HumanEval-V tasks, v2 and v1 (the task folder's utils.py re-exports these).

Every task's `custom_dataset` loader (`load_subtask`, the task named by its YAML's `dataset_kwargs`) stamps the task's name and setting into its documents
(lmms-eval passes no task config to `process_results`); `process_results` only post-processes text (cheap,
thread-safe); the batch step (`score_batch`, lmms-eval's `process_results_batch`, rank 0) gates and executes
one task's programs as one batch and writes the verdicts into the items; the aggregations (`agg_<metric>`)
are plain functions of those items. The tasks set `strip_responses: false` and `reasoning_tags: none`: the hooks see the
model's bytes, as the official `post_process` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import datasets

from lmms_tasks.utils.humaneval_v import extraction_v1, metrics, v1
from lmms_tasks.utils.humaneval_v.descriptions import (
    DEFAULT_CODER,
    current_model,
    data_fingerprint,
    read_descriptions,
    resolve_samples_file,
    strong_coder_enabled,
)
from lmms_tasks.utils.humaneval_v.execution import execution_allowed, level_of, opt_in_refusal, require_opt_in
from lmms_tasks.utils.humaneval_v.extraction import post_process
from lmms_tasks.utils.humaneval_v.prompts import SETTINGS, build_prompt, template_sha256, uses_image
from lmms_tasks.utils.services import records, schema
from lmms_tasks.utils.services.data import DataError, DataSource, check_split, load_parquet_split, metadata_of, task_loader
from lmms_tasks.utils.services.llm_judge.judge import announce
from lmms_tasks.utils.services.logging import logger
from lmms_tasks.utils.services.model_args import unsent_sampling_warning, warn_about_model_args
from lmms_tasks.utils.services.stats import UNIT_SCORE, fraction_item, metric_item, unit_item
from lmms_tasks.utils.services.status import inspecting

SOURCE = DataSource("humaneval_v", "HumanEval-V/HumanEval-V-Benchmark", "8a3465c8cdcd25f65b3e13651e21cef9406e1799", "HUMANEVAL_V_DATA", "HUMANEVAL_V_REVISION")
# What the scorer needs of each row (spec 2.2); the diagram is checked as an image (header and completeness).
FIELDS = [
    schema.Field("qid", schema.text()),
    schema.Field("function_signature", schema.text()),
    schema.Field("test_script", schema.text()),
    schema.Field("ground_truth_diagram_description", schema.text(nonempty=False)),
    schema.Field("capability_aspects", schema.mapping),
    schema.Field("task_type", schema.text(nonempty=False)),
]
REQUEST_FAILED = "[LMMS_EVAL_REQUEST_FAILED"


def declared(task: str, setting: Any, k: Any) -> tuple[str, int]:
    """A task's setting and k as its YAML declares them (`dataset_kwargs: {setting: v2c, k: 3}`; k defaults to
    1, the shared template's greedy pass@1), checked; a DataError names the task and the bad value."""
    if setting != v1.SETTING and setting not in SETTINGS:
        raise DataError(f"{task}: dataset_kwargs.setting is {setting!r}; expected one of {sorted(SETTINGS) + [v1.SETTING]}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise DataError(f"{task}: dataset_kwargs.k is {k!r}; expected a whole number >= 1 (the k of pass@k)")
    return str(setting), k


def scoring_refusal(task: str, metadata: dict[str, Any] | None = None, dataset_kwargs: Mapping[str, Any] | None = None) -> str | None:
    """Why scoring `task`'s saved outputs must be refused (one line), or None: every setting executes
    code, except V2T without the strong coder (descriptions only; `metadata` and `dataset_kwargs`: the
    task's, as the command loaded its YAML: the setting is declared there)."""
    if (dataset_kwargs or {}).get("setting") == "v2t" and not strong_coder_enabled(metadata):
        return None
    return None if execution_allowed() else opt_in_refusal(task)


def load_documents(source: DataSource = SOURCE) -> datasets.Dataset:
    """The test split of `source` (default: as the environment names it), every row checked (ids unique,
    fields typed, diagrams readable) before any request."""
    dataset = load_parquet_split(source, "test")
    check_split(source, "test", dataset, FIELDS, id_field="qid", image_fields={"diagram": False})
    guarded = [q for q, t in zip(dataset["qid"], dataset["test_script"]) if "__name__" in t]
    if guarded:  # quirk H7: under exec(program, {}) such a guard skips the tests, which then "pass"
        logger.warning(f"HumanEval-V test scripts mention __name__ (a __main__ guard skips the tests officially): {guarded[:20]}")
    return dataset


def capabilities(aspects: Any) -> list[str]:
    """The capability-aspect keys a task exercises (non-empty lists in the struct)."""
    return sorted(k for k, v in (aspects or {}).items() if v)


def task_of(subtask: str, setting: str) -> str:
    """The task's name (what its records, summaries and messages are filed under) from its YAML's
    `dataset_kwargs.subtask`: v2c_pass3 -> humaneval_v_v2c_pass3; v1 (setting v1) -> humaneval_v1. Only a name:
    the setting and k are declared next to it."""
    return f"humaneval_{subtask}" if setting == v1.SETTING else f"humaneval_v_{subtask}"


def load_subtask(
    metadata: Mapping[str, Any] | None = None, subtask: str | None = None, setting: Any = None, k: Any = 1, descriptions_from: Any = None, **_: Any
) -> datasets.DatasetDict:
    """The `custom_dataset` of every HumanEval-V task (the shared template names it): lmms-eval calls it with the
    task's `metadata` and its `dataset_kwargs`, where the task's YAML declares its name, setting and k
    (`{subtask: v2c_pass3, setting: v2c, k: 3}`; a t2c task also the v2t task whose descriptions it reads,
    `descriptions_from`): the one place lmms-eval hands a task's own values to a hook before `process_results`
    (which gets only the document), so they are stamped into the documents."""
    task = task_of(str(subtask), str(setting))
    setting, k = declared(task, setting, k)
    if setting == "t2c" and not (isinstance(descriptions_from, str) and descriptions_from):
        raise DataError(f"{task}: dataset_kwargs.descriptions_from is {descriptions_from!r}; a t2c task names the v2t task whose descriptions it reads")
    return dataset_for(task, setting, k, descriptions_from)(metadata=metadata)


def dataset_for(task: str, setting: str, k: int = 1, descriptions_from: str | None = None) -> Callable[..., datasets.DatasetDict]:
    """The loader of one task: the opt-in check first (before any inference), then the
    checked data, stamped with the task, its setting and k (V2T2C step 2: one document per description of
    a run of `descriptions_from`)."""
    if setting == v1.SETTING:
        return _v1_dataset_for(task, k)

    def build(metadata: dict[str, Any]) -> datasets.Dataset:
        if (setting != "v2t" or strong_coder_enabled(metadata)) and not inspecting(metadata):
            require_opt_in(task, metadata)  # before any inference (media-stats executes nothing); records the sandbox's level
        warn_about_model_args(task, uses_images=uses_image(setting))
        dataset = load_documents()
        if setting == "v2t" and strong_coder_enabled(metadata) and not inspecting(metadata):  # after the data check
            announce(coder_config(task, metadata), task, role="strong coder")
        fingerprint = data_fingerprint(zip(dataset["qid"], dataset["function_signature"], dataset["test_script"]))
        stamp = {"hev_task": task, "hev_setting": setting, "hev_k": k, "hev_data": fingerprint}
        if setting != "t2c":
            return dataset.map(
                lambda doc: {
                    **stamp,
                    "hev_sample_index": 0,
                    "hev_specification": doc["ground_truth_diagram_description"] if setting == "gt_t2c" else "",
                },
                desc=f"{task}: stamping",
            )
        choice = resolve_samples_file(str(descriptions_from), metadata.get("descriptions"), model=current_model())
        samples = choice.path
        descriptions, recorded = read_descriptions(samples)
        if recorded and recorded != {fingerprint}:
            raise DataError(
                f"{samples} holds descriptions made on other data (data fingerprint {sorted(recorded)}, this run's data {fingerprint}: "
                f"another release or revision); re-run {descriptions_from} on this data"
            )
        logger.info(
            f"{task}: descriptions from {samples} ({choice.why}; {len(descriptions)} tasks"
            f"{'' if recorded else '; written before data fingerprints were recorded, data not checked'})"
        )
        text_only = dataset.remove_columns(["diagram"])
        rows = []
        for doc in text_only:
            found = descriptions.get(str(doc["qid"]))
            if found is None:
                raise DataError(f"{samples} has no description for qid {doc['qid']!r}")
            for index, description in enumerate(found):
                rows.append({**doc, **stamp, "hev_sample_index": index, "hev_specification": description})
        return datasets.Dataset.from_list(rows)

    return task_loader(task, build, source=SOURCE)


def _v1_dataset_for(task: str, k: int) -> Callable[..., datasets.DatasetDict]:
    """v1: the opt-in check, then the checked v1 rows, stamped (one document per task)."""

    def build(metadata: dict[str, Any]) -> datasets.Dataset:
        if not inspecting(metadata):
            require_opt_in(task, metadata)
        warn_about_model_args(task, uses_images=True)
        stamp = {"hev_task": task, "hev_setting": v1.SETTING, "hev_k": k, "hev_sample_index": 0}
        return v1.load_documents().map(lambda doc: stamp, desc=f"{task}: stamping")

    return task_loader(task, build, source=v1.SOURCE)


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    if doc["hev_setting"] == v1.SETTING:
        return v1.build_prompt(doc["function_signature"])
    return build_prompt(doc["hev_setting"], doc["function_signature"], doc.get("hev_specification") or None)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    if doc["hev_setting"] == v1.SETTING:
        return [doc["image"]]
    return [doc["diagram"]] if uses_image(doc["hev_setting"]) else []


def doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One user turn, image first then text, no system prompt (official `models/gpt_4o.py`)."""
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc_to_text(doc)})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: dict[str, Any]) -> str:
    return str(doc["qid"])


def _base_item(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "task": doc["hev_task"],
        "setting": doc["hev_setting"],
        "k": int(doc["hev_k"]),
        "qid": str(doc["qid"]),
        "sample_index": int(doc.get("hev_sample_index") or 0),
        "task_type": doc.get("task_type") or "",
        "capabilities": capabilities(doc.get("capability_aspects")),
    }


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Post-process every sample of one document; the programs are executed at aggregation."""
    predictions = ["" if r is None else str(r) for r in results]  # raw model output (strip_responses: false, reasoning_tags: none)
    item = _base_item(doc)
    item["request_failed"] = sum(p.startswith(REQUEST_FAILED) for p in predictions)
    if doc["hev_setting"] == v1.SETTING:
        # Scored as v1's evaluate.py scores the saved prediction: the reply as received. The official
        # example models stop generating at "\n```\n" (the tasks set it as `until`); a backend that ignores
        # `until` may return more, and `contains_stop` marks the samples where that happened.
        processed = [extraction_v1.post_process(p, doc["function_signature"], doc["test_script"]) for p in predictions]
        item.update(
            predictions=predictions,
            contains_stop=[extraction_v1.stop_at_fence(p) != p for p in predictions],
            completions=[c for c, _ in processed],
            programs=[p for _, p in processed],
        )
    elif doc["hev_setting"] == "v2t":
        item.update(
            descriptions=predictions,
            function_signature=doc["function_signature"],
            test_script=doc["test_script"],
            data_fingerprint=doc.get("hev_data") or "",
        )
    else:
        processed = [post_process(p, doc["function_signature"], doc["test_script"]) for p in predictions]
        item.update(predictions=predictions, completions=[c for c, _ in processed], programs=[p for _, p in processed])
    return {key: item for key in metric_names(item["setting"], item["k"])}


def metric_names(setting: str, k: int) -> tuple[str, ...]:
    """The metrics of a task of `setting` with pass@`k`: each officially rounded number next to its
    unrounded value (0-100); what its YAML's metric_list declares."""
    if setting == "v2t":
        return ("description_rate", *coder_metrics(k))
    return (f"pass@{k}", f"pass@{k}_unrounded", "parse_success_rate", "parse_success_rate_unrounded")


def headline(setting: str, k: int) -> str:
    """The task's headline metric, the `score_key` its per-task scores are written under."""
    return "description_rate" if setting == "v2t" else f"pass@{k}"


def check_declared_metrics(task: str, setting: str, k: int, config: Any) -> None:
    """The metrics `process_results` fills (from the YAML's setting and k) must be the ones the task's
    `metric_list` declares, or lmms-eval would drop them silently: a ValueError names the task."""
    entries = (config.get("metric_list") if isinstance(config, dict) else getattr(config, "metric_list", None)) or []
    declared_names = {str(e.get("metric")) for e in entries if isinstance(e, Mapping)}
    missing = [m for m in metric_names(setting, k) if m not in declared_names]
    if entries and missing:
        raise ValueError(f"{task}: its YAML declares dataset_kwargs.k = {k} but its metric_list lacks {missing} (it has {sorted(declared_names)})")


def _output_dir(args: Any, metadata: dict[str, Any]) -> str | None:
    """This run's own records folder (`services.records`), named in the task's metadata."""
    return records.run_dir(args, metadata)


def _k_for(items: list[dict[str, Any]]) -> int:
    """The k its YAML declared, carried by every item (stamped into the documents by the loader)."""
    first = items[0] if items else None
    if not isinstance(first, dict) or "k" not in first:
        raise metrics.ItemError("HumanEval-V aggregation received items without the task's k (not made by process_results)")
    return int(first["k"])


# -- aggregations: they read what the batch step (`score_batch`) computed and wrote into the items ----------


def agg_pass_at_k(items: list[dict[str, Any]]) -> float | None:
    """pass@k (official rounding) for the k the task's YAML declares (the items carry it)."""
    return metrics.pass_at_from(items, _k_for(items))


def agg_pass_at_k_unrounded(items: list[dict[str, Any]]) -> float | None:
    return metrics.pass_at_from(items, _k_for(items), rounded=False)


def agg_parse_success_rate(items: list[dict[str, Any]]) -> float:
    return metrics.parse_success_rate_from(items)


def agg_parse_success_rate_unrounded(items: list[dict[str, Any]]) -> float:
    return metrics.parse_success_rate_from(items, rounded=False)


def _description_shares(items: list[dict[str, Any]]) -> list[float]:
    """Per document (a task, for V2T): the share (x100) of its samples with a non-empty description (every
    task has the same number of samples, so their mean is the overall share)."""
    return [100 * sum(bool(d.strip()) for d in i["descriptions"]) / max(1, len(i["descriptions"])) for i in items]


def agg_description_rate(items: list[dict[str, Any]]) -> float:
    """Share (x100) of V2T samples that produced a non-empty description (a health check, not a score)."""
    descriptions = [d for i in items for d in i["descriptions"]]
    return round(100 * sum(bool(d.strip()) for d in descriptions) / max(1, len(descriptions)), 1)


# -- the batch step: every program executed once per task ------------------------------------------------


def score_batch(results: list[dict[str, Any]], args: Any = None, repeat: int | None = None, config: Any = None) -> list[dict[str, Any]]:
    """The tasks' `process_results_batch`, the one place where programs run: the task's programs are executed
    as one batch (one set of execution records, one status entry per sandbox fault), and every metric's item
    of each document gets its programs' verdicts (`passed`, `gated`; V2T with the strong coder: the coder's
    code for each description, `coder_passed`, `coder_gated`; on and configured by the task config's
    metadata, `config.metadata`), from which the aggregations compute.

    Each task's (qid's) unbiased pass@k is computed here, once (`metrics.score_items`), and goes into the
    `pass@k` and `pass@k_unrounded` items (V2T with the strong coder: the `strong_coder_pass_at_k` ones, the
    coder's pass@k) of the document that stands for it (its `sample_index` 0 document: V2T2C step 2 has one
    document per description): as `task_pass@k` (0-1; None for a task with fewer than k samples), which the
    aggregations average; x100 under `pass@k`, the task's `score_key` (what lmms-eval's
    `<metric>_stderr_clt` reads), with `base_qid` ("q1-2" -> "q1", the cluster); the headline item also
    `score` (0-1), and the sample's `unit_score`
    (0-1, what --baseline reads). V2T (`description_rate`): the
    share of the document's non-empty descriptions (per response: whether the j-th one is). No score when
    pass@k is omitted (a task with fewer than k samples).

    For the k-samples responses (`repeat` = j: `--repeats`, and the pass@3 tasks' 6 samples) each task's j-th
    program(s) passed or not, as a 0-1 fraction, for lmms-eval's stability metrics (from the execution
    cache: the programs were run for the task's own batch; no records, no faults reported again)."""
    results = [dict(r) for r in results]
    if not results:
        return results
    first = next(v for v in results[0].values() if isinstance(v, dict) and "task" in v)
    if not ({"task", "setting", "k", "qid"} | ({"programs"} if first.get("setting") != "v2t" else set())) <= set(first):
        raise metrics.ItemError(f"HumanEval-V metric item is not a process_results dict with task/qid/programs and the task's setting and k: {str(first)[:200]}")
    task, setting, k = str(first["task"]), str(first["setting"]), int(first["k"])
    check_declared_metrics(task, setting, k, config)
    key = headline(setting, k)
    items = [r[key] for r in results]
    level = level_of(metadata_of(config))  # the sandbox's isolation level, as the task's loader recorded it
    unsent = unsent_sampling_warning(task, getattr(args, "model", None), getattr(config, "generation_kwargs", None))
    if unsent and repeat is None:  # said in the run's output, once per task and run (its samples came from the model in use)
        logger.warning(unsent)
    if setting == "v2t":
        if repeat is None:
            coder = _strong_coder_scored(items, args, metadata_of(config))
            if coder is not None:
                _annotate(results, lambda position: metrics.verdict_fields(coder, position, prefix=CODER))
                _write_task_scores(results, key, items, coder, coder_metrics(k), prefix=CODER)
        for result, item, share in zip(results, items, _description_shares(items)):
            if repeat is None:
                result[key] = unit_item(result[key], key, share, base_qid=metrics.base_qid(item["qid"]))
                result[UNIT_SCORE] = share / 100.0
            else:  # the j-th description: non-empty or not
                result[key] = fraction_item(item, key, share / 100.0, base_qid=metrics.base_qid(item["qid"]))
        return results
    if repeat is None:
        scored = metrics.score_items(items, _output_dir(args, metadata_of(config)), k=k, level=level)
        _annotate(results, lambda position: metrics.verdict_fields(scored, position))
        _write_task_scores(results, key, items, scored, (key, f"{key}_unrounded"))
        per_task = metrics.task_pass_at_k(scored)
    else:  # one response per task: its pass rate
        per_task = metrics.task_pass_at_k(metrics.score_items(items, _output_dir(args, metadata_of(config)), k=1, records=False, level=level))
    if per_task is None:
        return results
    if repeat is not None:
        for qid, position in _stands_for(items).items():
            results[position][key] = fraction_item(items[position], key, per_task[qid] / 100.0, base_qid=metrics.base_qid(qid))
        return results
    for qid, position in _stands_for(items).items():
        score = per_task[qid]
        results[position][key] = unit_item(results[position][key], key, score, base_qid=metrics.base_qid(qid))
        results[position][UNIT_SCORE] = score / 100.0
    return results


def _stands_for(items: list[dict[str, Any]]) -> dict[str, int]:
    """Per task (qid): the position of the document that stands for it (its lowest `sample_index`)."""
    stands_for: dict[str, int] = {}
    for position, item in sorted(enumerate(items), key=lambda pair: int(pair[1].get("sample_index", 0))):
        stands_for.setdefault(str(item["qid"]), position)
    return stands_for


def _write_task_scores(results: list[dict[str, Any]], key: str, items: list[dict[str, Any]], scored: metrics.Scored, names: Sequence[str], prefix: str = "") -> None:
    """Each task's pass@k, computed once (`scored.task_pass`), into the `names` metrics' items of the document
    that stands for it: as `<prefix>task_pass@k` (0-1, None for a task with fewer than k samples; what the
    aggregations average) and, unless pass@k is omitted, x100 under the task's `score_key` (`key`: what
    lmms-eval's `<metric>_stderr_clt` reads, the unit's score on the metric's scale) with `base_qid` (the
    cluster)."""
    field = metrics.task_pass_field(int(scored.k or 1), prefix)
    per_task = metrics.task_pass_at_k(scored)
    for qid, position in _stands_for(items).items():
        for name in names:
            value = results[position].get(name)
            if not isinstance(value, dict):
                continue
            estimate = {field: scored.task_pass.get(qid)}
            if per_task is None:
                results[position][name] = {**value, **estimate}
            else:
                results[position][name] = metric_item(value, key, per_task[qid], base_qid=metrics.base_qid(qid), **estimate)


def coder_metrics(k: int) -> tuple[str, str]:
    """The V2T task's strong-coder metrics (pass@k of the coder's code, rounded and unrounded)."""
    return (f"strong_coder_pass_at_{k}", f"strong_coder_pass_at_{k}_unrounded")


def _annotate(results: list[dict[str, Any]], fields: Callable[[int], dict[str, Any]]) -> None:
    """Add the document's verdicts to every metric's item of it (each metric aggregates its own items)."""
    for position, result in enumerate(results):
        added = fields(position)
        for metric, value in result.items():
            if isinstance(value, dict) and "qid" in value:
                result[metric] = {**value, **added}


CODER = "coder_"  # the prefix of the strong coder's verdict fields


def agg_strong_coder(items: list[dict[str, Any]]) -> float | None:
    """V2T2C w/ strong coder: pass@k (official rounding) of the coder's code for every description, from the
    per-task estimates the batch step wrote.

    Off unless HUMANEVAL_V_STRONG_CODER=1 (or `metadata.strong_coder: true`); then None (shown N/A)."""
    return _coder_pass_at(items, rounded=True)


def agg_strong_coder_unrounded(items: list[dict[str, Any]]) -> float | None:
    return _coder_pass_at(items, rounded=False)


def _coder_pass_at(items: list[dict[str, Any]], rounded: bool) -> float | None:
    """The coder's pass@k, or None when the strong coder is off (the batch step wrote no coder estimate)."""
    k = _k_for(items)
    if not any(metrics.task_pass_field(k, CODER) in i for i in items):
        return None
    return metrics.pass_at_from(items, k, rounded=rounded, prefix=CODER)


def _strong_coder_scored(items: list[dict[str, Any]], args: Any, metadata: dict[str, Any]) -> metrics.Scored | None:
    """Each description -> code by the coder model (greedy, n=1, H12), executed as one batch; None when off
    (`metadata`: the task config's, which turns it on and names the coder)."""
    if not items:
        return None
    task = str(items[0]["task"])
    if not strong_coder_enabled(metadata):
        return None
    from lmms_tasks.utils.services.llm_judge.judge import JudgeRequest, judge_batch

    coder_task = f"{task}_strong_coder"
    config = coder_config(task, metadata)
    requests = [
        JudgeRequest(
            key=f"{item['qid']}#{index}",
            messages=[{"role": "user", "content": build_prompt("t2c", item["function_signature"], description)}],
            params={},
            meta={"qid": item["qid"], "sample_index": index},
        )
        for item in sorted(items, key=lambda i: str(i["qid"]))
        for index, description in enumerate(item["descriptions"])
    ]
    batch = judge_batch(
        task=coder_task,
        requests=requests,
        parse=_identity,
        config=config,
        output_dir=_output_dir(args, metadata),
        prompt_sha256=template_sha256("t2c"),
        metadata=metadata,
    )
    code_items = []
    for item in items:  # the input order: the verdicts go back to these documents
        replies = [batch.outcomes[f"{item['qid']}#{i}"].content or "" for i in range(len(item["descriptions"]))]
        programs = [post_process(r, item["function_signature"], item["test_script"])[1] for r in replies]
        code_items.append({**item, "task": coder_task, "programs": programs})
    return metrics.score_items(code_items, _output_dir(args, metadata), k=_k_for(items), level=level_of(metadata))


def coder_config(task: str, metadata: dict[str, Any] | None) -> Any:
    """The strong coder's settings (the judge client's configuration; official: gpt-4o, greedy), from the
    metadata the task was handed (`services.llm_judge.judge.JudgeConfig.for_task`)."""
    from lmms_tasks.utils.services.llm_judge.judge import JudgeConfig

    return JudgeConfig.for_task(task, metadata, default_model=DEFAULT_CODER, defaults={"temperature": 0, "top_p": 0.95, "max_tokens": 2048})


def _identity(text: str) -> str:
    return text
