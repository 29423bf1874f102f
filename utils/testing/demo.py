"""`python -m lmms_tasks demo`: every task end to end, offline.

Generates each benchmark's fixtures in its real format, starts the stand-in OpenAI-compatible server as
both the model under test and the judge (with plausible scripted replies), runs the real `lmms-eval` CLI
over our tasks and prints lmms-eval's results tables. Nothing leaves 127.0.0.1.

A fixture module may define `DEMO_STAGES` (lists of task/group names run one after another, default one
stage with the benchmark's group) and `stage_env(stage, previous)` (extra environment for a stage, given the
previous stage's RunResult, e.g. the samples file a second stage reads). Stage *i* of every benchmark runs
in one lmms-eval invocation (`stages()`), so the demo costs one start-up per stage, not per benchmark.

With `--models 2` a second stand-in model (`stand-in-vlm-b`, scripted by each fixture module's
`script_demo_second_model`, with different replies) runs every stage too. Every run of every model goes to
one `--output_path`, `results/`, as users compare models (lmms-eval writes `results/<model>/<ts>_results.json`,
each run's records beside it). The demo ends by writing a results report (`python -m lmms_tasks report
results/`) and printing where it is.
"""

from __future__ import annotations

import argparse
import importlib
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.testing.e2e import STAND_IN_MODEL, RunResult, offline_env, run_lmms_eval
from lmms_tasks.utils.testing.openai_server import RecordedRequest, StandInServer
from lmms_tasks.utils.testing.oplog import op

# Fixture code only: the demo runs the HumanEval-V programs it scripted itself, in the sandbox.
DEMO_ENV = {"HUMANEVAL_V_ALLOW_CODE_EXECUTION": "1"}


def kept_caches(work_dir: Path) -> dict[str, str]:
    """The caches the demo's processes would otherwise write under HOME, under `work_dir/cache` (offline_env puts
    the judge, execution and Hugging Face caches under work_dir): the media checks' and matplotlib's."""
    cache = work_dir / "cache"
    return {"LMMS_TASKS_MEDIA_CACHE_DIR": str(cache / "media"), "MPLCONFIGDIR": str(cache / "matplotlib"), "XDG_CACHE_HOME": str(cache)}
# The demo's stand-in models under test; the second is scripted by `script_demo_second_model`.
DEMO_MODELS = (STAND_IN_MODEL, "stand-in-vlm-b")


def _tables(result: RunResult) -> str:
    """The results tables exactly as the lmms-eval command printed them (with our tasks' backports: no
    dict-valued breakdown rows, docs/REFERENCE.md), not rebuilt here from results.json."""
    blocks: list[list[str]] = [[]]
    for line in result.stdout.splitlines():
        if line.startswith("|"):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return "\n\n".join("\n".join(block) for block in blocks if block)


@dataclass
class DemoOutcome:
    """The demo's lmms-eval runs (each checked for success) and every request the stand-in server saw."""

    runs: list[RunResult] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    run_dirs: dict[str, Path] = field(default_factory=dict)  # model -> its folder lmms-eval wrote (`results/<model>/`)
    results_dir: Path | None = None  # the one --output_path every run went to
    by_model: dict[str, list[RunResult]] = field(default_factory=dict)

    def runs_of(self, model: str) -> list[RunResult]:
        """The runs of one stand-in model, in stage order."""
        return list(self.by_model.get(model, []))


def stages(modules: dict[str, Any]) -> list[list[str]]:
    """Stage i of the demo: stage i of every benchmark's `DEMO_STAGES` (default: its group), in one run."""
    per_benchmark = [getattr(module, "DEMO_STAGES", [[benchmark]]) for benchmark, module in modules.items()]
    return [[task for stages_of in per_benchmark if i < len(stages_of) for task in stages_of[i]] for i in range(max(map(len, per_benchmark)))]


def stage_env(modules: dict[str, Any], stage: int, previous: RunResult | None) -> dict[str, str]:
    """The extra environment every benchmark asks for at this stage (given the previous stage's run)."""
    env: dict[str, str] = {}
    for module in modules.values():
        if hasattr(module, "stage_env"):
            env.update(module.stage_env(stage, previous))
    return env


def run_demo(
    benchmarks: list[str], work_dir: Path, num_processes: int = 1, quiet: bool = False, models: int = 1, in_process: bool = False
) -> DemoOutcome:
    """Run every stage of every benchmark against one stand-in server, for 1 or 2 stand-in models.

    Every run goes to one `--output_path`, `work_dir/results/` (lmms-eval: `results/<model>/`), as users
    compare models; the first model's runs all come first, so the second one meets a warm judge cache.
    `in_process` (tests of what the runs write; one process only) runs each through lmms-eval's CLI entry in
    this process instead of the `lmms-eval` command (`e2e.run_in_process`).
    """
    if models not in (1, 2):
        raise ValueError(f"the demo has 1 or 2 stand-in models, not {models}")
    with op("demo", f"{','.join(benchmarks)} models={models} processes={num_processes}"):
        return _run_demo(benchmarks, work_dir, num_processes, quiet, models, in_process)


def _run_demo(benchmarks: list[str], work_dir: Path, num_processes: int, quiet: bool, models: int, in_process: bool) -> DemoOutcome:
    say = (lambda *a, **k: None) if quiet else print
    outcome = DemoOutcome()
    runs = outcome.runs
    names = DEMO_MODELS[:models]
    with StandInServer(default_reply="") as server:
        data_env: dict[str, str] = {}
        modules = {}
        for benchmark in benchmarks:
            module = importlib.import_module(f"lmms_tasks.utils.testing.fixtures.{benchmark}")
            fixtures = module.write(work_dir / "data" / benchmark)
            for name in names[1:]:  # earlier rules win: the second model's rules go first
                module.script_demo_second_model(server, fixtures, name)
            module.script_demo(server, fixtures)
            data_env.update(fixtures.env)
            modules[benchmark] = module
        env = offline_env(server.base_url, work_dir, data_env=data_env, extra={**DEMO_ENV, **kept_caches(work_dir)})
        root = outcome.results_dir = work_dir / "results"
        for name in names:
            previous: RunResult | None = None
            for stage, tasks in enumerate(stages(modules)):
                started = time.monotonic()
                say(f"\n=== {name}: lmms-eval --tasks {','.join(tasks)} ===", flush=True)
                result = run_lmms_eval(
                    tasks,
                    server.base_url,
                    root,
                    env={**env, **stage_env(modules, stage, previous)},
                    num_processes=num_processes,
                    model_version=name,
                    in_process=in_process,
                )
                result.check()
                say(_tables(result))
                say(f"({time.monotonic() - started:.1f} s; results: {result.results_path})", flush=True)
                runs.append(result)
                outcome.by_model.setdefault(name, []).append(result)
                outcome.run_dirs.setdefault(name, result.results_path.parent)
                previous = result
        outcome.requests = list(server.requests)
        say(f"\nstand-in server answered {len(server.requests)} requests "
              f"({len(server.requests_for(model='stand-in-judge'))} of them as the judge)")
    return outcome


USAGE = """Try every task end to end, offline and without API keys: small generated data in each
benchmark's real format, a local stand-in server on 127.0.0.1 playing the model under test and the judge,
and the real `lmms-eval` command. It prints lmms-eval's results tables and ends with a results report.

Everything it writes (data, lmms-eval results and samples, judgements, the report) stays in one folder:
--work-dir, or a new temporary folder whose path it prints first and last (delete it when done)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks demo", description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated subset of " + ",".join(BENCHMARKS))
    parser.add_argument("--work-dir", type=Path, default=None, help="the folder for everything the demo writes (default: a new temporary folder, kept)")
    parser.add_argument("--num-processes", type=int, default=1, help="run lmms-eval as N processes (`accelerate launch --num_processes N`)")
    parser.add_argument("--models", type=int, choices=(1, 2), default=1, help="stand-in models to evaluate (2: a second model with different replies, compared in the report)")
    parser.add_argument("--report-dir", type=Path, default=None, help="where to write the results report (default: <work-dir>/report)")
    parser.add_argument("--no-report", action="store_true", help="do not write the results report")
    args = parser.parse_args(argv)
    benchmarks = [b for b in args.benchmarks.split(",") if b]
    unknown = sorted(set(benchmarks) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    work_dir = (args.work_dir or Path(tempfile.mkdtemp(prefix="lmms_tasks_demo_"))).resolve()
    print(f"demo: everything is written under {work_dir}", flush=True)
    outcome = run_demo(benchmarks, work_dir, args.num_processes, models=args.models)
    if not args.no_report:
        # the report draws in this process: matplotlib's cache too stays in the work dir (unless the user named one)
        os.environ.setdefault("MPLCONFIGDIR", kept_caches(work_dir)["MPLCONFIGDIR"])
        _write_report([outcome.results_dir], args.report_dir or work_dir / "report")
    print(f"\ndemo: results, samples, judgements and data are kept in {work_dir}", flush=True)
    return 0


def _write_report(run_dirs: list[Path], report_dir: Path) -> None:
    """The demo's last step: the results report of its runs (skipped, with the reason, without matplotlib)."""
    from lmms_tasks.utils.commands.report import ReportDependencyError, write_report

    try:
        written = write_report(run_dirs, report_dir)
    except ReportDependencyError as exc:
        print(f"\nno results report: {exc}")
        return
    print(f"\nresults report: {written.html}\n                {written.markdown}")
