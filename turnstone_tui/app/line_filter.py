"""The app's last line filter: no control or invisible format character reaches the terminal.

Textual writes a segment's text to the terminal as it is, and any text the app draws may come
from the model, a tool's output, a file name or an MCP server: an escape sequence in it moved the
cursor, erased what the user was about to approve, retitled the window or hid text. Every line
of every widget passes through ``get_line_filters``; this filter removes what
``core.display.strip_invisible`` removes (zero cells wide to Textual: nothing moves). Where the
user decides (approvals, plans, diffs) ``core.display.visible`` writes those characters out first.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from ..core.display import strip_invisible


class InvisibleFilter(LineFilter):
    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        for segment in segments:
            if strip_invisible(segment.text) is not segment.text:
                break
        else:
            return segments
        return [Segment(strip_invisible(s.text), s.style, s.control) for s in segments]
