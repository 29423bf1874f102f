"""`python -m lmms_tasks stand-in`: try any README command offline, without API keys.

Writes small fixtures of every benchmark in its real data format, starts the local OpenAI-compatible
stand-in server on 127.0.0.1 with the demo's scripted replies (it answers every model name as the model
under test, and `stand-in-judge` as the judge), prints the `export` lines that point lmms-eval's openai
backend, the judge and the data variables at it, and serves until interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import signal
import tempfile
import threading
from pathlib import Path

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL
from lmms_tasks.utils.testing.openai_server import StandInServer

READY = "# stand-in ready"


def export_lines(base_url: str, data_env: dict[str, str], cache_dir: Path) -> list[str]:
    """The shell lines a user pastes: model, judge, data and offline Hub settings."""
    groups = [
        {"OPENAI_API_BASE": base_url, "OPENAI_API_KEY": "EMPTY"},
        {"LMMS_TASKS_JUDGE_BASE_URL": base_url, "LMMS_TASKS_JUDGE_API_KEY": "EMPTY", "LMMS_TASKS_JUDGE_MODEL": STAND_IN_JUDGE},
        {"LMMS_TASKS_JUDGE_CACHE_DIR": str(cache_dir / "judge"), "LMMS_TASKS_EXEC_CACHE_DIR": str(cache_dir / "exec")},
        dict(sorted(data_env.items())),
        {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost"},
    ]
    return ["export " + " ".join(f"{key}={shlex.quote(value)}" for key, value in group.items()) for group in groups]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks stand-in",
        description="Start a local stand-in for the model under test and the judge (OpenAI-compatible, 127.0.0.1), with small "
        "fixtures of every benchmark, and print the `export` lines that make the README's commands run against it, "
        "offline and without API keys. Stop it with Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--data-dir", type=Path, default=None, help="where the fixtures and caches are written (default: a new temporary directory, kept)")
    args = parser.parse_args(argv)
    work = (args.data_dir or Path(tempfile.mkdtemp(prefix="lmms_tasks_stand_in_"))).resolve()
    server = StandInServer(default_reply="", port=args.port, model_alias=lambda model: model if model == STAND_IN_JUDGE else STAND_IN_MODEL)
    data_env: dict[str, str] = {}
    for benchmark in BENCHMARKS:
        module = importlib.import_module(f"lmms_tasks.utils.testing.fixtures.{benchmark}")
        fixtures = module.write(work / "data" / benchmark)
        module.script_demo(server, fixtures)
        data_env.update(fixtures.env)
    server.start()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f"# stand-in model and judge on {server.base_url}; fixtures in {work}")
    print("# paste these lines into the shell that runs lmms-eval (any --model_args model_version works):")
    print("\n".join(export_lines(server.base_url, data_env, work / "cache")))
    print(READY + " (Ctrl-C stops it)", flush=True)
    stop.wait()
    server.stop()
    print(f"# stand-in stopped after {len(server.requests)} requests", flush=True)
    return 0
