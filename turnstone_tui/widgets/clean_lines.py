"""Widgets that clean their own lines, so the app's line filter can skip them.

The app's last line filter (app/line_filter.py) removes every control and invisible format
character from every line of every widget before the terminal. Textual applies a line filter by
making a second ``Strip`` (with six caches of its own) for every rendered line, changed or not, and
keeps both. A widget with :class:`CleanLines` cleans each content line as it renders it instead,
before Textual's caches (``core.display.strip_invisible``: the same characters the filter
removes; a line with none is returned as it is, no copy), and leaves that filter out of its own
(Textual's colour filters stay) while its border title and subtitle are clean. Everything a
widget draws is its content lines (``render_line``), its border title and subtitle, and CSS
(borders, padding, scroll bars: no text from outside).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter
from textual.strip import Strip

from ..core.display import strip_invisible

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    _Base = object


def clean_segments(segments: list[Segment]) -> list[Segment]:
    """``segments`` without control or invisible format characters (the same list if they had none)."""
    for segment in segments:
        if strip_invisible(segment.text) is not segment.text:
            break
    else:
        return segments
    return [Segment(strip_invisible(s.text), s.style, s.control) for s in segments]


def clean_strip(strip: Strip) -> Strip:
    """``strip`` without control or invisible format characters (the same Strip if it had none)."""
    segments = strip._segments  # (read only)
    cleaned = clean_segments(segments)
    return strip if cleaned is segments else Strip(cleaned, strip.cell_length)


class InvisibleFilter(LineFilter):
    """The app's last line filter (app/line_filter.py): every other widget's lines are cleaned
    through it, after Textual's caches (a second Strip for each line)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return clean_segments(segments)


class CleanLines(_Base):
    """Mixed in FIRST (``class X(CleanLines, Static)``): not a DOM node, so Textual still finds the
    widget's CSS through the next base; its ``render_line`` wraps whatever the widget's own is."""

    def render_line(self, y: int) -> Strip:
        return clean_strip(super().render_line(y))

    def get_line_filters(self) -> Sequence[LineFilter]:
        filters = super().get_line_filters()
        for title in (self._border_title, self._border_subtitle):
            if title is not None and strip_invisible(title.plain) is not title.plain:
                return filters
        # The app's other filters (colours: ANSI to true colour, NO_COLOR) still apply.
        return [f for f in filters if not isinstance(f, InvisibleFilter)]
