"""Per-task HumanEval-V metrics from the per-sample items lmms-eval gathers (any order, any rank).

Items are the JSON-friendly dicts `process_results` returned (also what re-scoring from a samples file
reads back). A task's samples are grouped by qid and ordered by (doc sample_index, position). The batch
step executes all programs once (`score_items`: one execution batch, one set of records, one status entry
per fault) and writes each program's verdict into its item (`verdict_fields`); every metric and standard
error is then a plain function of those scored items (`scored_from`), which executes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_tasks import HELP
from lmms_tasks.utils.humaneval_v.execution import evaluate_programs, write_records
from lmms_tasks.utils.humaneval_v.passk import pass_at_k, pass_at_k_mean, pass_at_k_score
from lmms_tasks.utils.services import status as run_status


class ItemError(ValueError):
    """A gathered item is malformed; the message names the task and document."""


@dataclass
class Scored:
    task: str
    passed_by_qid: dict[str, list[bool]]
    gated: int
    samples: int
    task_type: dict[str, str]
    capabilities: dict[str, list[str]]
    summary: dict[str, Any] = field(default_factory=dict)
    # per input item (its order): each program's (passed, gated) verdict, what the batch step writes into it
    item_verdicts: list[list[tuple[bool, bool]]] = field(default_factory=list)


PASSED, GATED = "passed", "gated"  # the item fields the batch step writes (one bool per program)


def _check(item: Any) -> Mapping[str, Any]:
    if not isinstance(item, Mapping) or not {"task", "qid", "programs"} <= set(item):
        raise ItemError(f"HumanEval-V metric item is not a process_results dict with task/qid/programs: {str(item)[:200]}")
    if not isinstance(item["programs"], list):
        raise ItemError(f"{item['task']} qid {item['qid']}: 'programs' must be a list")
    return item


def _ordered(items: Iterable[Any], check: Any = _check) -> tuple[str, list[tuple[int, Mapping[str, Any]]]]:
    """The task and its (input position, item) pairs in (qid, sample_index) order, checked."""
    checked = sorted(enumerate(check(i) for i in items), key=lambda p: (str(p[1]["qid"]), int(p[1].get("sample_index", 0))))
    if not checked:
        raise ItemError("HumanEval-V aggregation received no items")
    tasks = {i["task"] for _, i in checked}
    if len(tasks) != 1:
        raise ItemError(f"HumanEval-V aggregation mixes tasks {sorted(tasks)}")
    return tasks.pop(), checked


def score_items(items: Iterable[Any], output_dir: str | None = None, k: int | None = None, records: bool = True) -> Scored:
    """Execute one task's programs as one batch (the batch step calls this once per task). With `k`, the
    execution summary (`<output_dir>/executions/<task>.summary.json`) also holds the per-task-type and
    per-capability pass@k breakdowns (`by_task_type`, `by_capability`). `records=False` (k-samples
    responses: the same programs, already run for the task's own batch) writes no records and reports no
    fault (the output directory is still hidden from the programs)."""
    task, ordered = _ordered(items)
    checked = [item for _, item in ordered]
    programs = [p for i in checked for p in i["programs"]]
    batch = evaluate_programs(task, programs, hide_paths=[output_dir] if output_dir else ())
    passed_by_qid: dict[str, list[bool]] = defaultdict(list)
    item_verdicts: list[list[tuple[bool, bool]]] = [[] for _ in ordered]
    per_sample = []
    cursor = 0
    for input_position, item in ordered:
        for position, _prediction in enumerate(item["programs"]):
            verdict = batch.verdicts[cursor]
            cursor += 1
            passed_by_qid[str(item["qid"])].append(verdict.passed)
            item_verdicts[input_position].append((verdict.passed, verdict.gated))
            per_sample.append(
                {
                    "task": task,
                    "qid": item["qid"],
                    "sample_index": int(item.get("sample_index", 0)) + position,
                    "passed": verdict.passed,
                    "result": verdict.result[:2000],
                    "status": verdict.status,
                    "cached": verdict.cached,
                }
            )
    scored = Scored(
        task=task,
        passed_by_qid=dict(passed_by_qid),
        gated=sum(v.gated for v in batch.verdicts),
        samples=len(programs),
        task_type={str(i["qid"]): str(i.get("task_type", "")) for i in checked},
        capabilities={str(i["qid"]): list(i.get("capabilities") or []) for i in checked},
        summary=batch.summary,
        item_verdicts=item_verdicts,
    )
    breakdowns = {} if k is None else {"k": k, "by_task_type": by_task_type(scored, k), "by_capability": by_capability(scored, k)}
    if not records:
        return scored
    write_records(output_dir, task, per_sample, {"task": task, **batch.summary, **breakdowns})
    failed = [r for r in per_sample if r["status"] == "error"]
    if failed:  # the sandbox could not run these (not a verdict on the program): the numbers are not final
        named = ", ".join(f"qid {r['qid']!r} sample {r['sample_index']}" for r in failed[:10])
        run_status.record_incomplete(
            task,
            f"{len(failed)} program(s) could not be executed by the sandbox ({failed[0]['result'][:200]}): {named}"
            f"{' ...' if len(failed) > 10 else ''}; they count as failed; {HELP['rescore']}.",
        )
    return scored


def verdict_fields(scored: Scored, position: int, prefix: str = "") -> dict[str, list[bool]]:
    """What the batch step adds to the item at input `position`: each program's verdict (`<prefix>passed`,
    `<prefix>gated`), from which `scored_from` rebuilds the task's scores without executing anything."""
    verdicts = scored.item_verdicts[position]
    return {prefix + PASSED: [p for p, _ in verdicts], prefix + GATED: [g for _, g in verdicts]}


def scored_from(items: Iterable[Any], prefix: str = "") -> Scored:
    """The task's scores from items the batch step scored (`verdict_fields`): a plain function of them."""

    def check(item: Any) -> Mapping[str, Any]:
        if not isinstance(item, Mapping) or not {"task", "qid", prefix + PASSED, prefix + GATED} <= set(item):
            raise ItemError(
                f"HumanEval-V metric item is not a scored process_results dict with task/qid/{prefix}{PASSED}/{prefix}{GATED} "
                f"(the task's process_results_batch writes the verdicts): {str(item)[:200]}"
            )
        return item

    task, ordered = _ordered(items, check)
    passed_by_qid: dict[str, list[bool]] = defaultdict(list)
    gated = samples = 0
    for _, item in ordered:
        passed_by_qid[str(item["qid"])].extend(bool(p) for p in item[prefix + PASSED])
        gated += sum(bool(g) for g in item[prefix + GATED])
        samples += len(item[prefix + PASSED])
    return Scored(
        task=task,
        passed_by_qid=dict(passed_by_qid),
        gated=gated,
        samples=samples,
        task_type={str(i["qid"]): str(i.get("task_type", "")) for _, i in ordered},
        capabilities={str(i["qid"]): list(i.get("capabilities") or []) for _, i in ordered},
    )


def parse_success_rate_unrounded(scored: Scored) -> float:
    """100 * (1 - gated samples / all samples): the share of samples that pass the pylint gate.

    The official denominator is `sample_num * #tasks` with `sample_num` read from the last task, which is
    the number of samples whenever every task has the same count (the official pipeline asserts that it
    does). With unequal counts the official value would depend on file order; all samples are used here."""
    return 100 * (1 - scored.gated / scored.samples)


def parse_success_rate(scored: Scored) -> float:
    """The official number: round(100 * (1 - gated / (sample_num * tasks)), 1)."""
    return round(parse_success_rate_unrounded(scored), 1)


def breakdown(scored: Scored, k: int, groups: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Mean per-task pass@k (x100, 1 decimal) within each group; tasks with < k samples are skipped."""
    out: dict[str, float] = {}
    for name, qids in sorted(groups.items()):
        values = [
            pass_at_k(len(scored.passed_by_qid[q]), sum(scored.passed_by_qid[q]), k) for q in qids if len(scored.passed_by_qid[q]) >= k
        ]
        if values:
            out[name] = round(sum(values) / len(values) * 100, 1)
    return out


def by_task_type(scored: Scored, k: int) -> dict[str, float]:
    groups: dict[str, list[str]] = defaultdict(list)
    for qid, kind in scored.task_type.items():
        groups[kind or "unknown"].append(qid)
    return breakdown(scored, k, groups)


def by_capability(scored: Scored, k: int) -> dict[str, float]:
    groups: dict[str, list[str]] = defaultdict(list)
    for qid, aspects in scored.capabilities.items():
        for aspect in aspects:
            groups[aspect].append(qid)
    return breakdown(scored, k, groups)


def pass_at(scored: Scored, k: int) -> float | None:
    return pass_at_k_score(scored.passed_by_qid, k)


def pass_at_unrounded(scored: Scored, k: int) -> float | None:
    return pass_at_k_mean(scored.passed_by_qid, k)


def base_qid(qid: str) -> str:
    """The task a qid varies: "q1-2" -> "q1" (the cluster of lmms-eval's clustered standard error)."""
    return str(qid).split("-", 1)[0]


def task_pass_at_k(scored: Scored, k: int) -> dict[str, float] | None:
    """Per task (qid): its unbiased pass@k x100, the unit the headline averages; None when the official
    scorer omits pass@k (a task with fewer than k samples)."""
    counts = {q: (len(v), sum(bool(x) for x in v)) for q, v in scored.passed_by_qid.items()}
    if not counts or any(n < k for n, _ in counts.values()):
        return None
    return {q: pass_at_k(n, c, k) * 100 for q, (n, c) in counts.items()}
