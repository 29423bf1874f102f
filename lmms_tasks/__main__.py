"""`python -m lmms_tasks <command>` (or `lmms-tasks <command>`): path | tasks | score | report | export-official |
export-upstream | media-stats | demo | stand-in | make-tiny-vlm."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType

from lmms_tasks import tasks_path


def _cmd_path(args: argparse.Namespace) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks path",
        description="Print the directory to pass to lmms-eval's --include_path (our task folders), e.g. "
        '`lmms-eval --tasks vlm2_bench --include_path "$(python -m lmms_tasks path)" ...`.',
    )
    parser.parse_args(args.rest)
    print(tasks_path())
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from lmms_tasks.utils.commands.report import main as report_main

    return report_main(args.rest)


def _cmd_score(args: argparse.Namespace) -> int:
    if "--from-official" in args.rest:  # the official pipelines' files (utils/commands/official); never exported upstream
        from lmms_tasks.utils.commands.official.cli import score_main

        return score_main([a for a in args.rest if a != "--from-official"])
    from lmms_tasks.utils.commands.score import main as rescore_main

    return rescore_main(args.rest)


def _cmd_export_official(args: argparse.Namespace) -> int:
    from lmms_tasks.utils.commands.official.cli import export_main

    return export_main(args.rest)


def _cmd_media_stats(args: argparse.Namespace) -> int:
    from lmms_tasks.utils.commands.media_stats import main as stats_main

    return stats_main(args.rest)


def _cmd_tasks(args: argparse.Namespace) -> int:
    from lmms_tasks.utils.commands.tasks import main as tasks_main

    return tasks_main(args.rest)


# Developer commands: their modules (utils/testing/, utils/commands/upstream/) stay in the repository but are
# not in the wheel (setup.cfg [lmms_tasks.not_installed]); they run from a checkout installed with `pip install -e .`.
DEVELOPER_COMMANDS = {
    "export-upstream": "lmms_tasks.utils.commands.upstream",
    "demo": "lmms_tasks.utils.testing.demo",
    "stand-in": "lmms_tasks.utils.testing.stand_in",
    "make-tiny-vlm": "lmms_tasks.utils.testing.tiny_vlm",
}


def developer_module(module: str) -> ModuleType | None:
    """The module of a developer command, or None where this install has no developer tools (a wheel).
    Only a missing package of ours on the way to `module` means that; any other missing import is raised."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")) and exc.name.startswith("lmms_tasks."):
            return None
        raise


def _developer_command(command: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        module = developer_module(DEVELOPER_COMMANDS[command])
        if module is None:
            print(
                f"python -m lmms_tasks {command}: a developer command, available from a git checkout installed with `pip install -e .` (not in the installed package)",
                file=sys.stderr,
            )
            return 2
        return int(module.main(args.rest) or 0)

    return run


COMMANDS = {
    "path": (_cmd_path, "print the directory to pass to lmms-eval --include_path"),
    "tasks": (_cmd_tasks, "list our tasks and groups with what each needs (judge key, code-execution opt-in, prior run)"),
    "score": (_cmd_score, "re-score a saved lmms-eval samples file (judging / code execution) without the model; --from-official BENCH PATH: official prediction files"),
    "report": (_cmd_report, "write a results report with plots (Markdown + self-contained HTML) from lmms-eval output directories"),
    "export-official": (_cmd_export_official, "write a finished run's samples in each benchmark's official format, for the official scorers"),
    "export-upstream": (_developer_command("export-upstream"), "write our tasks into an lmms-eval checkout, ready for a pull request"),
    "media-stats": (_cmd_media_stats, "count the images each request carries (for vLLM's limit_mm_per_prompt)"),
    "demo": (_developer_command("demo"), "try every task offline: small generated data, a local stand-in model and judge, results tables and a report"),
    "stand-in": (_developer_command("stand-in"), "start a local stand-in model and judge and print the `export` lines to try any README command offline"),
    "make-tiny-vlm": (_developer_command("make-tiny-vlm"), "build a tiny random-weight Qwen2.5-VL offline (for testing real model backends)"),
}


def main(argv: list[str] | None = None) -> int:
    commands = COMMANDS
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks",
        usage="python -m lmms_tasks COMMAND [ARGS...]   (or: lmms-tasks COMMAND [ARGS...])",
        description="commands:\n" + "\n".join(f"  {name:<16} {help_text}" for name, (_, help_text) in commands.items()),
        epilog="`python -m lmms_tasks COMMAND --help` describes a command's arguments.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=list(commands), metavar="COMMAND", help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # no command: the list of commands, not argparse's "required: command, rest"
        parser.print_help(sys.stderr)
        return 2
    # Parse only the command name: everything after it belongs to the command's own parser.
    args = parser.parse_args(argv[:1])
    args.rest = argv[1:]
    try:
        code = int(commands[args.command][0](args) or 0)
        sys.stdout.flush()  # here, not at exit: a closed pipe is then caught below
        return code
    except BrokenPipeError:
        # the reader went away (`lmms-tasks tasks | head`): stop quietly as a Unix tool does, with the status of a
        # process ended by SIGPIPE (128 + 13); stdout goes to /dev/null so the exit-time flush cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
