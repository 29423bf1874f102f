"""Per-task HumanEval-V metrics from the per-sample items lmms-eval gathers (any order, any rank).

Items are the JSON-friendly dicts `process_results` returned (also what re-scoring from a samples file
reads back). A task's samples are grouped by qid and ordered by (doc sample_index, position). The batch
step executes all programs once and computes each task's (qid's) unbiased pass@k once (`score_items`: one
execution batch, one set of records, one status entry per fault, the breakdowns from the same estimates);
it writes each program's verdict into its item (`verdict_fields`) and each task's estimate into the item of
the document that stands for it (`task_pass_field`). The aggregations read what was written (`pass_at_from`,
`parse_success_rate_from`): they execute, rebuild and re-validate nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_tasks import HELP
from lmms_tasks.utils.humaneval_v.execution import V1, V2, evaluate_programs, write_records
from lmms_tasks.utils.humaneval_v.passk import mean_of_estimates, pass_at_k
from lmms_tasks.utils.services import status as run_status
from lmms_tasks.utils.services.sandbox import LEVELS


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
    k: int | None = None
    # per task (qid) with at least k samples: its unbiased pass@k (0-1), computed once, in qid order
    task_pass: dict[str, float] = field(default_factory=dict)


PASSED, GATED = "passed", "gated"  # the item fields the batch step writes (one bool per program)


def task_pass_field(k: int, prefix: str = "") -> str:
    """The item field holding a task's unbiased pass@k (0-1; None when the task has fewer than k samples),
    written by the batch step into the document that stands for the task: `task_pass@<k>`."""
    return f"{prefix}task_pass@{k}"


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


def score_items(items: Iterable[Any], output_dir: str | None = None, k: int | None = None, records: bool = True, level: str = LEVELS[0]) -> Scored:
    """Execute one task's programs as one batch (the batch step calls this once per task). With `k`, each
    task's (qid's) unbiased pass@k is computed here, once (`Scored.task_pass`), and the execution summary
    (`<output_dir>/executions/<task>.summary.json`) also holds the per-task-type and per-capability pass@k
    breakdowns made from those estimates (`by_task_type`, `by_capability`). `records=False` (k-samples
    responses: the same programs, already run for the task's own batch) writes no records and reports no
    fault (the output directory is still hidden from the programs). `level`: the sandbox's isolation level, the one the
    task's loader recorded; every record names it (`sandbox`, and `confinement`: how the program ran)."""
    task, ordered = _ordered(items)
    checked = [item for _, item in ordered]
    programs = [p for i in checked for p in i["programs"]]
    wording = V1 if checked[0].get("setting") == "v1" else V2  # the release's result strings, by the task's declared setting
    batch = evaluate_programs(task, programs, hide_paths=[output_dir] if output_dir else (), wording=wording, level=level)
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
                    "sandbox": level,
                    "confinement": verdict.confinement,
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
        k=k,
        task_pass={} if k is None else task_estimates(passed_by_qid, k),
    )
    if not records:
        return scored
    breakdowns = {} if k is None else {"k": k, "by_task_type": by_task_type(scored), "by_capability": by_capability(scored)}
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
    `<prefix>gated`), from which the parse rate is counted without executing anything."""
    verdicts = scored.item_verdicts[position]
    return {prefix + PASSED: [p for p, _ in verdicts], prefix + GATED: [g for _, g in verdicts]}


def task_estimates(passed_by_qid: Mapping[str, Sequence[bool]], k: int) -> dict[str, float]:
    """Per task (qid) with at least k samples: its unbiased pass@k (0-1), in the mapping's order. The one
    place a task's pass@k is computed: the headline, its per-task unit scores and the breakdowns use it."""
    counts = {q: (len(v), sum(bool(x) for x in v)) for q, v in passed_by_qid.items()}
    return {q: pass_at_k(n, c, k) for q, (n, c) in counts.items() if n >= k}


def _unscored(what: str, items: Sequence[Any]) -> ItemError:
    return ItemError(
        f"HumanEval-V {what}: no item carries what the batch step writes (the task's process_results_batch scores the task "
        f"before aggregation): {str(items[0] if items else None)[:200]}"
    )


def pass_at_from(items: Sequence[Any], k: int, rounded: bool = True, prefix: str = "") -> float | None:
    """The task's pass@k from the per-task estimates the batch step wrote (`task_pass_field`): 100 * their
    mean over tasks (qid order), rounded to one decimal as officially (`rounded`); None when the official
    scorer omits it (a task with fewer than k samples). Raises when no item carries an estimate for this k."""
    name = task_pass_field(k, prefix)
    found = {str(i["qid"]): i[name] for i in items if isinstance(i, Mapping) and name in i}
    if not found:
        raise _unscored(f"pass@{k}", items)
    estimates = [found[q] for q in sorted(found)]
    if any(e is None for e in estimates):
        return None
    mean = mean_of_estimates(estimates)
    return round(mean, 1) if rounded else mean


def parse_success_rate_from(items: Sequence[Any], rounded: bool = True) -> float:
    """100 * (1 - gated samples / all samples), from the gate verdicts the batch step wrote into the items
    (`gated`): the share of samples that pass the pylint gate; `rounded`: the official number, to 1 decimal.

    The official denominator is `sample_num * #tasks` with `sample_num` read from the last task, which is
    the number of samples whenever every task has the same count (the official pipeline asserts that it
    does). With unequal counts the official value would depend on file order; all samples are used here."""
    gated = [i[GATED] for i in items if isinstance(i, Mapping) and GATED in i]
    if not gated or len(gated) != len(items):
        raise _unscored("parse_success_rate", items)
    samples = sum(len(g) for g in gated)
    value = 100 * (1 - sum(sum(bool(x) for x in g) for g in gated) / samples)
    return round(value, 1) if rounded else value


def breakdown(scored: Scored, groups: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Mean per-task pass@k (x100, 1 decimal) within each group, from the task estimates computed once
    (`Scored.task_pass`); tasks with < k samples are skipped."""
    out: dict[str, float] = {}
    for name, qids in sorted(groups.items()):
        values = [scored.task_pass[q] for q in qids if q in scored.task_pass]
        if values:
            out[name] = round(sum(values) / len(values) * 100, 1)
    return out


def by_task_type(scored: Scored) -> dict[str, float]:
    groups: dict[str, list[str]] = defaultdict(list)
    for qid, kind in scored.task_type.items():
        groups[kind or "unknown"].append(qid)
    return breakdown(scored, groups)


def by_capability(scored: Scored) -> dict[str, float]:
    groups: dict[str, list[str]] = defaultdict(list)
    for qid, aspects in scored.capabilities.items():
        for aspect in aspects:
            groups[aspect].append(qid)
    return breakdown(scored, groups)


def base_qid(qid: str) -> str:
    """The task a qid varies: "q1-2" -> "q1" (the cluster of lmms-eval's clustered standard error)."""
    return str(qid).split("-", 1)[0]


def task_pass_at_k(scored: Scored) -> dict[str, float] | None:
    """Per task (qid): its unbiased pass@k x100 (`Scored.task_pass`), the unit the headline averages; None
    when the official scorer omits pass@k (a task with fewer than k samples) or nothing was scored."""
    if not scored.passed_by_qid or len(scored.task_pass) != len(scored.passed_by_qid):
        return None
    return {q: v * 100 for q, v in scored.task_pass.items()}
