"""`python -m lmms_tasks tasks`: our tasks and groups, with what each needs, in a second.

`lmms-eval tasks list --include-path ...` indexes lmms-eval's own ~2,000 tasks too and takes about a
minute; this reads only our task folders. What a task needs is read from its configuration: a judge
where its metrics count judge failures or strong-coder results, code execution where they are pass@k
(HumanEval-V), a prior run where it reads V2T2C descriptions, the input kind from its benchmark's setting
(VLM2-Bench: the subtask table's kind). A group's members are the tasks its `tag:` entries stand for.
"""

from __future__ import annotations

import argparse
import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from lmms_tasks import BENCHMARKS, tasks_path
from lmms_tasks.utils.services.taskconfig import task_config, task_yaml_path

JUDGE_METRICS = ("judge_failures", "vid_judge_failed")  # a judged task counts its judge's failures
CODER_METRIC_PREFIX = "strong_coder_pass_at_"  # V2T: an LLM writes code from each description (pass@k of its code)
JUDGE_KEY = "LMMS_TASKS_JUDGE_API_KEY (or OPENAI_API_KEY)"
OPT_IN = "HUMANEVAL_V_ALLOW_CODE_EXECUTION=1"


@functools.cache
def declared_variants(benchmark: str, keys: tuple[str, ...]) -> dict[tuple[Any, ...], str]:
    """The benchmark's tasks by the variant parameters their YAMLs declare in `dataset_kwargs` (HumanEval-V:
    ("setting", "k") -> {("v2c", 3): "humaneval_v_v2c_pass3", ...}); the first task declaring a combination wins."""
    found: dict[tuple[Any, ...], str] = {}
    for path in sorted((Path(tasks_path()) / benchmark).glob("*.yaml")):
        head = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
        if not isinstance(head.get("task"), str):
            continue  # a group
        kwargs = task_config(head["task"]).get("dataset_kwargs") or {}
        if isinstance(kwargs, dict) and all(key in kwargs for key in keys):
            found.setdefault(tuple(kwargs[key] for key in keys), head["task"])
    return found


@functools.cache
def vlm2_declared() -> dict[str, dict[str, Any]]:
    """VLM2-Bench subtask -> the `dataset_kwargs` its task's YAML declares (`{subtask: pc_cpr, kind: tf_cpr,
    strip_tf_prefix: true}`), for the commands and the test fixtures (the hooks read them from the documents)."""
    return {subtask: dict(task_config(task).get("dataset_kwargs") or {}) for (subtask,), task in declared_variants("vlm2_bench", ("subtask",)).items()}


def humaneval_v1_tasks() -> dict[int, str]:
    """HumanEval-V v1's tasks by the k their YAMLs declare (`dataset_kwargs: {setting: v1, k: 10}`)."""
    from lmms_tasks.utils.humaneval_v import v1

    return {k: task for (setting, k), task in sorted(declared_variants("humaneval_v", ("setting", "k")).items()) if setting == v1.SETTING}


def vlm2_kinds() -> dict[str, str]:
    """VLM2-Bench subtask -> the kind its YAML declares."""
    return {subtask: str(kwargs.get("kind")) for subtask, kwargs in vlm2_declared().items()}


def benchmark_of(task_name: str, root: str | None = None) -> str | None:
    """The benchmark whose folder declares the task (the top-level folder of the include root holding its
    YAML, one of `BENCHMARKS`), or None for a task that is not one of ours. Commands ask this, never the name."""
    base = Path(root or tasks_path())
    try:
        folder = task_yaml_path(task_name, root).relative_to(base).parts[0]
    except (KeyError, ValueError):
        return None
    return folder if folder in BENCHMARKS else None


@dataclass
class Entry:
    name: str
    kind: str  # "task" | "group"
    benchmark: str
    members: list[str]  # a group's tasks and groups
    input: str  # images | video frames | text only | (group)
    judge: str  # "" | the key variable | "with HUMANEVAL_V_STRONG_CODER=1: ..."
    code_execution: str  # "" | the opt-in
    prior_run: str  # "" | what it reads


class _Loader(yaml.SafeLoader):
    """Reads a task folder's YAML without resolving `!function` tags."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _group_members(config: dict[str, Any], tags: dict[str, list[str]]) -> list[str]:
    """A group's tasks and groups, a `tag:` it lists standing for the tasks that carry it (as lmms-eval expands it)."""
    members = [m if isinstance(m, str) else m.get("group") or m.get("task") for m in config.get("task") or []]
    return [name for m in members for name in tags.get(m, [m])]


def _tags(config: dict[str, Any]) -> list[str]:
    tags = config.get("tag") or []
    return [tags] if isinstance(tags, str) else list(tags)


def _task_entry(name: str, benchmark: str) -> Entry:
    config = task_config(name)
    metrics = {entry["metric"] for entry in config.get("metric_list") or []}
    judged = bool(metrics & set(JUDGE_METRICS))
    coder = any(m.startswith(CODER_METRIC_PREFIX) for m in metrics)
    executes = any(m.startswith("pass@") for m in metrics) or coder
    prior = ""
    input_kind = "images"
    if benchmark == "humaneval_v":
        from lmms_tasks.utils.humaneval_v.prompts import SETTINGS

        setting = (config.get("dataset_kwargs") or {}).get("setting")  # as the task's YAML declares it
        prior = "a humaneval_v_v2t run (HUMANEVAL_V_DESCRIPTIONS)" if setting == "t2c" else ""
        input_kind = "text only" if setting in SETTINGS and not SETTINGS[setting][1] else "images"  # the table's diagram column (v1 shows its image)
    elif benchmark == "vlm2_bench":
        input_kind = "video frames" if (config.get("dataset_kwargs") or {}).get("kind") == "vid" else "images"  # as its YAML declares
    judge = f"with HUMANEVAL_V_STRONG_CODER=1: {JUDGE_KEY}" if coder else (JUDGE_KEY if judged else "")
    execution = f"{OPT_IN} (with the strong coder)" if coder else (OPT_IN if executes else "")
    return Entry(name, "task", benchmark, [], input_kind, judge, execution, prior)


def entries() -> list[Entry]:
    """Every task and group of our include path, each benchmark's groups first (as the YAML files list them)."""
    found: list[Entry] = []
    for benchmark in BENCHMARKS:
        groups, tasks = [], []
        configs = [yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {} for path in sorted((Path(tasks_path()) / benchmark).glob("*.yaml"))]
        tags: dict[str, list[str]] = {}
        for config in configs:
            if isinstance(config.get("task"), str):
                for tag in _tags(config):
                    tags.setdefault(tag, []).append(config["task"])
        for config in configs:
            if isinstance(config.get("group"), str):
                groups.append(Entry(config["group"], "group", benchmark, _group_members(config, tags), "", "", "", ""))
            elif isinstance(config.get("task"), str):
                tasks.append(_task_entry(config["task"], benchmark))
        by_name = {t.name: t for t in tasks}
        for group in groups:  # a group needs what its tasks need
            inner = [by_name[m] for m in group.members if m in by_name]
            inner += [by_name[t] for g in groups if g.name in group.members for t in g.members if t in by_name]
            group.judge = next((t.judge for t in inner if t.judge and not t.judge.startswith("with")), "")
            group.code_execution = OPT_IN if any(t.code_execution == OPT_IN for t in inner) else ""
            group.input = ", ".join(sorted({t.input for t in inner}))
        found += groups + tasks
    return found


def render(rows: list[Entry]) -> str:
    header = "| task / group | kind | model input | judge (key variable) | code execution | prior run |"
    lines = [header, "|---|---|---|---|---|---|"]
    for e in rows:
        name = f"`{e.name}`" + (f" = {', '.join(f'`{m}`' for m in e.members)}" if e.members else "")
        lines.append(f"| {name} | {e.kind} | {e.input} | {e.judge or '–'} | {e.code_execution or '–'} | {e.prior_run or '–'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks tasks",
        description="List our tasks and groups (names for lmms-eval --tasks) with what each needs: a judge and its key, the "
        "code-execution opt-in, a prior run. Faster than `lmms-eval tasks list`, which also lists lmms-eval's ~2,000 tasks.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    args = parser.parse_args(argv)
    rows = entries()
    print(json.dumps([asdict(e) for e in rows], indent=1) if args.json else render(rows))
    return 0
