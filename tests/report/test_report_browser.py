"""report.html is a web page: open it in a real headless browser (Debian's chromium, one for the test
session, see conftest.browser), take a screenshot, and check that every plot loaded and that nothing is
wider than the window, with every folded table unfolded: at a laptop's width (1280 px) every table fits;
at 1024 px a table may scroll sideways inside its own box, but the page does not.

Where no chromium is installed (scripts/setup_browser.sh installs it with apt-get, as root, as the test
setup scripts/test.sh does), these tests are skipped with that reason."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

WIDTHS = (1280, 1024)

# what the page shows: every image; every element reaching past the window's edges (outside a table's own
# scroll box, .table, where a table wider than the page may scroll); and the tables that need that scroll box
LAYOUT = """(() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const width = document.documentElement.clientWidth;
  const images = Array.from(document.images).map(i => ({
    alt: i.alt.slice(0, 50), complete: i.complete, naturalWidth: i.naturalWidth, shown: Math.round(i.getBoundingClientRect().width)}));
  const wide = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    const inBox = el.parentElement && el.parentElement.closest('.table');
    if (!inBox && r.width > 0 && (r.right > width + 0.5 || r.left < -0.5)) {
      wide.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''} [${Math.round(r.left)}, ${Math.round(r.right)}]`);
    }
  }
  const scrolling = Array.from(document.querySelectorAll('.table')).filter(b => b.scrollWidth > b.clientWidth + 0.5)
    .map(b => `${b.querySelector('table').id} (${b.scrollWidth} > ${b.clientWidth})`);
  return {width, scrollWidth: document.documentElement.scrollWidth, images, wide: wide.slice(0, 15), scrolling,
          tables: document.querySelectorAll('table').length};
})()"""


def check_in_browser(browser: Any, written: Any, screenshot: Path) -> dict[int, dict[str, Any]]:
    """Open report.html at each width: every plot decoded and shown, nothing reaching past the window
    (at the first width not even a table in its scroll box); a screenshot at the first width."""
    layouts = {}
    for width in WIDTHS:
        page = browser.open(written.html, width=width, height=900)
        try:
            layout = page.evaluate(LAYOUT)
            if width == WIDTHS[0]:
                page.screenshot(screenshot)
        finally:
            page.close()
        assert len(layout["images"]) == len(written.plots), layout["images"]
        for image in layout["images"]:
            assert image["complete"] and image["naturalWidth"] > 0, f"plot did not load: {image}"
            assert image["shown"] > 100, f"plot drawn too small: {image}"
        assert layout["scrollWidth"] <= layout["width"], f"the page scrolls sideways at {width}px: {layout['wide']}"
        assert not layout["wide"], f"elements wider than the {width}px window: {layout['wide']}"
        if width == WIDTHS[0]:
            assert not layout["scrolling"], f"tables wider than the page at {width}px: {layout['scrolling']}"
        layouts[width] = layout
    return layouts


def check_screenshot(path: Path) -> None:
    from PIL import Image

    with Image.open(io.BytesIO(path.read_bytes())) as image:
        assert image.format == "PNG" and image.width == WIDTHS[0] and image.height > 2000, (image.format, image.size)
        colours = image.convert("RGB").resize((256, 1024)).getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 50, "the screenshot is (nearly) blank"


def test_demo_report_in_a_browser(browser: Any, demo_report: Any, tmp_path: Path) -> None:
    layouts = check_in_browser(browser, demo_report, tmp_path / "screenshot.png")
    assert layouts[WIDTHS[0]]["tables"] >= 15
    check_screenshot(tmp_path / "screenshot.png")


HANGUL_FONTS = (
    "NanumGothic",
    "Noto Sans CJK",
    "Noto Sans KR",
    "Noto Serif CJK",
    "UnDotum",
    "Baekmuk",
    "Malgun Gothic",
    "Apple SD Gothic Neo",
)


def test_report_with_intervals_and_paired_differences_in_a_browser(browser: Any, stats_report: tuple[Any, str], tmp_path: Path) -> None:
    """The statistics columns and the paired table fit too, and the Korean category names in the HTML
    tables are drawn with a font that has Hangul (fonts-nanum), not as boxes in the Latin font."""
    written, markdown = stats_report
    assert "<!-- table: paired-2 -->" in markdown
    check_in_browser(browser, written, tmp_path / "screenshot.png")
    page = browser.open(written.html)
    try:
        cells = page.platform_fonts("#haerae-category tbody td:first-child")
    finally:
        page.close()
    assert len(cells) == 2, cells
    for text, fonts in cells:
        hangul = sum(1 for c in text if "\uac00" <= c <= "\ud7a3")
        drawn = sum(f["glyphCount"] for f in fonts if f["familyName"].startswith(HANGUL_FONTS))
        assert hangul and drawn >= hangul, f"{text!r} drawn with {fonts}: no font with Hangul (fonts-nanum: scripts/setup_browser.sh)"
