"""A bash pane title ``for i in 1 2 3`` looked like ``fori  in`` in the snapshot pictures: the app and
its SVG are right, librsvg drew runs that start with U+00A0 one cell to the left. The pictures are
made with ``snapshots/svg2png.py``, which renders them with ``xml:space="preserve"``."""

from __future__ import annotations

import html
import re
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from snapshots.svg2png import preserve_spaces, render
from turnstone_tui.widgets.bash_pane import BashPane

pytestmark = pytest.mark.timeout(60)

COMMAND = "for i in 1 2 3; do echo $i; done"


class PaneHarness(App[None]):
    def compose(self) -> ComposeResult:
        yield BashPane("call_1", COMMAND)


def svg_rows(svg: str) -> list[str]:
    """The text of each row of a Textual SVG, placed by each run's x (12.2 px a cell)."""
    rows: dict[float, dict[int, str]] = {}
    for match in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        x, y = float(match.group(1)), float(match.group(2))
        text = html.unescape(match.group(3)).replace("\xa0", " ")
        cells = rows.setdefault(y, {})
        for offset, char in enumerate(text):
            cells[round(x / 12.2) + offset] = char
    return ["".join(cells.get(i, " ") for i in range(max(cells) + 1)) for _, cells in sorted(rows.items())]


async def test_the_pane_title_is_right_in_the_app_and_in_its_svg() -> None:
    app = PaneHarness()
    async with app.run_test(size=(60, 6)) as pilot:
        await pilot.pause()
        svg = app.export_screenshot()
    assert any(COMMAND in row for row in svg_rows(svg)), svg_rows(svg)
    assert "fori" not in "".join(svg_rows(svg))


def test_preserve_spaces_marks_the_root_once() -> None:
    svg = '<svg class="rich-terminal" viewBox="0 0 10 10"><text>&#160;i</text></svg>'
    marked = preserve_spaces(svg)
    assert marked.startswith('<svg xml:space="preserve" class="rich-terminal"')
    assert preserve_spaces(marked) == marked


# Three runs as Textual writes them: "for", " i " (U+00A0 around the i) and "in", 12.2 px a cell.
RUNS_SVG = """<svg viewBox="0 0 200 30" xmlns="http://www.w3.org/2000/svg"><rect width="200" height="30" fill="#fff"/>
<g font-family="monospace" font-size="20px" fill="#000">
<text x="0" y="20" textLength="36.6">for</text><text x="36.6" y="20" textLength="36.6">&#160;i&#160;</text>
</g></svg>"""


def ink_columns(png: bytes) -> list[int]:
    """The x of every column with a dark pixel in an 8-bit RGB/RGBA, non-interlaced PNG."""
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert depth == 8 and colour in (2, 6)
    channels = 3 if colour == 2 else 4
    data, pos = b"", 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        if png[pos + 4 : pos + 8] == b"IDAT":
            data += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(data)
    stride = width * channels
    previous = bytearray(stride)
    dark: set[int] = set()
    for row in range(height):
        kind = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1 : (row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        for x in range(width):
            if line[x * channels] < 128:
                dark.add(x)
        previous = line
    return sorted(dark)


@pytest.mark.skipif(
    shutil.which("rsvg-convert") is None, reason="rsvg-convert (librsvg2-bin) is not installed"
)
def test_a_run_that_starts_with_a_space_is_drawn_where_the_svg_places_it(tmp_path: Path) -> None:
    svg, png = tmp_path / "runs.svg", tmp_path / "runs.png"
    svg.write_text(RUNS_SVG)
    render(svg, png, width=200)
    i_ink = [x for x in ink_columns(png.read_bytes()) if x >= 37]  # right of "for"
    assert i_ink, "the i was not drawn"
    assert i_ink[0] >= 48, f"the i starts at x={i_ink[0]}: drawn in the space's cell (36.6-48.8)"
