"""The two commands: `score --from-official BENCH PATH...` and `export-official RUN_DIR... --out DIR`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lmms_tasks.utils.commands import score as scoring
from lmms_tasks.utils.commands.official import data_sources, haerae_vision, humaneval_v, vlm2_bench
from lmms_tasks.utils.commands.official.common import Imported, OfficialFormatError, RunTask, Written, one_line, staged
from lmms_tasks.utils.services.data import DataError
from lmms_tasks.utils.services.llm_judge import judge

BENCHES = {
    "vlm2_bench": ("vlm2_bench", "vlm2", "vlm2-bench"),
    "humaneval_v": ("humaneval_v", "humaneval-v", "hev"),
    "haerae_vision": ("haerae_vision", "haerae", "haerae-vision"),
}
_ALIASES = {alias: bench for bench, aliases in BENCHES.items() for alias in aliases}

SCORE_EPILOG = (
    "Each file is scored on its own (as the official scorers score each file of a folder), through the task's "
    "own process_results and aggregations: the printed table, the `<file stem>.<task>.rescored.json` written "
    "and the exit status are those of `score` on an lmms-eval samples file (0 every metric computed; 3 some "
    "judgements or executions failed; 1 a metric could not be computed; 2 refused: a file in the wrong format "
    "or not matching the task's data, named in one line, nothing written for it; worst wins: 2 > 1 > 3 > 0). "
    "Data come from the benchmark's environment variable (VLM2_BENCH_DATA, HUMANEVAL_V_DATA, "
    "HAERAE_VISION_DATA) or the pinned Hugging Face revision, as for the tasks. HumanEval-V needs "
    "HUMANEVAL_V_ALLOW_CODE_EXECUTION=1. VLM2-Bench's PC-VID files and HAERAE-Vision's main.py CSVs are "
    "judged by the judge client of the tasks (LMMS_TASKS_JUDGE_* or --judge-*); score.py CSVs are already "
    "judged and send no request."
)


def _bench(value: str) -> str:
    found = _ALIASES.get(value.strip().lower())
    if found is None:
        raise argparse.ArgumentTypeError(f"unknown benchmark {value!r}; expected one of {', '.join(BENCHES)}")
    return found


def score_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks score --from-official",
        description="Score prediction files in a benchmark's official format (its own inference scripts' output) with our scorers.",
        epilog=SCORE_EPILOG,
    )
    parser.add_argument("bench", type=_bench, help="vlm2_bench | humaneval_v | haerae_vision")
    parser.add_argument("paths", type=Path, nargs="+", help="official prediction files, or folders of them")
    parser.add_argument("--output-dir", type=Path, default=None, help="where the re-scored JSON and the judgement/execution records go (default: beside each file)")
    parser.add_argument("--task", default=None, help="our task the files belong to, when the official folder or file name does not tell (e.g. vlm2_bench_oc_cpr)")
    parser.add_argument("--setting", default=None, help="HumanEval-V: V2C | V2C-CoT | GT-T2C | V2T2C | V2T2C-4o | V2T | v1 (default: from the file's prompts; the official file name decides what they leave open)")
    parser.add_argument("--allow-partial", action="store_true", help="HumanEval-V v2: score a file that lacks some tasks (the official evaluator refuses it)")
    scoring.add_judge_options(parser)
    args = parser.parse_args(argv)
    module: Any = {"vlm2_bench": vlm2_bench, "humaneval_v": humaneval_v, "haerae_vision": haerae_vision}[args.bench]
    try:
        files = module.collect(args.paths)
    except OfficialFormatError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return scoring.EXIT_UNUSABLE
    judge_options = {key: getattr(args, key) for key in scoring.JUDGE_OPTIONS}
    status = scoring.EXIT_OK
    written: set[Path] = set()
    for path in files:
        status = scoring.worst(status, _score_one(args.bench, module, path, args, judge_options, written))
    return status


def _read(bench: str, module: Any, path: Path, args: argparse.Namespace) -> Imported:
    if bench == "vlm2_bench":
        return module.read(path, args.task)
    if bench == "humaneval_v":
        if args.task:
            raise OfficialFormatError("--task does not apply to HumanEval-V: pass --setting")
        return module.read(path, args.setting, allow_partial=args.allow_partial)
    return module.read(path, args.task)


def _score_one(bench: str, module: Any, path: Path, args: argparse.Namespace, judge_options: dict[str, Any], written: set[Path]) -> int:
    try:
        if bench == "humaneval_v":
            from lmms_tasks.utils.humaneval_v.execution import execution_allowed, opt_in_refusal

            setting = humaneval_v.detect_file(path, args.setting)
            if setting != "V2T" and not execution_allowed():  # descriptions only: nothing to execute
                raise OfficialFormatError(opt_in_refusal(str(path)))
        imported = _read(bench, module, path, args)
        output_dir = args.output_dir or path.parent
        out_path = scoring.unused_report_path(output_dir, f"{path.stem}.{imported.task}", written)  # nothing replaced
        written.add(out_path)
        report = scoring.aggregate(
            imported.task,
            imported.samples,
            source=str(path),
            output_dir=out_path.with_name(out_path.name[: -len(".rescored.json")]),
            n_expected=imported.n_expected,
            n_expected_from=imported.n_expected_from,
            handed=scoring.judge_handed({}, judge_options, replies=imported.replay),  # recorded replies: nothing is sent
        )
    except (OfficialFormatError, DataError, scoring.RescoreError, judge.JudgeConfigError, judge.JudgeUnavailable) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return scoring.EXIT_UNUSABLE
    report.update(
        official_file=str(path),
        official_format=imported.official_format,
        official_setting=imported.setting,
        warnings=list(imported.warnings),
        notes=list(imported.notes),
    )
    print(f"{path}: {imported.official_format} -> {imported.task}")
    for note in imported.notes:
        print(f"note: {note}")
    return scoring.emit(report, out_path, path)


# -- export-official --------------------------------------------------------------------------------------

EXPORT_EPILOG = (
    "Writes <out>/vlm2_bench/ (the official result tree: run each official scorer from that folder, e.g. "
    "`cd <out>/vlm2_bench && python <VLM2-Bench>/code/oc/eval/eval_cpr/eval_comp_tf_pair_batch_3acc.py "
    "--input_folder code/oc/test/test_res/test_cpr`), <out>/humaneval_v/ (one prediction file per setting: "
    "`python evaluate.py --model_name M --exp_type V2C --sample_num 1 --exp_base_dir <out>/humaneval_v` from "
    "the HumanEval-V repository), <out>/humaneval_v1/ (v1 runs: `python evaluate.py --prediction_file "
    "<out>/humaneval_v1/<model>_sample_<n>.json` from the v1 repository) and <out>/haerae_vision/{outputs,scores}/ (main.py and score.py CSVs). "
    "The data are those each run recorded in its results.json (configs.<task>.metadata.data_source): the recorded "
    "local copy or Hub revision where the benchmark's environment variables (VLM2_BENCH_DATA, HUMANEVAL_V_DATA, "
    "HUMANEVAL_V1_DATA, HAERAE_VISION_DATA and their *_REVISION) are unset; set, they must name the same data "
    "(same file contents, or the same revision), else the export is refused. Exit status 0, "
    "or 2 with one line naming the file and record at fault and nothing written."
)


def export_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_tasks export-official",
        description="Write a finished run's samples in each benchmark's official format, so the official scorers run on them unchanged.",
        epilog=EXPORT_EPILOG,
    )
    parser.add_argument("run_dirs", type=Path, nargs="+", help="lmms-eval --output_path directories (or results files) of finished runs with --log_samples")
    parser.add_argument("--out", type=Path, required=True, help="a new (or empty) directory to write")
    args = parser.parse_args(argv)
    try:
        written, notes = export(args.run_dirs, args.out)
    except (OfficialFormatError, DataError) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return scoring.EXIT_UNUSABLE
    for bench, files in written.items():
        for item in files:
            print(f"{bench}/{item.path}" + (f"    # {item.command}" if item.command else ""))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {args.out}")
    return scoring.EXIT_OK


def run_tasks(run_dirs: list[Path]) -> list[RunTask]:
    """Every task of every run (lmms-eval invocation: results file) under `run_dirs` with its samples file;
    each is exported with its own run's records (a later run of the same model into the same folder
    neither hides nor replaces an earlier one)."""
    from lmms_tasks.utils.commands.report.runs import ReportInputError, Run, load_runs, single_file_run

    try:
        runs: list[Run] = load_runs(run_dirs)
    except ReportInputError as exc:
        raise OfficialFormatError(str(exc)) from exc
    found = []
    for run in runs:
        for results_file in sorted(run.files, key=lambda f: (f.date, str(f.path))):
            one = single_file_run(run, results_file)
            for task in sorted(results_file.data.get("results") or {}):
                samples_path = results_file.path.parent / f"{results_file.stamp}_samples_{task}.jsonl"
                if samples_path.is_file():
                    found.append(RunTask(task, samples_path, results_file, one))
    if not found:
        raise OfficialFormatError(f"{', '.join(map(str, run_dirs))}: no samples files (run lmms-eval with --log_samples)")
    return found


def export(run_dirs: list[Path], out: Path) -> tuple[dict[str, list[Written]], list[str]]:
    """Write every official format the runs' tasks have into `out` (staged: complete or absent)."""
    tasks = run_tasks(run_dirs)
    written: dict[str, list[Written]] = {}
    notes: list[str] = []
    data = data_sources.run_data(tasks)  # the data each run recorded, handed to each export's loaders
    with staged(out) as stage:
        written["vlm2_bench"] = vlm2_bench.export(tasks, stage / "vlm2_bench", data["vlm2_bench"])
        written["humaneval_v"] = humaneval_v.export(tasks, stage / "humaneval_v", data["humaneval_v"])
        written["humaneval_v1"] = humaneval_v.export_v1(tasks, stage / "humaneval_v1")
        written["haerae_vision"], haerae_notes = haerae_vision.export(tasks, stage / "haerae_vision", data["haerae_vision"])
        notes += haerae_notes
        if not any(written.values()):
            raise OfficialFormatError(f"{', '.join(map(str, run_dirs))}: no task of VLM2-Bench, HumanEval-V or HAERAE-Vision with a samples file")
    return {bench: files for bench, files in written.items() if files}, notes
