"""`python -m lmms_tasks export-upstream PATH`: write our tasks into an lmms-eval checkout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lmms_tasks.utils.commands.upstream import exporter, listing, series, writer
from lmms_tasks.utils.commands.upstream.sources import ExportError, SourceTree, default_tree
from lmms_tasks.utils.commands.upstream.style import detect_style


def checkout_root(path: Path) -> Path:
    """The directory holding `lmms_eval/tasks`: a repository root, or the installed package's parent.

    The installed package directory itself (`.../site-packages/lmms_eval`) is accepted too.
    """
    path = path.expanduser().resolve()
    if (path / "lmms_eval" / "tasks").is_dir():
        return path
    if path.name == "lmms_eval" and (path / "tasks").is_dir():
        return path.parent
    raise ExportError(f"{path}: not an lmms-eval checkout (no lmms_eval/tasks/ inside)")


def export(
    root: Path,
    tree: SourceTree,
    *,
    force: bool = False,
    dry_run: bool = False,
    include_tests: bool = True,
    format_code: bool = True,
    patches: bool = True,
) -> tuple[exporter.Export, writer.Outcome]:
    """Export `tree` into the checkout at `root`, with the lmms-eval patch series it needs in
    `lmms_tasks_patches/` (see `series.plan`); see `writer.apply` for the overwrite rules."""
    root = checkout_root(root)
    style = detect_style(root) if format_code else None
    result = exporter.build(tree, style, include_tests=include_tests)
    result.series = series.plan(root) if patches else series.SeriesPlan(missing=[])
    result.plan.files.update(result.series.files)
    outcome = writer.apply(root, result.plan, force=force, dry_run=dry_run)
    return result, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks export-upstream", description=__doc__)
    parser.add_argument("path", type=Path, help="lmms-eval checkout root (holding lmms_eval/tasks), or an installed lmms_eval package's parent")
    parser.add_argument("--benchmark", action="append", default=None, help="export only this benchmark (repeatable; default: every benchmark folder that has task YAMLs)")
    parser.add_argument("--force", action="store_true", help="overwrite files the exporter did not write (or that were edited since)")
    parser.add_argument("--dry-run", action="store_true", help="list what would change and write nothing")
    parser.add_argument("--no-tests", action="store_true", help="do not export tests to test/eval/")
    parser.add_argument("--list", action="store_true", help="print every exported file, by folder (the pull request's file list, as docs/UPSTREAM.md shows it)")
    parser.add_argument("--no-patches", action="store_true", help="do not write the lmms-eval patch series the tasks need (lmms_tasks_patches/)")
    args = parser.parse_args(argv)
    try:
        tree = default_tree(args.benchmark)
        root = checkout_root(args.path)
        style = detect_style(root)
        print(f"exporting {', '.join(tree.benchmarks)} into {root}\nstyle: {style.describe()}", flush=True)
        result, outcome = export(root, tree, force=args.force, dry_run=args.dry_run, include_tests=not args.no_tests, patches=not args.no_patches)
    except ExportError as exc:
        print(f"export-upstream: error: {exc}", file=sys.stderr)
        return 2
    verb = "would write" if args.dry_run else "wrote"
    print(f"{verb} {len(outcome.written)} file(s), {len(outcome.unchanged)} unchanged, removed {len(outcome.removed)}; current_tasks.md {'updated' if outcome.catalog_changed else 'unchanged'}")
    if result.series.files:
        print(
            f"this lmms-eval lacks {len(result.series.missing)} feature(s) the tasks use: the patch series ({result.series.version}) is in "
            f"{series.OUTPUT_DIR}/. Apply it first, then commit the tasks (docs/UPSTREAM.md):\n"
            f"  cd {root} && git am {series.OUTPUT_DIR}/*.patch && rm -r {series.OUTPUT_DIR}"
        )
    elif not args.no_patches:
        print("this lmms-eval has every feature the tasks use: no patches needed")
    if args.list:
        print(f"the pull request's files ({len(result.plan.files)} new, 1 modified; docs/UPSTREAM.md shows this list):")
        print(listing.markdown(result.plan.files, writer.catalog.CATALOG_PATH, len(result.plan.catalog_lines)))
    if result.third_party:
        print("third-party imports in the exported code: " + ", ".join(sorted(result.third_party)))
        missing = exporter.undeclared_imports(result.third_party, root)
        if missing:
            print("not declared in the checkout's pyproject.toml (declare them or use lmms_eval.imports.optional_import): " + ", ".join(missing))
    for test in result.dropped_tests:
        print(f"not exported (marked include_path_only): {test}")
    for note in result.leftovers:
        print(f"note: {note}")
    return 0
