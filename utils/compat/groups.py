"""Backport: group aggregation with exact metric names, group-only metrics and subtask names (patch 0002).

lmms-eval 0.7.3's `consolidate_group_results` matches a group's `aggregate_metric_list` entry against the
subtasks' metric names by substring and hands a callable aggregation only the values, sizes and
`weight_by_size`. The patch adds to each entry:

- `match: exact` (a subtask metric is aggregated iff its name equals `metric` and its filter is listed);
- `group_metric: NAME` (the group reports the aggregate under NAME, which no subtask needs to have; it
  implies exact matching);
- a callable aggregation declaring a `subtasks` parameter receives the subtask name of each value;
- a callable aggregation with a callable `stderr` attribute gives the group's `<name>_stderr_clt` (called
  like the aggregation, with the subtasks' `<metric>_stderr_clt` instead of their values, "N/A" ones
  included: it decides which it needs, e.g. a mean over some of the subtasks; one declaring a `values`
  parameter also receives the subtasks' values, e.g. for a paired standard error from what they carry).
  The group's `<name>_stderr` is lmms-eval's own, pooled from the subtasks' `_stderr`.

The shim extends `AggMetricConfig` with the two fields and wraps `consolidate_group_results`: the entries
0.7.3 would treat differently (new fields, or a callable that takes `subtasks` or has a `stderr`) are set
aside while 0.7.3 computes the others, then computed here over the same leaf subtasks exactly as the
patched function does; every other entry goes through 0.7.3's code unchanged.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator
from typing import Any

NAME = "groups"
PATCHES = ("0002-group-exact-metrics",)
MATCH_MODES = ("substring", "exact")


def present() -> bool:
    from lmms_eval.api.group import AggMetricConfig

    return "group_metric" in {f.name for f in dataclasses.fields(AggMetricConfig)}


def _extended_agg_metric_config(base: type) -> type:
    def __post_init__(self: Any) -> None:
        base.__post_init__(self)
        if self.match not in MATCH_MODES:
            raise ValueError(f"aggregate_metric_list entry {self.metric!r}: match must be one of {list(MATCH_MODES)}, got {self.match!r}")

    return dataclasses.make_dataclass(
        base.__name__,
        [("match", str, dataclasses.field(default="substring")), ("group_metric", str | None, dataclasses.field(default=None))],
        bases=(base,),
        namespace={"__module__": base.__module__, "__post_init__": __post_init__},
    )


def uses_new_fields(entry: Any) -> bool:
    """Whether 0.7.3 would treat this entry differently from the patch: it uses a new field, or its callable
    aggregation wants the subtask names or brings its own standard error."""
    if getattr(entry, "group_metric", None) is not None or getattr(entry, "match", "substring") == "exact":
        return True
    aggregation = getattr(entry, "aggregation", None)
    return callable(aggregation) and (_accepts_subtasks(aggregation) or callable(getattr(aggregation, "stderr", None)))


def _accepts_subtasks(fn: Callable[..., Any]) -> bool:
    try:
        return "subtasks" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _matches(entry: Any, key: str, filter_name: str) -> bool:
    """Whether the subtask result key `key` ("<name>,<filter>") is aggregated by `entry` for `filter_name`."""
    if entry.group_metric is None and entry.match == "substring":
        return entry.metric in key  # 0.7.3's rule: containment in the whole key, any filter
    return key == f"{entry.metric},{filter_name}"


def _groups(task_dict: dict) -> Iterator[tuple[str, Any, dict]]:
    """(group name, its GroupConfig, its sub-dict) for every group in lmms-eval's nested task dict. The
    GroupConfig itself (`_config`): `ConfigurableGroup.config` is a fresh dict copy at every access."""
    from lmms_eval.api.group import ConfigurableGroup

    for key, value in task_dict.items():
        if isinstance(key, ConfigurableGroup) and isinstance(value, dict):
            yield key.group_name, key._config, value  # noqa: SLF001
        if isinstance(value, dict):
            yield from _groups(value)


def _call(fn: Callable[..., Any], numbers: list[Any], sizes: list[int], weight_by_size: bool, subtasks: list[str], **extra: Any) -> Any:
    """`fn(numbers, sizes, weight_by_size)`, with `subtasks=` and each of `extra` (`values=`) it declares."""
    kwargs = {"subtasks": subtasks, **extra}
    try:
        declared = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        declared = {}
    return fn(numbers, sizes, weight_by_size, **{k: v for k, v in kwargs.items() if k in declared})


def aggregate_entry(entry: Any, results: dict, leaves: list[str]) -> dict[str, Any]:
    """The group's keys for one entry, as the patched `consolidate_group_results` computes them: for every
    subtask metric key the entry matches, `<name>,<filter>`, `<name>_stderr,<filter>` and, for an
    aggregation with a `stderr`, `<name>_stderr_clt,<filter>` (`name` is the entry's `group_metric`, else
    the subtask metric's own name)."""
    from lmms_eval.api.metrics import aggregate_subtask_metrics, pooled_sample_stderr

    out: dict[str, Any] = {}
    keys = sorted({k for task in leaves for k in results.get(task, {}) if "_stderr" not in k and k not in ("alias", "samples", " ")})
    for key in keys:
        stderr_key = "_stderr,".join(key.split(","))
        subtasks = [task for task in leaves if key in results.get(task, {})]
        values = [results[task][key] for task in subtasks]
        sizes = [results[task]["samples"] for task in subtasks]
        stderrs = [results[task][stderr_key] for task in subtasks if stderr_key in results[task]]
        for filter_name in entry.filter_list:
            if not _matches(entry, key, filter_name):
                continue
            name, name_stderr = (f"{entry.group_metric},{filter_name}", f"{entry.group_metric}_stderr,{filter_name}") if entry.group_metric else (key, stderr_key)
            aggregation = entry.aggregation
            if aggregation == "mean":
                out[name] = aggregate_subtask_metrics(values, sizes, entry.weight_by_size)
            else:
                out[name] = _call(aggregation, values, sizes, entry.weight_by_size, subtasks)
            stderr_fn = getattr(aggregation, "stderr", None) if aggregation != "mean" else None
            if callable(stderr_fn):
                clt_key = "_stderr_clt,".join(key.split(","))
                aligned = [results[task].get(clt_key, "N/A") for task in subtasks]
                out["_stderr_clt,".join(name.split(","))] = _call(stderr_fn, aligned, sizes, entry.weight_by_size, subtasks, values=values)
            if "N/A" in stderrs:
                out[name_stderr] = "N/A"
            else:
                out[name_stderr] = pooled_sample_stderr(stderrs, sizes)
    return out


def install() -> bool:
    from lmms_eval import evaluator, evaluator_utils
    from lmms_eval.api import group

    group.AggMetricConfig = _extended_agg_metric_config(group.AggMetricConfig)
    original = evaluator_utils.consolidate_group_results

    def consolidate_group_results(results, versions, task_dict, task_root=None, show_group_table=False, task_aggregation_list=None):  # noqa: ANN001, ANN202
        if task_root is not None:  # 0.7.3's own recursion: the entries are already set aside
            return original(results, versions, task_dict, task_root, show_group_table, task_aggregation_list)
        set_aside = []
        for name, config, _ in _groups(task_dict):
            entries = config.aggregate_metric_list or []
            ours = [e for e in entries if uses_new_fields(e)]
            if ours:
                set_aside.append((name, config, entries, ours))
                config.aggregate_metric_list = [e for e in entries if not uses_new_fields(e)]
        try:
            results, versions, show_group_table, aggregation_list = original(results, versions, task_dict, task_root, show_group_table, task_aggregation_list)
        finally:
            for _, config, entries, _ in set_aside:
                config.aggregate_metric_list = entries
        for name, config, _, ours in set_aside:
            leaves = aggregation_list.get(name, [])
            for entry in ours:
                results.setdefault(name, {}).update(aggregate_entry(entry, results, leaves))
            results.setdefault(name, {}).pop(" ", None)
            results[name]["samples"] = sum(results[task]["samples"] for task in leaves if "samples" in results.get(task, {}))
            metadata = config.metadata or {}
            if isinstance(metadata, dict) and "version" in metadata:
                versions[name] = metadata["version"]
            show_group_table = True
        return results, versions, show_group_table, aggregation_list

    consolidate_group_results.__wrapped__ = original  # type: ignore[attr-defined]
    evaluator_utils.consolidate_group_results = consolidate_group_results
    evaluator.consolidate_group_results = consolidate_group_results
    return True
