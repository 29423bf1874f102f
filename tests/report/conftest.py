"""Reference texts for the report tests: the fidelity spec beside the checkout (../shared, present in CI
and in development) and the package's own benchmark READMEs, parsed here independently of the code."""

from __future__ import annotations

import re
from pathlib import Path

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
