"""HumanEval-V scoring speed: 253 tasks x 6 samples through our pipeline (pylint gate + sandboxed
execution, cold cache) next to the floor measured in the same run: the same programs run bare
(`python file.py`, no gate, no sandbox) in a thread pool of the same size with the same 2 s timeout.

    HUMANEVAL_V_ALLOW_CODE_EXECUTION=1 python bench/bench_humaneval_v_exec.py [--tasks 253] [--workers N] [--level process]

Each isolation level (`--level`, default: both) is measured against the same floor; bubblewrap needs user namespaces
(it runs nothing otherwise); the line "isolation:" says what applied.

The sample mix (per task of 6) is deterministic: mostly correct, some wrong (assertion or gated by pylint),
and about 1 in 16 timing out (alternately a CPU-bound loop and a sleep). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lmms_tasks.utils.humaneval_v.execution import evaluate_programs
from lmms_tasks.utils.humaneval_v.extraction import post_process
from lmms_tasks.utils.services.sandbox import LEVELS, Limits, default_workers, run_program

SIGNATURE = 'def solution(values: list, k: int) -> int:\n    """\n    Combine the values as the diagram shows.\n\n    Parameters:\n    values (list): numbers.\n    k (int): a factor.\n\n    Returns:\n    int: the result.\n    """\n'


def test_script(task: int) -> str:
    cases = [
        ([task, 1, 2], 3),
        ([5, task % 7], 2),
        ([], 4),
        ([task * 3, -1, 8, 2], task % 5 + 1),
        ([1] * 20, 2),
        ([9, 9, 9], 1),
        ([task], 7),
        ([2, 4, 6, 8], 3),
    ]
    lines = ["def check(candidate):"]
    for values, k in cases:
        lines.append(f"    assert candidate({values!r}, {k}) == {sum(v * k for v in values if v % 2 == 0) + task}")
    return "\n".join(lines) + "\n\ncheck(solution)\n"


def reply(task: int, sample: int) -> str:
    kind = (task * 6 + sample) % 16
    name = f"acc_{task}_{sample}"
    if kind == 15:  # timeout: half CPU-bound, half sleeping
        body = "    while True:\n        pass\n" if task % 2 else "    import time\n    time.sleep(30)\n"
        return f"```python\ndef solution(values: list, k: int) -> int:\n{body}```"
    if kind in (3, 9):  # wrong answer
        return f"```python\ndef solution(values: list, k: int) -> int:\n    {name} = 0\n    for v in values:\n        {name} += v * k\n    return {name} + {task}\n```"
    if kind == 12:  # relies on a dropped module-level constant -> pylint gate (undefined-variable)
        return f"```python\nOFFSET = {task}\ndef solution(values: list, k: int) -> int:\n    return sum(v * k for v in values if v % 2 == 0) + OFFSET\n```"
    helper = f"def helper_{sample}(v: int, k: int) -> int:\n    return v * k if v % 2 == 0 else 0\n"
    return f"Here you go.\n```python\nimport math\n{helper}\ndef solution(values: list, k: int) -> int:\n    {name} = 0\n    for v in values:\n        {name} += helper_{sample}(v, k)\n    return {name} + {task}\n```\n"


def programs(n_tasks: int) -> list[str]:
    return [post_process(reply(t, s), SIGNATURE, test_script(t))[1] for t in range(n_tasks) for s in range(6)]


def run_bare(sources: list[str], workers: int, timeout: float) -> tuple[float, list[bool]]:
    """The floor: each program as a plain `python file.py` with a timeout, same pool size."""
    with tempfile.TemporaryDirectory(prefix="hev_bench_bare_") as root:

        def one(index: int) -> bool:
            path = Path(root) / f"p{index}.py"
            path.write_text(sources[index])
            try:
                return (
                    subprocess.run([sys.executable, str(path)], cwd=root, capture_output=True, timeout=timeout, check=False).returncode == 0
                )
            except subprocess.TimeoutExpired:
                return False

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            passed = list(pool.map(one, range(len(sources))))
        return time.monotonic() - started, passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=253)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--level", choices=LEVELS, action="append", help="isolation level(s) to measure (default: all)")
    args = parser.parse_args()
    limits = Limits(timeout=2.0)
    os.environ.setdefault("HUMANEVAL_V_ALLOW_CODE_EXECUTION", "1")
    sources = programs(args.tasks)
    print(f"{len(sources)} programs ({args.tasks} tasks x 6), {len(set(sources))} distinct, pool of {args.workers}, timeout 2 s")
    floor_s, bare_passed = run_bare(sources, args.workers, 2.0)
    print(f"floor (bare python, no gate, no sandbox): {floor_s:7.1f} s  passed {sum(bare_passed)}")
    for level in args.level or LEVELS:
        probe = run_program("pass\n", limits, level=level)
        print(f"[{level}] isolation: {', '.join(probe.confinement) or probe.message}")
        with tempfile.TemporaryDirectory(prefix="hev_bench_cache_") as cache:
            started = time.monotonic()
            batch = evaluate_programs("bench_humaneval_v", sources, limits=limits, workers=args.workers, cache_dir=cache, progress=False, level=level)
            ours_s = time.monotonic() - started
            ours = [v.passed for v in batch.verdicts]
            print(
                f"[{level}] ours (pylint gate + sandbox, cold cache): {ours_s:7.1f} s  passed {sum(ours)}  gated {batch.summary['gated']}  timeouts {batch.summary['timeouts']}  (gate {batch.summary['gate_s']} s)"
            )
            print(f"[{level}] ratio ours / floor: {ours_s / floor_s:.3f}   (target <= 1.10; official evaluate.py measured 1.58)")
            gated = [v.gated for v in batch.verdicts]
            disagree = sum(1 for a, b, g in zip(ours, bare_passed, gated) if not g and a != b)
            print(f"[{level}] verdicts differing from bare execution on non-gated programs: {disagree}")
            started = time.monotonic()
            evaluate_programs("bench_humaneval_v", sources, limits=limits, workers=args.workers, cache_dir=cache, progress=False, level=level)
            print(f"[{level}] re-score from the cache: {time.monotonic() - started:7.1f} s")


if __name__ == "__main__":
    main()
