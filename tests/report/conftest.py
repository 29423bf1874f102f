"""For the report tests: reference texts (the fidelity spec beside the checkout, ../shared, present in CI
and in development, and the package's own benchmark READMEs, parsed here independently of the code);
hand-written runs in the format of runs with standard errors (`new_format_run`, `stats_runs`); and one
headless browser per test session (`browser`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO.parent / "shared" / "reference" / "benchmarks_spec.md"


def md_table_after(text: str, heading: str) -> list[list[str]]:
    """The first Markdown pipe table after the line that starts with `heading`: header row + body rows."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    assert start is not None, f"heading {heading!r} not found"
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            break
    assert rows, f"no table after {heading!r}"
    return rows


def reference_texts() -> list[tuple[str, str, dict[str, str]]]:
    """(name, text, headings) per reference source; the spec only where it exists beside the checkout."""
    sources = []
    if SPEC.is_file():
        sources.append(
            (
                "benchmarks_spec.md",
                SPEC.read_text(encoding="utf-8"),
                {
                    "vlm2": "### 1.7 Published numbers",
                    "haerae": "### 3.6 Published numbers",
                    "humaneval": "### 2.8 Published numbers",
                    "humaneval_v1": "- **v1 (108 tasks",
                },
            )
        )
    sources.append(
        ("vlm2_bench/README.md", (REPO / "lmms_tasks/vlm2_bench/README.md").read_text(encoding="utf-8"), {"vlm2": "## Published numbers"})
    )
    sources.append(
        (
            "haerae_vision/README.md",
            (REPO / "lmms_tasks/haerae_vision/README.md").read_text(encoding="utf-8"),
            {"haerae": "## Published numbers"},
        )
    )
    sources.append(
        (
            "humaneval_v/README.md",
            (REPO / "lmms_tasks/humaneval_v/README.md").read_text(encoding="utf-8"),
            {"humaneval": "## Published numbers", "humaneval_v1": "v1 (108 tasks"},
        )
    )
    return sources


def number(text: str) -> float | None:
    """A published cell as a number: '−55.81' -> -55.81, '**35.91**' -> 35.91, '–' -> None, '33.72 (8 tasks)' -> 33.72."""
    cleaned = text.replace("**", "").replace("−", "-").strip()
    if cleaned in ("–", "-", ""):
        return None
    match = re.match(r"^(-?\d+(?:\.\d+)?)", cleaned)
    assert match, f"not a number: {text!r}"
    return float(match.group(1))


@pytest.fixture(scope="session")
def table1_references() -> list[tuple[str, dict[str, dict[str, str]]]]:
    """VLM2-Bench Table 1 from each reference: source -> {row name: {column header: cell text}}."""
    out = []
    for name, text, headings in reference_texts():
        if "vlm2" not in headings:
            continue
        header, *body = md_table_after(text, headings["vlm2"])
        out.append((name, {row[0].replace("**", ""): dict(zip(header[1:], row[1:])) for row in body}))
    return out


@pytest.fixture(scope="session")
def haerae_references() -> list[tuple[str, dict[str, float]]]:
    """HAERAE-Vision's notebook table from each reference: source -> {model: overall}."""
    out = []
    for name, text, headings in reference_texts():
        if "haerae" not in headings:
            continue
        header, *body = md_table_after(text, headings["haerae"])
        out.append((name, {row[0]: number(row[1].split("(")[0]) for row in body}))
    return out


@pytest.fixture(scope="session")
def humaneval_references() -> list[tuple[str, str]]:
    """The prose of HumanEval-V's "published numbers" part of each reference: source -> text."""
    out = []
    for name, text, headings in reference_texts():
        if "humaneval" in headings:
            start = text.index(headings["humaneval"])
            out.append((name, text[start : start + 1500]))
    return out


# -- hand-written runs with standard errors, unit scores and summaries --------------------------------------

CATEGORIES = {"게임": (0.25, 0.5), "음식 문화": (0.75, 1.0)}  # HAERAE category -> (original, explicit)


def write_run(
    root: Path,
    model: str,
    results: dict[str, Any],
    groups: dict[str, Any] | None = None,
    samples: dict[str, list[dict[str, Any]]] | None = None,
    configs: dict[str, Any] | None = None,
    judgements: dict[str, dict[str, Any]] | None = None,
    executions: dict[str, dict[str, Any]] | None = None,
    stamp: str = "20260301_120000",
) -> Path:
    """`<root>/<model>/<stamp>_results.json`, its `<stamp>_samples_<task>.jsonl` and the summaries, as a run writes them."""
    data = {
        "results": results,
        "groups": groups or {},
        "configs": configs or {},
        "config": {"model": "openai", "model_args": f"model_version={model}"},
        "date": stamp,
        "model_name": model,
        "model_name_sanitized": model,  # lmms-eval writes into <output_path>/<model_name_sanitized>/
    }
    directory = root / model
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{stamp}_results.json").write_text(json.dumps(data), encoding="utf-8")
    for task, lines in (samples or {}).items():
        (directory / f"{stamp}_samples_{task}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for kind, found in (("judgements", judgements or {}), ("executions", executions or {})):
        for task, summary in found.items():
            (root / kind).mkdir(exist_ok=True)
            (root / kind / f"{task}.summary.json").write_text(json.dumps({"task": task, **summary}), encoding="utf-8")
    return root


def gc_samples(pair_scores: list[int], q_prefix: str = "q") -> list[dict[str, Any]]:
    """Two documents per pair; the pair's first question carries the pair's unit score."""
    lines = []
    for pair, score in enumerate(pair_scores):
        for second in (0, 1):
            item = {"subtask": "gc_mat", "kind": "tf_gc", "doc_index": 2 * pair + second, "q_id": f"{q_prefix}{2 * pair + second}", "response": "T"}
            if not second:
                item["score"] = score
            lines.append({"doc_id": 2 * pair + second, "vlm2_score": item, "tf_pair_acc": dict(item)})
    return lines


def _new_format_run(root: Path, model: str, gc: list[int], hev: list[int], haerae: list[float], stderr_value: Any = None) -> Path:
    """A run with standard errors, unit scores in the samples, HAERAE-Vision's category means in the results and
    HumanEval-V's breakdowns in the execution summaries."""
    se = (lambda v: v) if stderr_value is None else (lambda v: stderr_value)
    gc_score = 100.0 * sum(gc) / len(gc)
    results = {
        "vlm2_bench_gc_mat": {"vlm2_score,none": gc_score, "vlm2_score_stderr_clt,none": se(12.5), "vlm2_score_stderr,none": 0.125},  # _stderr is not read
        "vlm2_bench_oc_cnt": {"vlm2_score,none": 40.0, "vlm2_score_stderr_clt,none": "N/A"},
        "humaneval_v_v2c": {
            "pass@1,none": 100.0 * sum(hev) / len(hev),
            "pass@1_stderr_clt,none": se(25.0),
            "pass@1_unrounded,none": 100.0 * sum(hev) / len(hev),
            "pass@1_unrounded_stderr_clt,none": se(25.0),
        },
        "haerae_vision_original": {
            "haerae_vision_score,none": sum(haerae) / len(haerae),
            "haerae_vision_score_stderr_clt,none": se(0.1),
            "judge_failures,none": 0,
            "judge_unparsed,none": 1,
            "category_scores,none": {c: o for c, (o, _) in CATEGORIES.items()},
            "category_scores_stderr_clt,none": "N/A",
        },
        "haerae_vision_explicit": {
            "haerae_vision_score,none": 0.75,
            "haerae_vision_score_stderr_clt,none": se(0.05),
            "judge_failures,none": 1,
            "category_scores,none": {c: e for c, (_, e) in CATEGORIES.items()},
        },
    }
    groups = {
        "vlm2_bench": {
            "vlm2_score,none": 57.5,
            "vlm2_score_stderr_clt,none": se(3.0),
            "vlm2_img8_score,none": 57.5,
            "vlm2_img8_score_stderr_clt,none": se(3.5),
            "vlm2_gap_to_human,none": 57.5 - 95.16,
            "vlm2_gap_to_human_stderr_clt,none": se(3.0),
            "vlm2_exact_score,none": 50.0,
            "vlm2_exact_score_stderr_clt,none": "N/A",
        },
        "vlm2_bench_gc": {"vlm2_score,none": gc_score, "vlm2_score_stderr_clt,none": se(12.5)},
        "haerae_vision": {
            "score_original,none": sum(haerae) / len(haerae),
            "score_original_stderr_clt,none": se(0.1),
            "score_explicit,none": 0.75,
            "score_explicit_stderr_clt,none": se(0.05),
            "underspec_gap,none": 0.75 - sum(haerae) / len(haerae),
            "underspec_gap_stderr_clt,none": se(0.08),
            "judge_failures,none": 1,
            "judge_unparsed,none": 1,
        },
    }
    results.update({name: dict(values) for name, values in groups.items()})
    samples = {
        "vlm2_bench_gc_mat": gc_samples(gc),
        "humaneval_v_v2c": [{"doc_id": i, "pass@1": {"qid": f"t{i}", "score": s}} for i, s in enumerate(hev)],
        "haerae_vision_original": [
            {"doc_id": i, "haerae_vision_score": {"question_idx": str(i), "variant": "original", "score": s}} for i, s in enumerate(haerae)
        ],
    }
    configs = {"vlm2_bench_gc_mat": {"score_key": "vlm2_score"}, "humaneval_v_v2c": {"score_key": "pass@1"}}  # HAERAE: default key
    judge = {"judge_model": "j", "requests": 5, "failed": 0, "unparsed": 1, "cache_hits": 0, "input_tokens": 50, "output_tokens": 5}
    judgements = {
        "haerae_vision_original": dict(judge, judge_info="judge=j n=5"),
        "haerae_vision_explicit": dict(judge),
    }
    executions = {"humaneval_v_v2c": {"programs": 4, "passed": 2, "by_task_type": {"Aggregation": 100.0, "Iteration": 0.0}}}
    return write_run(root, model, results, groups, samples, configs, judgements, executions)


@pytest.fixture(scope="session")
def new_format_run() -> Any:
    """`new_format_run(root, model, gc=[pair scores], hev=[task scores], haerae=[item scores], stderr_value=None)`."""
    return _new_format_run


@pytest.fixture(scope="session")
def stats_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two runs of the same documents (model-a, model-b), worked out by hand in test_report_stats.py."""
    root = tmp_path_factory.mktemp("stats_runs")
    a = _new_format_run(root / "a", "model-a", gc=[1, 0, 1, 1], hev=[1, 1, 0, 0], haerae=[0.2, 0.4, 0.6, 0.8, 1.0])
    b = _new_format_run(root / "b", "model-b", gc=[1, 1, 1, 0], hev=[1, 1, 1, 0], haerae=[0.5, 0.7, 0.9, 0.9, 1.0])
    return [a, b]


@pytest.fixture(scope="session")
def stats_report(stats_runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    """The report of `stats_runs` (plots as SVG and PNG; a missing glyph fails it): (WrittenReport, report.md)."""
    import warnings

    from lmms_tasks.utils.commands.report import plots, write_report

    with warnings.catch_warnings():
        warnings.simplefilter("error", plots.MissingGlyphWarning)
        written = write_report(stats_runs, tmp_path_factory.mktemp("stats_report"), formats=("svg", "png"))
    return written, written.markdown.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def demo_report(demo_two_models: tuple[Path, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The report of the two-model demo's results folder (WrittenReport), written once for the test run (into the demo's
    folder, beside its runs: under pytest-xdist by the first worker that asks, see utils/testing/built_once.py)."""
    from lmms_tasks.utils.commands.report import write_report
    from lmms_tasks.utils.testing.built_once import built_once

    work, outcome = demo_two_models
    return built_once(tmp_path_factory, "demo_report", lambda _: write_report([outcome.results_dir], work / "report"))


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless chromium for the whole test session. Where none is installed the browser test is skipped
    with the reason, unless LMMS_TASKS_REQUIRE_BROWSER=1 (scripts/test.sh sets it where it can install one, as
    in CI): then it fails."""
    from lmms_tasks.utils.testing.browser import INSTALL_HINT, Browser, browser_required, find_chromium

    if find_chromium() is None:
        reason = f"no chromium on this machine, so report.html is not checked in a browser: {INSTALL_HINT}"
        if browser_required():
            pytest.fail(reason + " (LMMS_TASKS_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    with Browser.start() as started:
        yield started
@pytest.fixture(scope="session")
def humaneval_v1_references() -> list[tuple[str, dict[str, dict[str, str]]]]:
    """HumanEval-V v1's published table from each reference: source -> {model: {"pass@1": cell, "pass@10": cell}}."""
    out = []
    for name, text, headings in reference_texts():
        if "humaneval_v1" in headings:
            header, *body = md_table_after(text, headings["humaneval_v1"])
            assert header == ["Model", "pass@1", "pass@10"], (name, header)
            out.append((name, {row[0]: dict(zip(header[1:], row[1:])) for row in body}))
    return out
