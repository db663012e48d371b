"""Render a snapshot SVG to PNG, to look at it: ``python snapshots/svg2png.py in.svg out.png [width]``.

Textual's SVG export writes each styled run as its own ``<text>`` element, with spaces as U+00A0 and no
``xml:space``. librsvg (``rsvg-convert``, 2.54 in Debian 12) treats a run's leading U+00A0 as collapsible
white space: the run is drawn one cell to the left with its space moved to the end. A bash pane title
``for i in 1 2 3`` (runs ``for``, `` i ``, ``in`` ...) then looks like ``fori  in``, and the welcome line
like ``turnstone·  scripted-model``. The app and the SVG are right (a real terminal shows ``for i in``);
this renders with ``xml:space="preserve"`` on the root element, which librsvg honours.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

_ROOT_TAG = re.compile(r"<svg\b(?![^>]*\bxml:space=)")


def preserve_spaces(svg: str) -> str:
    """The SVG with ``xml:space="preserve"`` on its root element (unchanged if it has one)."""
    return _ROOT_TAG.sub('<svg xml:space="preserve"', svg, count=1)


def render(svg: Path, png: Path, width: int = 1000) -> None:
    """Write ``svg`` as a PNG ``width`` pixels wide (needs ``rsvg-convert``: apt-get install librsvg2-bin)."""
    text = preserve_spaces(svg.read_text(encoding="utf-8"))
    subprocess.run(["rsvg-convert", "-w", str(width), "-o", str(png)], input=text.encode(), check=True)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    render(Path(argv[0]), Path(argv[1]), int(argv[2]) if len(argv) == 3 else 1000)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
