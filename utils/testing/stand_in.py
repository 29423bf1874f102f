"""`python -m lmms_tasks stand-in`: try any README command offline, without API keys.

Writes small fixtures of every benchmark in its real data format, starts the local OpenAI-compatible
stand-in server on 127.0.0.1 with the demo's scripted replies, prints the `export` lines that point
lmms-eval's openai backend, the judge and the data variables at it (and the `unset` line that undoes them),
and serves until interrupted (Ctrl-C). Like a real server it serves only the model names it announces:
`stand-in-judge` as the judge, and as the model under test `stand-in-vlm` and the names given with `--model`
(default: the one the README's commands use); any other name gets HTTP 404, so a mistyped judge model fails
the judge preflight here as it would against OpenAI. A fixtures folder it made itself is removed when it
stops; one given with `--data-dir` is kept.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import shutil
import signal
import tempfile
import threading
from pathlib import Path

from lmms_tasks import BENCHMARKS
from lmms_tasks.utils.testing.e2e import STAND_IN_JUDGE, STAND_IN_MODEL
from lmms_tasks.utils.testing.openai_server import StandInServer

READY = "# stand-in ready"
README_MODEL = "gpt-4o-2024-11-20"  # the model_version the README's --model openai commands name


def export_groups(base_url: str, data_env: dict[str, str], cache_dir: Path) -> list[dict[str, str]]:
    """The variables a user sets to use the stand-in: model, judge, caches, data and offline Hub settings."""
    return [
        {"OPENAI_API_BASE": base_url, "OPENAI_API_KEY": "EMPTY"},
        {"LMMS_TASKS_JUDGE_BASE_URL": base_url, "LMMS_TASKS_JUDGE_API_KEY": "EMPTY", "LMMS_TASKS_JUDGE_MODEL": STAND_IN_JUDGE},
        {"LMMS_TASKS_JUDGE_CACHE_DIR": str(cache_dir / "judge"), "LMMS_TASKS_EXEC_CACHE_DIR": str(cache_dir / "exec")},
        dict(sorted(data_env.items())),
        {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost"},
    ]


def export_lines(groups: list[dict[str, str]]) -> list[str]:
    """The shell lines a user pastes."""
    return ["export " + " ".join(f"{key}={shlex.quote(value)}" for key, value in group.items()) for group in groups]


def unset_line(groups: list[dict[str, str]]) -> str:
    """The line that undoes `export_lines` in the same shell (before a real run there)."""
    return "unset " + " ".join(key for group in groups for key in group)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks stand-in",
        description="Start a local stand-in for the model under test and the judge (OpenAI-compatible, 127.0.0.1), with small "
        "fixtures of every benchmark, and print the `export` lines that make the README's commands run against it, "
        "offline and without API keys, and the `unset` line that undoes them. Stop it with Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--data-dir", type=Path, default=None, help="where the fixtures and caches are written and kept (default: a new temporary directory, removed when the stand-in stops)")
    parser.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="NAME",
        help=f"a model_version to serve as the model under test, besides {STAND_IN_MODEL} (repeatable; default: {README_MODEL}, "
        "the one the README's commands name); any other model name is answered 404, as a real server does",
    )
    args = parser.parse_args(argv)
    made = args.data_dir is None
    work = (args.data_dir or Path(tempfile.mkdtemp(prefix="lmms_tasks_stand_in_"))).resolve()
    models = sorted({STAND_IN_MODEL, *(args.model or [README_MODEL])} - {STAND_IN_JUDGE})
    server = StandInServer(
        default_reply="",
        port=args.port,
        model_alias=lambda model: model if model == STAND_IN_JUDGE else STAND_IN_MODEL,
        served_models=[STAND_IN_JUDGE, *models],
    )
    try:
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
        groups = export_groups(server.base_url, data_env, work / "cache")
        kept = "kept" if not made else "removed when it stops"
        print(f"# stand-in model and judge on {server.base_url}; fixtures in {work} ({kept})")
        print(f"# it serves the models {', '.join(models)} (model under test) and {STAND_IN_JUDGE} (judge); any other name gets 404")
        print("# paste these lines into the shell that runs lmms-eval:")
        print("\n".join(export_lines(groups)))
        print("# before a real run in that shell, undo them with:")
        print(unset_line(groups))
        print(READY + " (Ctrl-C stops it)", flush=True)
        stop.wait()
        server.stop()
        print(f"# stand-in stopped after {len(server.requests)} requests", flush=True)
    finally:
        if made:
            shutil.rmtree(work, ignore_errors=True)
    return 0
