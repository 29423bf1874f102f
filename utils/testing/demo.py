"""`python -m lmms_tasks demo`: every task end to end, offline.

Generates each benchmark's fixtures in its real format, starts the stand-in OpenAI-compatible server as
both the model under test and the judge (with plausible scripted replies), runs the real `lmms-eval` CLI
over our tasks and prints lmms-eval's results tables. Nothing leaves 127.0.0.1.

A fixture module may define `DEMO_STAGES` (lists of task/group names run one after another, default one
stage with the benchmark's group) and `stage_env(stage, previous)` (extra environment for a stage, given the
previous stage's RunResult, e.g. the samples file a second stage reads).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.testing.e2e import RunResult, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.openai_server import RecordedRequest, StandInServer

# Fixture code only: the demo runs the HumanEval-V programs it scripted itself, in the sandbox.
DEMO_ENV = {"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1"}


def _tables(result: RunResult) -> str:
    from lmms_eval.utils import make_table

    text = make_table(result.results)
    if result.results.get("groups"):
        text += "\n" + make_table(result.results, "groups")
    return text


@dataclass
class DemoOutcome:
    """The demo's lmms-eval runs (each checked for success) and every request the stand-in server saw."""

    runs: list[RunResult] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)


def run_demo(benchmarks: list[str], work_dir: Path, num_processes: int = 1, quiet: bool = False) -> DemoOutcome:
    """Run every stage of every benchmark against one stand-in server."""
    say = (lambda *a, **k: None) if quiet else print
    outcome = DemoOutcome()
    runs = outcome.runs
    with StandInServer(default_reply="") as server:
        data_env: dict[str, str] = {}
        modules = {}
        for benchmark in benchmarks:
            module = importlib.import_module(f"lmms_tasks.utils.testing.fixtures.{benchmark}")
            fixtures = module.write(work_dir / "data" / benchmark)
            module.script_demo(server, fixtures)
            data_env.update(fixtures.env)
            modules[benchmark] = module
        env = offline_env(server.base_url, work_dir, data_env=data_env, extra=DEMO_ENV)
        for benchmark, module in modules.items():
            previous: RunResult | None = None
            for stage, tasks in enumerate(getattr(module, "DEMO_STAGES", [[benchmark]])):
                stage_env = dict(env)
                if hasattr(module, "stage_env"):
                    stage_env.update(module.stage_env(stage, previous))
                started = time.monotonic()
                say(f"\n=== {benchmark}: lmms-eval --tasks {','.join(tasks)} ===", flush=True)
                result = run_lmms_eval(tasks, server.base_url, work_dir / "results" / f"{benchmark}_{stage}", env=stage_env, num_processes=num_processes)
                result.check()
                say(_tables(result))
                say(f"({time.monotonic() - started:.1f} s; results: {result.results_path})", flush=True)
                runs.append(result)
                previous = result
        outcome.requests = list(server.requests)
        say(f"\nstand-in server answered {len(server.requests)} requests "
              f"({len(server.requests_for(model='stand-in-judge'))} of them as the judge)")
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks demo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated subset of " + ",".join(BENCHMARKS))
    parser.add_argument("--work-dir", type=Path, default=None, help="keep fixtures and results here (default: a temporary directory, removed)")
    parser.add_argument("--num-processes", type=int, default=1, help="run lmms-eval under `accelerate launch --num_processes N`")
    args = parser.parse_args(argv)
    benchmarks = [b for b in args.benchmarks.split(",") if b]
    unknown = sorted(set(benchmarks) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="lmms_tasks_demo_"))
    try:
        run_demo(benchmarks, work_dir, args.num_processes)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work_dir, ignore_errors=True)
    return 0
