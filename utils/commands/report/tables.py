"""The report's tables: one model, rendered to Markdown and to HTML, and the one number formatter.

Every number in the report is a value read from a file, formatted by `fmt` with a fixed number of decimals
per kind of number; nothing is summed or averaged here. A value that is missing, None or not a number is
shown as `N/A`; `–` marks a cell the source has no column for (a published row without that number).
Each table is preceded in Markdown by `<!-- table: <anchor> -->`, a stable marker for readers and tests.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

NA = "N/A"
NONE = "–"

# decimals per kind of number
SCORE = 2  # 0-100 scores (subtask scores, breakdowns, unrounded pass@k)
OFFICIAL = 1  # as an official scorer rounds them: pass@k / parse_success_rate / description_rate
UNIT = 4  # 0-1 scores (judged means)
SECONDS = 3
COUNT = 0


def fmt(value: Any, decimals: int) -> str:
    """`value` with `decimals` decimals (integers as integers when decimals == 0); N/A if not a number."""
    if isinstance(value, bool) or value is None:
        return NA
    if isinstance(value, str):  # lmms-eval writes some numbers as strings (total_evaluation_time_seconds)
        try:
            value = float(value)
        except ValueError:
            return NA
    if not isinstance(value, (int, float)) or value != value:
        return NA
    if decimals == 0:
        return str(int(round(value)))
    text = f"{value:.{decimals}f}"
    return "0." + "0" * decimals if text == "-0." + "0" * decimals else text


@dataclass
class Table:
    anchor: str
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""
    collapsed: bool = False  # long detail tables: folded in the HTML report

    def add(self, *cells: Any) -> None:
        if len(cells) != len(self.header):
            raise ValueError(f"table {self.anchor}: {len(cells)} cells for {len(self.header)} columns")
        self.rows.append([str(c) for c in cells])


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table_markdown(table: Table) -> str:
    lines = [f"<!-- table: {table.anchor} -->", f"**{table.title}**", ""]
    lines.append("| " + " | ".join(_md_cell(h) for h in table.header) + " |")
    lines.append("|" + "|".join("---" for _ in table.header) + "|")
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"


def inline_html(text: str) -> str:
    """Escape, then turn Markdown `code` spans into <code>."""
    parts = text.split("`")
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


def table_html(table: Table) -> str:
    head = "".join(f"<th>{inline_html(h)}</th>" for h in table.header)
    body = "".join("<tr>" + "".join(f"<td>{inline_html(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    # a table wider than the page scrolls inside its own box instead of widening the page
    inner = f'<div class="table"><table id="{html.escape(table.anchor)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    note = f'<p class="note">{inline_html(table.note)}</p>' if table.note else ""
    title = inline_html(table.title)
    if table.collapsed:
        return f"<details><summary>{title}</summary>{inner}{note}</details>\n"
    return f'<p class="caption">{title}</p>{inner}{note}\n'


__all__ = ["COUNT", "NA", "NONE", "OFFICIAL", "SCORE", "SECONDS", "Table", "UNIT", "fmt", "inline_html", "table_html", "table_markdown"]
