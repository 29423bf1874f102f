"""Command line of `python -m lmms_tasks report`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lmms_tasks.utils.commands.report import FORMATS, ReportDependencyError, ReportInputError, write_report

EXIT_INPUT = 2
EXIT_DEPENDENCY = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks report",
        description=(
            "Write a results report with plots (report.md, a self-contained report.html, plots/) from lmms-eval "
            "output directories: one run per model found under each RUN_DIR, side by side, next to the papers' "
            "published numbers. Needs matplotlib: pip install 'lmms-tasks[report]'."
        ),
    )
    parser.add_argument(
        "run_dirs",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        help="an lmms-eval --output_path (searched recursively for *_results.json), or one results file",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory to write report.md, report.html and plots/ into")
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="svg",
        help="plot files to write (default: svg; the HTML embeds the SVG when there is one)",
    )
    args = parser.parse_args(argv)
    try:
        written = write_report(args.run_dirs, args.out, FORMATS[args.format])
    except ReportDependencyError as exc:
        print(f"lmms_tasks report: {exc}", file=sys.stderr)
        return EXIT_DEPENDENCY
    except ReportInputError as exc:
        print(f"lmms_tasks report: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print(f"runs: {', '.join(run.label for run in written.runs)}")
    print(f"report: {written.html}")
    print(f"        {written.markdown}")
    return 0
