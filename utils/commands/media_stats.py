"""`python -m lmms_tasks media-stats [TASK_OR_GROUP ...]`: how many images each request carries.

vLLM refuses a request with more images than `limit_mm_per_prompt` allows (unset, its V1 engine allows 999 and
reserves memory for them), so the right value is the maximum over the data actually evaluated. This builds every request exactly as lmms-eval's chat backends
do (through the task's own `doc_to_messages`, video frames included), one document at a time, on the data
the tasks would load (the `*_DATA` variables or the pinned Hugging Face sources), and prints per task the
document count and the minimum / mean / maximum number of image parts, plus the `limit_mm_per_prompt`
value to use.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from lmms_tasks import tasks_path

DATA_VARIABLES = ("VLM2_BENCH_DATA", "HUMANEVAL_V_DATA", "HAERAE_VISION_DATA")


@dataclass
class MediaStats:
    task: str
    docs: int
    min_images: int
    mean_images: float
    max_images: int


def count_images(messages: Iterable[dict[str, Any]]) -> int:
    """Image parts in lmms-eval chat messages (a video part would be counted as 1; ours are frame lists)."""
    return sum(1 for message in messages for part in (message.get("content") or []) if isinstance(part, dict) and part.get("type") in ("image", "video"))


def _leaf_names(manager: Any, name: str) -> list[str]:
    """The tasks `name` stands for in lmms-eval's index: itself, or its tag's or group's members, recursively."""
    from lmms_eval.utils import load_yaml_config

    entry = manager.task_index.get(name)
    if entry is None:
        raise KeyError(f"no task, group or tag named {name!r}")
    if entry["type"] not in ("group", "tag"):
        return [name]
    members = entry["task"] if entry["type"] == "tag" else load_yaml_config(entry["yaml_path"], mode="full")["task"]
    return [leaf for member in members for leaf in _leaf_names(manager, member)]


def inspected_tasks(names: list[str]) -> dict[str, Any]:
    """Each task the names stand for, built as lmms-eval builds a chat task (`ConfigurableMessagesTask` on the
    task's YAML, includes resolved) with `inspecting_documents: true` added to its metadata: its loader, which
    lmms-eval hands the metadata, skips the checks that guard only an evaluation (no code runs here, so no
    code-execution opt-in is needed). 0.7.3's `get_task_dict` replaces a dict config's metadata whole and builds
    it as a plain (not chat) task, so the config is built here, from the same YAML lmms-eval indexed."""
    from lmms_eval.api.task import ConfigurableMessagesTask
    from lmms_eval.tasks import TaskManager
    from lmms_eval.utils import load_yaml_config

    from lmms_tasks.utils.services.status import INSPECTING

    manager = TaskManager(verbosity="ERROR", include_path=tasks_path(), include_defaults=False)
    tasks = {}
    for leaf in dict.fromkeys(leaf for name in names for leaf in _leaf_names(manager, name)):
        config = load_yaml_config(manager.task_index[leaf]["yaml_path"], mode="full")
        config["metadata"] = {**(config.get("metadata") or {}), INSPECTING: True}
        tasks[leaf] = ConfigurableMessagesTask(config=config, model_name=None)
    return tasks


def media_stats(names: list[str], limit: int | None = None) -> list[MediaStats]:
    tasks = inspected_tasks(names)
    stats: list[MediaStats] = []
    for name in sorted(tasks):
        task = tasks[name]
        docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
        counts = []
        for index, doc in enumerate(docs):
            if limit is not None and index >= limit:
                break
            counts.append(count_images(task.doc_to_messages(doc)))
        if counts:
            stats.append(MediaStats(name, len(counts), min(counts), round(sum(counts) / len(counts), 2), max(counts)))
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks media-stats", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "tasks", nargs="*", default=["vlm2_bench", "humaneval_v_v2c", "haerae_vision"], help="task or group names (space- or comma-separated, as lmms-eval's --tasks)"
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents of each task")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--max", action="store_true", help="print only the maximum (for scripts: limit_mm_per_prompt)")
    args = parser.parse_args(argv)
    names = [name.strip() for arg in args.tasks for name in arg.split(",") if name.strip()]
    try:
        stats = media_stats(names, args.limit)
    except Exception as exc:  # noqa: BLE001 - one line for a script's `$(...)`, never an empty stdout that looks like a number
        print(f"media-stats: cannot count the images of {', '.join(names)}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"media-stats: point {', '.join(DATA_VARIABLES)} at local copies, or allow downloads from the Hugging Face Hub", file=sys.stderr)
        return 1
    if not stats:
        print(f"media-stats: no documents found for {', '.join(names)}", file=sys.stderr)
        return 1
    if args.max:
        print(max((s.max_images for s in stats), default=0))
        return 0
    if args.json:
        print(json.dumps([asdict(s) for s in stats], indent=2))
        return 0
    print(f"{'task':<28} {'docs':>6} {'min':>4} {'mean':>6} {'max':>4}")
    for s in stats:
        print(f"{s.task:<28} {s.docs:>6} {s.min_images:>4} {s.mean_images:>6} {s.max_images:>4}")
    overall = max((s.max_images for s in stats), default=0)
    print(f"\nvLLM: --model_args ...,limit_mm_per_prompt='{{\"image\":{overall}}}'")
    return 0
