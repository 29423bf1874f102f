"""The report's figures (matplotlib, an optional dependency: `pip install lmms-tasks[report]`).

Figures are drawn on `matplotlib.figure.Figure` objects and saved through the Agg/SVG canvases directly:
no pyplot, no global backend switch, so using the report from a notebook or another program changes
nothing there. Output is deterministic: a fixed style, a fixed SVG hash salt, no date in the metadata.

Hangul: matplotlib's default font (DejaVu Sans) has none, so every Korean category name would be drawn
as empty boxes. Latin text stays in DejaVu Sans and each glyph it lacks falls back to NanumGothic, the
font the `koreanize-matplotlib` package ships (in the `[report]` extra; registered with matplotlib's font
list here, without importing that package, which would restyle every plot of the process), else to a
Korean system font. SVG text is written as glyph outlines (`svg.fonttype: path`): the report embeds
its SVGs as images, which cannot use the page's fonts, so text kept as text would depend on the
reader's installed fonts; outlines look the same everywhere (the text is kept in an SVG comment beside
each label). A glyph that no font has is reported once per plot as a `MissingGlyphWarning`.

Bars of scores carry error bars of ±1.96 standard errors where the results give one. Each drawing
function takes plain data (labels and numbers already read from the files) and draws it; none computes
a number that is printed anywhere.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import re
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
    "svg.fonttype": "path",
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
_CJK_FONTS = ("NanumGothic", "Noto Sans CJK KR", "Noto Sans KR", "Malgun Gothic", "AppleGothic", "Apple SD Gothic Neo", "UnDotum")
KOREAN_FONT_PACKAGE = "koreanize_matplotlib"
KOREAN_FONT_FILE = "NanumGothic.ttf"
Z95 = 1.96  # error bars: ±1.96 standard errors (a 95% normal interval)
_GLYPH_WARNING = re.compile(r"Glyph (\d+) .*missing from font")


class MissingGlyphWarning(UserWarning):
    """A plot has text that no configured font can draw (it shows as empty boxes)."""


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


def korean_font_file() -> Path | None:
    """NanumGothic as shipped by `koreanize-matplotlib`, found without importing that package."""
    spec = importlib.util.find_spec(KOREAN_FONT_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "fonts" / KOREAN_FONT_FILE
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def fallback_families() -> tuple[str, ...]:
    """Font families with Hangul, in fallback order after DejaVu Sans: the packaged NanumGothic
    (registered with matplotlib's font list on first use), then Korean system fonts. Warns once when
    there is none."""
    from matplotlib import font_manager

    families: list[str] = []
    packaged = korean_font_file()
    if packaged is not None:
        font_manager.fontManager.addfont(str(packaged))
        families.append(font_manager.FontProperties(fname=str(packaged)).get_name())
    available = {f.name for f in font_manager.fontManager.ttflist}
    families += [name for name in _CJK_FONTS if name in available and name not in families]
    if not families:
        warnings.warn(
            MissingGlyphWarning(
                f"no font with Hangul found (the {KOREAN_FONT_PACKAGE} package is not installed): Korean labels in the "
                f"report's plots will show as empty boxes. Install it with: {INSTALL_HINT}"
            ),
            stacklevel=2,
        )
    return tuple(families)


def font_families() -> list[str]:
    return ["DejaVu Sans", *fallback_families()]


@contextlib.contextmanager
def _style(name: str) -> Iterator[None]:
    """The report's style; matplotlib's per-glyph "missing from font" warnings are gathered into one
    `MissingGlyphWarning` naming the plot and the characters."""
    import matplotlib

    style = dict(_STYLE)
    style["font.family"] = font_families()
    missing: list[str] = []
    with matplotlib.rc_context(style), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            others = []
            for record in caught:
                found = _GLYPH_WARNING.search(str(record.message))
                if found:
                    char = chr(int(found.group(1)))
                    if char not in missing:
                        missing.append(char)
                else:
                    others.append(record)
    for record in others:
        warnings.warn_explicit(record.message, record.category, record.filename, record.lineno)
    if missing:
        warnings.warn(
            MissingGlyphWarning(
                f"plot {name}: no font has {''.join(missing)!r} ({', '.join(f'U+{ord(c):04X}' for c in missing)}); "
                f"drawn as empty boxes. Install a font with them: {INSTALL_HINT}"
            ),
            stacklevel=3,
        )


def render(plot: Plot, directory: Path, formats: Sequence[str]) -> dict[str, Path]:
    """Draw `plot` and write it once per format; returns format -> path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    directory.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    with _style(plot.name):
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


def error_bars(
    ax: Any, positions: Sequence[float], values: Sequence[float | None], half_widths: Sequence[float | None], horizontal: bool
) -> None:
    """Black ±half-width whiskers on the bars that have both a value and a half-width."""
    points = [(p, v, e) for p, v, e in zip(positions, values, half_widths) if v is not None and e is not None]
    if not points:
        return
    where, value, error = ([point[i] for point in points] for i in range(3))
    if horizontal:
        ax.errorbar(value, where, xerr=error, fmt="none", ecolor="#222222", elinewidth=0.8, capsize=2)
    else:
        ax.errorbar(where, value, yerr=error, fmt="none", ecolor="#222222", elinewidth=0.8, capsize=2)


def run_colour(index: int) -> str:
    return RUN_COLOURS[index % len(RUN_COLOURS)]


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value else None


# -- grouped bars and breakdowns ---------------------------------------------------------------------------


def grouped_bars(
    fig: Any,
    categories: Sequence[str],
    series: Sequence[tuple[str, str, bool, Sequence[Any]]],
    ylabel: str,
    references: Sequence[tuple[str, float]] = (),
    ylim: tuple[float, float] | None = (0, 105),
    errors: Sequence[Sequence[Any]] = (),
) -> None:
    """Vertical bars: one group per category, one bar per series (label, colour, hatched, values);
    `errors[i]`: the error-bar half-widths of series i, per category (None: no bar)."""
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    for index, (label, colour, hatched, values) in enumerate(series):
        xs = [c + (index - (len(series) - 1) / 2) * width for c in range(len(categories))]
        heights = [number(v) for v in values]
        ax.bar(
            [x for x, h in zip(xs, heights) if h is not None],
            [h for h in heights if h is not None],
            width=width * 0.92,
            color=colour if not hatched else "white",
            edgecolor=colour,
            hatch="///" if hatched else None,
            label=label,
        )
        series_errors = list(errors[index]) if index < len(errors) else []
        error_bars(ax, xs, heights, [number(e) for e in series_errors] + [None] * (len(xs) - len(series_errors)), horizontal=False)
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
            widths = [number(values.get(cat)) for cat in categories]
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


# -- cost and health ----------------------------------------------------------------------------------------


def grouped_counts(fig: Any, panels: Sequence[tuple[str, Sequence[str], Sequence[tuple[str, str, Sequence[Any]]]]]) -> None:
    """One panel per record kind: per row label, one thin horizontal bar per count (name, colour, values)."""
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (title, labels, parts) in zip(axes, panels):
        height = 0.8 / max(1, len(parts))
        for index, (name, colour, values) in enumerate(parts):
            ys = [len(labels) - 1 - r + ((len(parts) - 1) / 2 - index) * height for r in range(len(labels))]
            ax.barh(ys, [number(v) or 0.0 for v in values], height=height * 0.9, color=colour, label=name)
        ax.set_yticks(range(len(labels)), list(labels)[::-1])
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


__all__ = [
    "INSTALL_HINT",
    "MissingGlyphWarning",
    "Plot",
    "ReportDependencyError",
    "breakdown_panels",
    "error_bars",
    "font_families",
    "korean_font_file",
    "number",
    "grouped_bars",
    "render",
    "require_matplotlib",
    "run_colour",
    "grouped_counts",
]
