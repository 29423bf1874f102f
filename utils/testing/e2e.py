"""Run the real `lmms-eval` CLI against the local stand-in server and parse its output: in a subprocess (the
command exactly as a user types it) or in this process (`in_process=True`: lmms-eval's own CLI entry,
`cli_evaluate`, given the same arguments, for tests of a task's numbers, files and messages, where the process
is not what is tested).

Used by the end-to-end tests and by `python -m lmms_tasks demo`. Everything runs offline: the model and
the judge are the stand-in server on 127.0.0.1, the data are generated fixtures named by the benchmarks'
data environment variables, and the Hugging Face libraries are told they are offline.
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_tasks import tasks_path
from lmms_tasks.utils.testing.oplog import op

STAND_IN_MODEL = "stand-in-vlm"
STAND_IN_JUDGE = "stand-in-judge"


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


def start_interruptible(command: Sequence[str], **popen: Any) -> subprocess.Popen:
    """`subprocess.Popen(command, **popen)` for a test that sends the child Ctrl-C: the child gets SIGINT's default
    disposition (so Python raises KeyboardInterrupt there) even where this process ignores it, as every command
    started from a shell's background job does (`cmd &` without job control ignores SIGINT, and an ignored signal
    stays ignored across exec)."""
    import signal

    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a caught signal is reset to its default in the child
    try:
        return subprocess.Popen(list(command), **popen)
    finally:
        signal.signal(signal.SIGINT, previous)


def offline_env(
    base_url: str,
    work_dir: Path,
    data_env: Mapping[str, str] | None = None,
    judge_model: str = STAND_IN_JUDGE,
    extra: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Environment for a hermetic run, from `base` (default: this process's): offline HF caches under `work_dir`,
    model and judge on `base_url`."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if not k.startswith(("OPENAI_", "AZURE_", "LMMS_TASKS_JUDGE_"))}
    hf_cache = Path(work_dir)
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
    in_process: bool = False,
    **command_kwargs: Any,
) -> RunResult:
    """Run lmms-eval (in a subprocess, or in this process with `in_process`) and parse the newest results.json
    and samples files it wrote."""
    command = lmms_eval_command(tasks, base_url, Path(output_dir), **command_kwargs)
    if in_process:
        return run_in_process(command, output_dir, env=env, cwd=cwd)
    return run_command(command, output_dir, env=env, timeout=timeout, cwd=cwd)


def run_command(command: list[str], output_dir: Path, *, env: Mapping[str, str], timeout: float = 900, cwd: Path | None = None) -> RunResult:
    """Run an lmms-eval command line in a subprocess and parse what it wrote under `output_dir`."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    with op("lmms-eval", " ".join(command[command.index("--tasks") + 1 : command.index("--tasks") + 2] if "--tasks" in command else command[:3])):
        proc = subprocess.run(
            command,
            env=dict(env),
            cwd=str(cwd or output_dir),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    result = RunResult(command=command, returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr, output_dir=output_dir)
    return collect_outputs(result)


# What the Hugging Face libraries read from the environment once, when imported: an in-process run sets them from
# its environment for its duration (module, attribute, environment variable, how the value is read).
def _true(value: str) -> bool:
    return value.upper() in ("1", "ON", "YES", "TRUE")


_READ_AT_IMPORT = (
    ("datasets.config", "HF_DATASETS_CACHE", "HF_DATASETS_CACHE", Path),
    ("datasets.config", "HF_HUB_OFFLINE", "HF_HUB_OFFLINE", _true),
    ("datasets.config", "HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", _true),
    ("huggingface_hub.constants", "HF_HUB_OFFLINE", "HF_HUB_OFFLINE", _true),
)


def _cli_arguments(command: Sequence[str]) -> list[str]:
    """The arguments after the launcher (`lmms-eval`, `lmms-eval eval`, `python -m lmms_eval`); one process only."""
    if "accelerate.commands.launch" in command or "--num_processes" in command:
        raise ValueError("an in-process run is one process: run `accelerate launch` as a subprocess (run_command)")
    start = next((i for i, arg in enumerate(command) if arg.startswith("--")), None)
    if start is None:
        raise ValueError(f"not an lmms-eval command line: {command}")
    return list(command[start:])


def run_in_process(command: Sequence[str], output_dir: Path, *, env: Mapping[str, str], cwd: Path | None = None) -> RunResult:
    """Run an lmms-eval command line in this process, through lmms-eval's own CLI entry (`cli_evaluate` parses
    `sys.argv` as the console script's does), and parse what it wrote under `output_dir`.

    For its duration the process has `env` as its environment (and the Hugging Face settings read at import,
    `_READ_AT_IMPORT`, from it), `cwd` (default: `output_dir`) as its working directory, and its output captured.
    `returncode` is the status the command would exit with, and its closing lines are printed to `stderr` as the
    command prints them (`compat.exit_status`): from the faults the run recorded (`services.status`: 3 for an
    incomplete scoring) and the error that ended an evaluation (its `exit_status`, else 4; lmms-eval catches it
    and prints it as always). What needs the process itself (the
    exit status as the shell sees it, `accelerate launch`, start-up imports) is tested through `run_command`."""
    import importlib

    import lmms_eval.__main__ as cli
    from loguru import logger

    from lmms_tasks.utils.compat.exit_status import note_error, summary_lines
    from lmms_tasks.utils.services import status

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    argv = ["lmms-eval-in-process", *_cli_arguments(command)]
    evaluate_single = cli.cli_evaluate_single

    def noted(*args: Any, **kwargs: Any) -> Any:
        try:
            return evaluate_single(*args, **kwargs)
        except Exception as exc:  # lmms-eval catches it next, as always; the status is what the patched CLI gives
            note_error(exc)
            raise

    stdout, stderr = io.StringIO(), io.StringIO()
    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    modules = [importlib.import_module(name) for name, _, _, _ in _READ_AT_IMPORT]
    saved_settings = [(module, attr, getattr(module, attr)) for module, (_, attr, _, _) in zip(modules, _READ_AT_IMPORT)]
    status.clear()
    returncode = 0
    with op("lmms-eval-in-process", " ".join(argv[argv.index("--tasks") + 1 : argv.index("--tasks") + 2] if "--tasks" in argv else argv[:2])):
        try:
            os.environ.clear()
            os.environ.update(env)
            for (module, attr, _), (_, _, variable, read) in zip(saved_settings, _READ_AT_IMPORT):
                if variable in env:
                    setattr(module, attr, read(env[variable]))
            sys.argv = argv
            os.chdir(cwd or output_dir)
            cli.cli_evaluate_single = noted
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    cli.cli_evaluate()
                except SystemExit as exc:
                    returncode = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except Exception:  # what would end the process with a traceback
                    traceback.print_exc()
                    returncode = 1
        finally:
            cli.cli_evaluate_single = evaluate_single
            logger.remove()  # lmms-eval's sink writes to the captured output; later logs go where the test's go
            logger.add(lambda message: sys.stderr.write(message), level="INFO")
            os.chdir(saved_cwd)
            sys.argv = saved_argv
            os.environ.clear()
            os.environ.update(saved_env)
            for module, attr, value in saved_settings:
                setattr(module, attr, value)
    returncode = returncode or status.exit_code()
    if returncode:  # what the command prints last when it exits non-zero (compat.exit_status)
        stderr.write("".join(f"{line}\n" for line in summary_lines(returncode)))
    status.clear()
    result = RunResult(command=list(command), returncode=returncode, stdout=stdout.getvalue(), stderr=stderr.getvalue(), output_dir=output_dir)
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
