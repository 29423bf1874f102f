"""`python -m lmms_tasks <command>`: path | score | export-upstream | demo."""

from __future__ import annotations

import argparse
import sys

from lmms_tasks import tasks_path


def _cmd_path(_: argparse.Namespace) -> int:
    print(tasks_path())
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from lmms_tasks.utils.rescore import main as rescore_main

    return rescore_main(args.rest)


def _cmd_export(args: argparse.Namespace) -> int:
    from lmms_tasks.utils.upstream import main as export_main

    return export_main(args.rest)


def _cmd_demo(args: argparse.Namespace) -> int:
    from lmms_tasks.utils.testing.demo import main as demo_main

    return demo_main(args.rest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("path", help="print the directory to pass to lmms-eval --include_path").set_defaults(func=_cmd_path)
    for name, func, help_text in (
        ("score", _cmd_score, "re-score a saved lmms-eval samples file (judging / code execution) without the model"),
        ("export-upstream", _cmd_export, "write our tasks into an lmms-eval checkout, ready for a pull request"),
        ("demo", _cmd_demo, "run every task end to end on generated fixtures against a local stand-in server"),
    ):
        p = sub.add_parser(name, help=help_text, add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=func)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
