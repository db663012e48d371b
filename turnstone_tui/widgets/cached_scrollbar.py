"""A vertical scroll bar that renders a bar it has drawn before from its cache.

While an answer streams the chat grows on every frame and follows its end, so its scroll bar's
virtual size and position change on every frame and Textual renders the whole bar again (a Rich
renderable through the console, one line at a time: in traces of bench/app_stream.py the scroll
bar was the single largest widget render of a frame). The bar itself, quantised to eighths of a
cell, mostly looks the same from one frame to the next. :class:`CachedScrollBar` works out the
bar's segments first (``ScrollBarRender.render_bar``, what Textual's renderable yields, cheap)
and reuses the lines it rendered for the same segments, size, colours and crop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    _Base = object


class CachedScrollBar(ScrollBar):
    """Textual's scroll bar; the lines of a bar already drawn are reused."""

    _cached_key: Any = None
    _cached_lines: dict[Region, list[Strip]] | None = None

    def _bar_key(self) -> Any:
        """Everything the rendered lines depend on, or None to render as Textual does."""
        renderable = self.render()
        if not isinstance(renderable, ScrollBarRender) or type(renderable) is not self.renderer:
            return None
        style = renderable.style
        if not hasattr(style, "bgcolor"):  # (a style given by name: leave it to Textual)
            return None
        width, height = self.size
        bar = renderable.render_bar(
            size=height if renderable.vertical else width,
            window_size=renderable.window_size,
            virtual_size=renderable.virtual_size,
            position=renderable.position,
            vertical=renderable.vertical,
            thickness=width if renderable.vertical else height,
            **({"back_color": style.bgcolor} if style.bgcolor else {}),  # type: ignore[union-attr]
            **({"bar_color": style.color} if style.color else {}),  # type: ignore[union-attr]
        )
        app = self.app
        return (
            tuple(bar.segments),
            self.size,
            style,
            self.background_colors,
            tuple(id(f) for f in self.get_line_filters() if f.enabled),
            app._css_update_count,
            id(app.ansi_theme),
            app.native_ansi_color,
            self.opacity,
        )

    def render_lines(self, crop: Region) -> list[Strip]:
        key = self._bar_key()
        if key is None:
            return super().render_lines(crop)
        if key != self._cached_key or self._cached_lines is None:
            self._cached_key = key
            self._cached_lines = {}
        lines = self._cached_lines.get(crop)
        if lines is None:
            lines = self._cached_lines[crop] = super().render_lines(crop)
        return list(lines)


class CachedVerticalScrollBar(_Base):
    """Mixed FIRST into a scrolling widget (not a DOM node, so Textual still finds the widget's CSS
    through the next base): its vertical scroll bar is a :class:`CachedScrollBar`, made as
    Textual's ``Widget.vertical_scrollbar`` makes its own."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        if self._vertical_scrollbar is None:
            bar = CachedScrollBar(vertical=True, name="vertical", thickness=self.scrollbar_size_vertical)
            bar.display = False
            self._vertical_scrollbar = bar
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar
