"""The report's figures (matplotlib, an optional dependency: `pip install lmms-tasks[report]`).

Figures are drawn on `matplotlib.figure.Figure` objects and saved through the Agg/SVG canvases directly:
no pyplot, no global backend switch, so using the report from a notebook or another program changes
nothing there. Output is deterministic: a fixed style, a fixed SVG hash salt, no date in the metadata,
and text kept as text in SVG (`svg.fonttype: none`), so Korean category names render with the viewer's
fonts instead of as missing glyphs. Each drawing function takes plain data (labels and numbers already
read from the files) and draws it; none computes a number that is printed anywhere.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTALL_HINT = "pip install 'lmms-tasks[report]'  (or: pip install matplotlib)"

RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
PUBLISHED_COLOUR = "#c7c7c7"
HUMAN_COLOUR = "#2a7f2a"
CHANCE_COLOUR = "#555555"

_STYLE: dict[str, Any] = {
    "svg.hashsalt": "lmms-tasks-report",
    "svg.fonttype": "none",
    "font.family": ["DejaVu Sans"],
    "font.size": 8.0,
    "axes.titlesize": 9.0,
    "axes.labelsize": 8.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.6,
    "legend.fontsize": 7.5,
    "legend.frameon": False,
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "path.simplify": False,
    "hatch.linewidth": 0.8,
}
_CJK_FONTS = ("Noto Sans CJK KR", "Noto Sans KR", "NanumGothic", "Malgun Gothic", "AppleGothic", "Apple SD Gothic Neo", "UnDotum")


class ReportDependencyError(RuntimeError):
    """matplotlib is not installed; the message says how to install it."""


def require_matplotlib() -> Any:
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401 - the import that needs a working install
    except ImportError as exc:
        raise ReportDependencyError(
            f"the results report draws its plots with matplotlib, which is not installed ({exc}). Install it with: {INSTALL_HINT}"
        ) from exc
    return matplotlib


@dataclass
class Plot:
    """One figure of the report: `draw(fig)` fills a Figure of `size` inches; saved as plots/<name>.<ext>."""

    name: str
    caption: str
    draw: Callable[[Any], None]
    size: tuple[float, float]


@contextlib.contextmanager
def _style() -> Iterator[None]:
    import matplotlib
    from matplotlib import font_manager

    style = dict(_STYLE)
    available = {f.name for f in font_manager.fontManager.ttflist}
    style["font.family"] = ["DejaVu Sans", *[name for name in _CJK_FONTS if name in available]]
    with matplotlib.rc_context(style), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
        warnings.filterwarnings("ignore", message=r".*missing from font\(s\)")
        yield


def render(plot: Plot, directory: Path, formats: Sequence[str]) -> dict[str, Path]:
    """Draw `plot` and write it once per format; returns format -> path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    directory.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    with _style():
        fig = Figure(figsize=plot.size, layout="constrained")
        FigureCanvasAgg(fig)
        plot.draw(fig)
        for fmt_name in formats:
            path = directory / f"{plot.name}.{fmt_name}"
            buffer = io.BytesIO()
            metadata = {"Date": None, "Creator": None} if fmt_name == "svg" else {"Software": None}
            fig.savefig(buffer, format=fmt_name, metadata=metadata)
            path.write_bytes(buffer.getvalue())
            written[fmt_name] = path
    return written


def run_colour(index: int) -> str:
    return RUN_COLOURS[index % len(RUN_COLOURS)]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value else None


# -- VLM2-Bench -------------------------------------------------------------------------------------------


def vlm2_subtasks(
    fig: Any,
    panels: Sequence[str],
    runs: Sequence[tuple[str, Mapping[str, Any]]],
    published: Sequence[tuple[str, Mapping[str, Any]]],
    human: Mapping[str, Any],
    chance: Mapping[str, Any],
) -> None:
    """One panel per subtask (+ the overall): a horizontal bar per run (colour) and per published model
    (grey); the human score as a green dashed line and chance as a grey dotted line."""
    columns = 5
    rows = (len(panels) + columns - 1) // columns
    axes = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    names = [name for name, _ in runs] + [name for name, _ in published]
    colours = [run_colour(i) for i in range(len(runs))] + [PUBLISHED_COLOUR] * len(published)
    positions = list(range(len(names)))[::-1]
    for index, panel in enumerate(panels):
        ax = axes[index // columns][index % columns]
        values = [_number(v.get(panel)) for _, v in runs] + [_number(v.get(panel)) for _, v in published]
        ax.barh(positions, [v if v is not None else 0.0 for v in values], color=colours, height=0.75)
        for y, v in zip(positions, values):
            if v is None:
                ax.text(1, y, "n/a", va="center", fontsize=6, color="#888888")
        if _number(human.get(panel)) is not None:
            ax.axvline(_number(human.get(panel)), color=HUMAN_COLOUR, linestyle="--", linewidth=1.0)
        if _number(chance.get(panel)) is not None:
            ax.axvline(_number(chance.get(panel)), color=CHANCE_COLOUR, linestyle=":", linewidth=1.0)
        ax.set_title(panel)
        ax.set_xlim(0, 105)
        ax.grid(axis="y", visible=False)
    for index in range(len(panels), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    for row_axes in axes:
        row_axes[0].set_yticks(positions, names)
    from matplotlib.lines import Line2D

    fig.legend(
        handles=[
            Line2D([0], [0], color=HUMAN_COLOUR, linestyle="--", label="Human (Table 1)"),
            Line2D([0], [0], color=CHANCE_COLOUR, linestyle=":", label="Chance (Table 1)"),
            Line2D([0], [0], color=PUBLISHED_COLOUR, linewidth=6, label="published model (Table 1)"),
        ],
        loc="outside lower center",
        ncols=3,
    )


# -- HumanEval-V ------------------------------------------------------------------------------------------


def grouped_bars(
    fig: Any,
    categories: Sequence[str],
    series: Sequence[tuple[str, str, bool, Sequence[Any]]],
    ylabel: str,
    references: Sequence[tuple[str, float]] = (),
    ylim: tuple[float, float] | None = (0, 105),
) -> None:
    """Vertical bars: one group per category, one bar per series (label, colour, hatched, values)."""
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    for index, (label, colour, hatched, values) in enumerate(series):
        xs = [c + (index - (len(series) - 1) / 2) * width for c in range(len(categories))]
        heights = [_number(v) for v in values]
        ax.bar(
            [x for x, h in zip(xs, heights) if h is not None],
            [h for h in heights if h is not None],
            width=width * 0.92,
            color=colour if not hatched else "white",
            edgecolor=colour,
            hatch="///" if hatched else None,
            label=label,
        )
        for x, h in zip(xs, heights):
            if h is None:
                ax.text(x, 1, "n/a", ha="center", va="bottom", rotation=90, fontsize=6, color="#888888")
    for (name, value), style in zip(references, (":", "-.", "--", (0, (1, 3)))):
        ax.axhline(value, color=CHANCE_COLOUR, linestyle=style, linewidth=1.0, label=name)
    ax.set_xticks(range(len(categories)), categories)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


def breakdown_panels(
    fig: Any,
    panels: Sequence[tuple[str, Sequence[str], Sequence[tuple[str, str, bool, Mapping[str, Any]]]]],
    xlabel: str,
) -> None:
    """One panel per setting: horizontal bars per category, one per series (label, colour, hatched, values)."""
    axes = fig.subplots(1, len(panels), sharex=True, squeeze=False)[0]
    for ax, (title, categories, series) in zip(axes, panels):
        height = 0.8 / max(1, len(series))
        for index, (label, colour, hatched, values) in enumerate(series):
            ys = [len(categories) - 1 - c - (index - (len(series) - 1) / 2) * height for c in range(len(categories))]
            widths = [_number(values.get(cat)) for cat in categories]
            ax.barh(
                [y for y, w in zip(ys, widths) if w is not None],
                [w for w in widths if w is not None],
                height=height * 0.92,
                color=colour if not hatched else "white",
                edgecolor=colour,
                hatch="///" if hatched else None,
                label=label,
            )
        ax.set_yticks(range(len(categories)), list(categories)[::-1])
        ax.set_title(title)
        ax.set_xlim(0, 105)
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", visible=False)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(4, max(1, len(labels))))


# -- HAERAE-Vision ----------------------------------------------------------------------------------------


def original_vs_explicit(
    fig: Any, categories: Sequence[str], runs: Sequence[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]]
) -> None:
    """Per category, per run: a hollow marker at the original-question score, a filled one at the
    explicit-question score and an arrow between them (the under-specification gap)."""
    ax = fig.subplots()
    step = 0.7 / max(1, len(runs))
    for index, (label, colour, original, explicit) in enumerate(runs):
        for c, category in enumerate(categories):
            y = len(categories) - 1 - c + ((len(runs) - 1) / 2 - index) * step
            o, e = _number(original.get(category)), _number(explicit.get(category))
            if o is not None and e is not None and o != e:
                ax.annotate("", xy=(e, y), xytext=(o, y), arrowprops={"arrowstyle": "->", "color": colour, "linewidth": 1.2})
            if o is not None:
                ax.plot([o], [y], marker="o", markerfacecolor="white", markeredgecolor=colour, linestyle="none")
            if e is not None:
                ax.plot([e], [y], marker="o", color=colour, linestyle="none")
        ax.plot([], [], marker="o", color=colour, linestyle="-", label=label)
    ax.plot([], [], marker="o", markerfacecolor="white", markeredgecolor="#444444", linestyle="none", label="original question")
    ax.plot([], [], marker="o", color="#444444", linestyle="none", label="explicit question")
    ax.set_yticks(range(len(categories)), list(categories)[::-1])
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("judge score (0-1)")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


# -- cost and health ----------------------------------------------------------------------------------------


def grouped_counts(fig: Any, panels: Sequence[tuple[str, Sequence[str], Sequence[tuple[str, str, Sequence[Any]]]]]) -> None:
    """One panel per record kind: per row label, one thin horizontal bar per count (name, colour, values)."""
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (title, labels, parts) in zip(axes, panels):
        height = 0.8 / max(1, len(parts))
        for index, (name, colour, values) in enumerate(parts):
            ys = [len(labels) - 1 - r + ((len(parts) - 1) / 2 - index) * height for r in range(len(labels))]
            ax.barh(ys, [_number(v) or 0.0 for v in values], height=height * 0.9, color=colour, label=name)
        ax.set_yticks(range(len(labels)), list(labels)[::-1])
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


__all__ = [
    "INSTALL_HINT",
    "Plot",
    "ReportDependencyError",
    "breakdown_panels",
    "grouped_bars",
    "original_vs_explicit",
    "render",
    "require_matplotlib",
    "run_colour",
    "grouped_counts",
    "vlm2_subtasks",
]
