"""Run the real `lmms-eval` CLI in a subprocess against the local stand-in server and parse its output.

Used by the end-to-end tests and by `python -m lmms_tasks demo`. Everything runs offline: the model and
the judge are the stand-in server on 127.0.0.1, the data are generated fixtures named by the benchmarks'
data environment variables, and the Hugging Face libraries are told they are offline.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks import tasks_path
from lmms_tasks.utils.testing.oplog import op
from lmms_tasks.utils.testing.startup_hook import hooked

STAND_IN_MODEL = "stand-in-vlm"
STAND_IN_JUDGE = "stand-in-judge"
# a test run's own Hugging Face caches (tests/conftest.py makes them), shared by all its runs: the Hugging Face
# libraries read where their caches are when they are imported, so runs that share them can share those imports
# (utils/testing/startup_site/lmms_tasks_test_preload.py)
RUN_HF_CACHE_ENV = "LMMS_TASKS_TEST_HF_CACHE"


@dataclass
class RunResult:
    """What one lmms-eval run produced."""

    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    output_dir: Path
    results: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    results_path: Path | None = None

    def metric(self, task: str, metric: str, filter_name: str = "none") -> Any:
        """One metric value of a task or group from results.json (`"metric,filter"` keys)."""
        section = self.results.get("results", {}).get(task) or self.results.get("groups", {}).get(task)
        if section is None:
            raise KeyError(f"{task!r} not in results (have {sorted(self.results.get('results', {}))})")
        key = f"{metric},{filter_name}"
        if key not in section:
            raise KeyError(f"{key!r} not in results of {task!r} (have {sorted(section)})")
        return section[key]

    def check(self, exit_status: int = 0) -> RunResult:
        """Raise with the tail of the run's output unless lmms-eval wrote results and exited `exit_status`
        (3 = outputs written but judgements or executions failed, see `lmms_tasks.utils.services.status`)."""
        if self.returncode != exit_status or self.results_path is None:
            tail = (self.stdout[-4000:] + "\n--- stderr ---\n" + self.stderr[-8000:]).strip()
            raise RuntimeError(f"lmms-eval exited {self.returncode} (results: {self.results_path}):\n{tail}")
        return self


def offline_env(
    base_url: str,
    work_dir: Path,
    data_env: Mapping[str, str] | None = None,
    judge_model: str = STAND_IN_JUDGE,
    extra: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Environment for a hermetic run, from `base` (default: this process's): offline HF caches under `work_dir`
    (under the test run's own where `base` names one, RUN_HF_CACHE_ENV), model and judge on `base_url`."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if not k.startswith(("OPENAI_", "AZURE_", "LMMS_TASKS_JUDGE_"))}
    hf_cache = Path(base.get(RUN_HF_CACHE_ENV) or work_dir)
    env.update(
        {
            "HF_HOME": str(hf_cache / "hf_home"),
            "HF_DATASETS_CACHE": str(hf_cache / "hf_datasets"),
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "WANDB_MODE": "disabled",
            "TOKENIZERS_PARALLELISM": "false",
            "OPENAI_API_KEY": "EMPTY",
            "OPENAI_API_BASE": base_url,
            "LMMS_TASKS_JUDGE_BASE_URL": base_url,
            "LMMS_TASKS_JUDGE_API_KEY": "EMPTY",
            "LMMS_TASKS_JUDGE_MODEL": judge_model,
            "LMMS_TASKS_JUDGE_CACHE_DIR": str(work_dir / "judge_cache"),
            "LMMS_TASKS_EXEC_CACHE_DIR": str(work_dir / "exec_cache"),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(data_env or {})
    env.update(extra or {})
    return env


def include_path_args(include_path: str | None) -> list[str]:
    """`--include_path DIR` (default: our tasks root); none when `include_path == ""` or when the root is
    lmms-eval's own `lmms_eval/tasks` (our tasks exported upstream are built-in tasks there)."""
    path = tasks_path() if include_path is None else include_path
    if not path or (Path(path).name == "tasks" and Path(path).parent.name == "lmms_eval"):
        return []
    return ["--include_path", path]


def lmms_eval_command(
    tasks: Sequence[str] | str,
    base_url: str,
    output_dir: Path,
    *,
    model_version: str = STAND_IN_MODEL,
    num_concurrent: int = 4,
    num_processes: int = 1,
    limit: int | float | None = None,
    model_args: Mapping[str, Any] | None = None,
    extra_args: Iterable[str] = (),
    include_path: str | None = None,
    entry: str | None = None,
) -> list[str]:
    """The exact command line a user would type, for `--model openai` against `base_url`."""
    args = {"model_version": model_version, "base_url": base_url, "api_key": "EMPTY", "num_concurrent": num_concurrent, "max_retries": 2}
    args.update(model_args or {})
    model_arg_string = ",".join(f"{k}={v}" for k, v in args.items())
    return cli_command(
        "openai",
        model_arg_string,
        tasks,
        output_dir,
        num_processes=num_processes,
        limit=limit,
        extra_args=extra_args,
        include_path=include_path,
        entry=entry,
    )


ENTRY_POINTS = ("console", "eval", "module", "accelerate")


def console_script() -> str:
    """The `lmms-eval` console script installed next to this interpreter (what the README's commands run)."""
    script = Path(sys.executable).parent / "lmms-eval"
    if not script.is_file():
        raise FileNotFoundError(f"no lmms-eval console script beside {sys.executable}")
    return str(script)


def launcher(num_processes: int = 1, entry: str | None = None) -> list[str]:
    """How a user starts lmms-eval: the `lmms-eval` console script (`console`, the README's command and the
    default for one process), `lmms-eval eval` (`eval`), `python -m lmms_eval` (`module`), or
    `accelerate launch --num_processes N -m lmms_eval` (`accelerate`, the default for N > 1; `--multi_gpu`:
    on a CPU-only machine accelerate starts N processes only with it; they use gloo)."""
    entry = entry or ("accelerate" if num_processes > 1 else "console")
    if entry not in ENTRY_POINTS:
        raise ValueError(f"entry must be one of {ENTRY_POINTS}, got {entry!r}")
    if entry == "accelerate":
        processes = max(num_processes, 2)
        return [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(processes), "--num_machines", "1", "--multi_gpu", "-m", "lmms_eval"]
    if num_processes > 1:
        raise ValueError(f"{entry!r} starts one process; use entry='accelerate' for {num_processes}")
    if entry == "console":
        return [console_script()]
    if entry == "eval":
        return [console_script(), "eval"]
    return [sys.executable, "-m", "lmms_eval"]


def cli_command(
    model: str,
    model_args: str,
    tasks: Sequence[str] | str,
    output_dir: Path,
    *,
    num_processes: int = 1,
    limit: int | float | None = None,
    extra_args: Iterable[str] = (),
    include_path: str | None = None,
    entry: str | None = None,
) -> list[str]:
    """`lmms-eval --model MODEL --model_args MODEL_ARGS --tasks ... --log_samples` for any backend."""
    task_list = tasks if isinstance(tasks, str) else ",".join(tasks)
    command = launcher(num_processes, entry) + [
        "--model",
        model,
        "--model_args",
        model_args,
        "--tasks",
        task_list,
        *include_path_args(include_path),
        "--batch_size",
        "1",
        "--log_samples",
        "--output_path",
        str(output_dir),
        "--verbosity",
        "INFO",
    ]
    if limit is not None:
        command += ["--limit", str(limit)]
    return command + list(extra_args)


def run_lmms_eval(
    tasks: Sequence[str] | str,
    base_url: str,
    output_dir: Path,
    *,
    env: Mapping[str, str],
    timeout: float = 900,
    cwd: Path | None = None,
    **command_kwargs: Any,
) -> RunResult:
    """Run lmms-eval in a subprocess and parse the newest results.json and samples files it wrote."""
    command = lmms_eval_command(tasks, base_url, Path(output_dir), **command_kwargs)
    return run_command(command, output_dir, env=env, timeout=timeout, cwd=cwd)


def run_command(command: list[str], output_dir: Path, *, env: Mapping[str, str], timeout: float = 900, cwd: Path | None = None) -> RunResult:
    """Run an lmms-eval command line in a subprocess and parse what it wrote under `output_dir` (in the test suite,
    with the suite's start-up hook: utils/testing/startup_hook.py)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    with op("lmms-eval", " ".join(command[command.index("--tasks") + 1 : command.index("--tasks") + 2] if "--tasks" in command else command[:3])):
        proc = subprocess.run(
            command,
            env=hooked(env),
            cwd=str(cwd or output_dir),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    result = RunResult(command=command, returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr, output_dir=output_dir)
    return collect_outputs(result)


def collect_outputs(result: RunResult) -> RunResult:
    """Fill `results` and `samples` from the newest `*_results.json` under the run's output directory."""
    results_files = sorted(glob.glob(str(result.output_dir / "**" / "*_results.json"), recursive=True), key=os.path.getmtime)
    if not results_files:
        return result
    result.results_path = Path(results_files[-1])
    result.results = json.loads(result.results_path.read_text(encoding="utf-8"))
    stamp = result.results_path.name[: -len("_results.json")]
    for path in glob.glob(str(result.results_path.parent / f"{stamp}_samples_*.jsonl")):
        task = Path(path).name[len(f"{stamp}_samples_") : -len(".jsonl")]
        with open(path, encoding="utf-8") as fh:
            result.samples[task] = [json.loads(line) for line in fh if line.strip()]
    return result


def printed_tables(stdout: str) -> list[tuple[list[str], list[list[str]]]]:
    """The markdown tables lmms-eval printed: (header cells, rows of cells)."""
    tables, current = [], None
    for line in stdout.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None:
            current = (cells, [])
            tables.append(current)
        elif not set("".join(cells)) <= set("-: "):
            current[1].append(cells)
    return tables
