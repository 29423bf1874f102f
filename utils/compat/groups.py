"""Backport: group aggregation with exact metric names, group-only metrics and subtask names (patch 0002).

lmms-eval 0.7.3's `consolidate_group_results` matches a group's `aggregate_metric_list` entry against the
subtasks' metric names by substring and hands a callable aggregation only the values, sizes and
`weight_by_size`. The patch adds to each entry:

- `match: exact` (a subtask metric is aggregated iff its name equals `metric` and its filter is listed);
- `group_metric: NAME` (the group reports the aggregate under NAME, which no subtask needs to have; it
  implies exact matching);
- a callable aggregation declaring a `subtasks` parameter receives the subtask name of each value;
- a callable aggregation with a callable `stderr` attribute gives the group's `_stderr` (called like the
  aggregation, with the subtasks' standard errors instead of their values).

The shim extends `AggMetricConfig` with the two fields and wraps `consolidate_group_results`: entries that
use the new fields are set aside while 0.7.3 computes the others, then computed here over the same leaf
subtasks; entries without them go through 0.7.3's code unchanged.
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
    return getattr(entry, "group_metric", None) is not None or getattr(entry, "match", "substring") == "exact"


def _groups(task_dict: dict) -> Iterator[tuple[str, Any, dict]]:
    """(group name, its GroupConfig, its sub-dict) for every group in lmms-eval's nested task dict. The
    GroupConfig itself (`_config`): `ConfigurableGroup.config` is a fresh dict copy at every access."""
    from lmms_eval.api.group import ConfigurableGroup

    for key, value in task_dict.items():
        if isinstance(key, ConfigurableGroup) and isinstance(value, dict):
            yield key.group_name, key._config, value  # noqa: SLF001
        if isinstance(value, dict):
            yield from _groups(value)


def _call(fn: Callable[..., Any], values: list[Any], sizes: list[int], weight_by_size: bool, subtasks: list[str]) -> Any:
    if "subtasks" in inspect.signature(fn).parameters:
        return fn(values, sizes, weight_by_size, subtasks=subtasks)
    return fn(values, sizes, weight_by_size)


def aggregate_entry(entry: Any, results: dict, leaves: list[str]) -> dict[str, Any]:
    """The group's keys for one entry: `<name>,<filter>` and `<name>_stderr,<filter>` per listed filter."""
    from lmms_eval.api.metrics import aggregate_subtask_metrics, pooled_sample_stderr

    out: dict[str, Any] = {}
    name = entry.group_metric or entry.metric
    for filter_name in entry.filter_list:
        key, stderr_key = f"{entry.metric},{filter_name}", f"{entry.metric}_stderr,{filter_name}"
        subtasks = [task for task in leaves if key in results.get(task, {})]
        if not subtasks:
            continue
        values = [results[task][key] for task in subtasks]
        sizes = [results[task]["samples"] for task in subtasks]
        stderrs = [results[task].get(stderr_key, "N/A") for task in subtasks]
        aggregation = entry.aggregation
        if aggregation == "mean":
            value = aggregate_subtask_metrics(values, sizes, entry.weight_by_size)
            stderr = "N/A" if "N/A" in stderrs else pooled_sample_stderr(stderrs, sizes)
        else:
            value = _call(aggregation, values, sizes, entry.weight_by_size, subtasks)
            stderr_fn = getattr(aggregation, "stderr", None)
            if "N/A" in stderrs:
                stderr = "N/A"
            elif callable(stderr_fn):
                stderr = _call(stderr_fn, stderrs, sizes, entry.weight_by_size, subtasks)
            else:
                stderr = pooled_sample_stderr(stderrs, sizes)
        out[f"{name},{filter_name}"] = value
        out[f"{name}_stderr,{filter_name}"] = stderr
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
