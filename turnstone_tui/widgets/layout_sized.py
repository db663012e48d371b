"""Widgets whose virtual size the layout sets without asking for another layout.

Textual's ``Widget.virtual_size`` is a reactive with ``layout=True``: when a layout gives a widget
a new size, ``Screen._refresh_layout`` sets it (``Widget._size_updated``), and that asks for a
layout of the whole screen once more, in the next frame. The virtual size of an answer's widgets
is what that layout has just computed (their size, or a fence's code), and the second layout
finds everything where it already is. While an answer streams, the block that grows, its
Markdown, its chunk, the answer and the chat change size on every append: of the ~580 full
layouts of a 20k-token answer (bench/app_stream.py, counted in the app) ~120 were such second
layouts, each ~5 ms of arranging every widget again (the frame that drew the append: ~9 ms).

A resized widget is still marked dirty and drawn in the frame that resized it, a scrolling one
(a fence too wide for the chat) still updates its scroll bars (``_size_updated`` does both either
way), and each still gets its Resize event (the screen sends it from the layout's own result).
``_size_updated`` is Textual's private API (Textual is pinned exactly); ``layout=False`` is the
path Textual itself takes for widgets that a scroll exposes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.geometry import Size

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    _Base = object


class SizedByLayout(_Base):
    """Mixed in FIRST (``class X(SizedByLayout, Static)``: not a DOM node, so Textual still finds
    the widget's CSS through the next base). The layout sets its virtual size without asking for
    another layout (its watchers, if it has any, are not called: none of these widgets has one)."""

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)
