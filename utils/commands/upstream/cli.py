"""`python -m lmms_tasks export-upstream PATH`: our tasks as a stack of pull requests for an lmms-eval checkout.

By default it writes `lmms_tasks_stack/` into the checkout: one `git am`-able patch per pull request, in order
(the core changes the checkout lacks, then one per benchmark), each with its description beside it, and a README
with the commands that turn them into stacked branches (docs/UPSTREAM.md). `--tree` instead writes the task
files into the working tree and the core patches to `lmms_tasks_patches/`, to try the tasks without git."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lmms_tasks.utils.commands.upstream import exporter, listing, series, stack, writer
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


def export_stack(
    root: Path,
    tree: SourceTree,
    *,
    force: bool = False,
    dry_run: bool = False,
    include_tests: bool = True,
    format_code: bool = True,
    patches: bool = True,
) -> tuple[stack.Stack, writer.Outcome]:
    """Write the stack of pull requests for `tree` into `lmms_tasks_stack/` of the checkout at `root` (nothing
    else of the checkout is touched; `writer.apply`'s overwrite rules hold)."""
    root = checkout_root(root)
    style = detect_style(root) if format_code else None
    built = stack.build(root, tree, style, include_tests=include_tests, patches=patches)
    outcome = writer.apply(root, writer.Plan(files=built.files(), edits_catalog=False), force=force, dry_run=dry_run)
    return built, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_tasks export-upstream", description=__doc__)
    parser.add_argument("path", type=Path, help="lmms-eval checkout root (holding lmms_eval/tasks), or an installed lmms_eval package's parent")
    parser.add_argument("--benchmark", action="append", default=None, help="export only this benchmark (repeatable; default: every benchmark folder that has task YAMLs)")
    parser.add_argument("--force", action="store_true", help="overwrite files the exporter did not write (or that were edited since)")
    parser.add_argument("--dry-run", action="store_true", help="list what would change and write nothing")
    parser.add_argument("--no-tests", action="store_true", help="do not export tests to test/eval/")
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the stack of pull requests in order, each with its kind, needs, line counts (core/task/tests), non-test Python under lmms_eval/ against its cap, and files (docs/UPSTREAM.md shows it)",
    )
    parser.add_argument("--no-patches", action="store_true", help="leave out the core changes (the lmms-eval patch series)")
    parser.add_argument("--tree", action="store_true", help="write the task files into the working tree and the core patches to lmms_tasks_patches/ instead of the stack")
    args = parser.parse_args(argv)
    try:
        tree = default_tree(args.benchmark)
        root = checkout_root(args.path)
        style = detect_style(root)
        print(f"exporting {', '.join(tree.benchmarks)} into {root}\nstyle: {style.describe()}", flush=True)
        if args.tree:
            result, outcome = export(root, tree, force=args.force, dry_run=args.dry_run, include_tests=not args.no_tests, patches=not args.no_patches)
        else:
            built, outcome = export_stack(root, tree, force=args.force, dry_run=args.dry_run, include_tests=not args.no_tests, patches=not args.no_patches)
            result = built.export
    except ExportError as exc:
        print(f"export-upstream: error: {exc}", file=sys.stderr)
        return 2
    verb = "would write" if args.dry_run else "wrote"
    print(f"{verb} {len(outcome.written)} file(s), {len(outcome.unchanged)} unchanged, removed {len(outcome.removed)}" + (f"; current_tasks.md {'updated' if outcome.catalog_changed else 'unchanged'}" if args.tree else ""))
    if args.tree:
        if result.series.files:
            print(
                f"this lmms-eval lacks {len(result.series.missing)} feature(s) the tasks use: the patch series ({result.series.version}) is in "
                f"{series.OUTPUT_DIR}/. Apply it first, then commit the tasks (docs/UPSTREAM.md):\n"
                f"  cd {root} && git am {series.OUTPUT_DIR}/*.patch && rm -r {series.OUTPUT_DIR}"
            )
        if args.list:
            print(f"the exported files ({len(result.plan.files)} new, 1 modified):")
            print(listing.markdown(result.plan.files, writer.catalog.CATALOG_PATH, len(result.plan.catalog_lines)))
    else:
        kinds = {kind: sum(pr.kind == kind for pr in built.prs) for kind in ("core", "service", "benchmark")}
        print(
            f"the stack: {len(built.prs)} pull request(s), {kinds['core']} core ({built.version or 'none needed'}), {kinds['service']} shared "
            f"service(s), then {kinds['benchmark']} benchmark(s), in "
            f"{stack.STACK_DIR}/ (one patch and one description each). Make the stacked branches (docs/UPSTREAM.md):\n"
            f"  cd {root} && for p in {stack.STACK_DIR}/*.patch; do git checkout -q -b \"lmms-tasks/$(basename \"$p\" .patch)\" && git am -q \"$p\" || break; done"
        )
        if args.list:
            print(f"{stack.LIST_START}\n{stack.listing(built)}\n{stack.LIST_END}")
            over = [pr for pr in built.prs if pr.over_cap()]
            print(
                f"the whole stack adds {stack.sizes(built)['total']} non-test Python lines under lmms_eval/ (reported, not capped); each PR against its cap (--list above): {len(built.prs) - len(over)} within"
                + (f", over: {', '.join(pr.name for pr in over)}" if over else "")
            )
    if result.third_party:
        print("third-party imports in the exported code: " + ", ".join(sorted(result.third_party)))
        missing = exporter.undeclared_imports(result.third_party, root)
        if missing:
            print("not declared in the checkout's pyproject.toml (declare them or use lmms_eval.imports.optional_import): " + ", ".join(missing))
    for test in result.dropped_tests:
        print(f"not exported: {test}")
    for note in result.leftovers:
        print(f"note: {note}")
    return 0
