"""The main screen's compositor: Textual's, without the full layouts it repeats for nothing.

Textual keeps two maps of where widgets are: the full map (every widget, built by a layout) and the
visible map (what a scroll shows, built without laying out the rest). A scroll marks the full map
stale, and the next lookup of a widget's region that the visible map cannot answer arranges the
whole screen again to rebuild it. Two such lookups are wasted work:

- in and after a full layout (``reflow``), which builds the full map but leaves it marked stale,
  so the first region lookup after it (Textual's own ``_size_updated`` on every laid-out widget,
  rendering a widget), or during it (a scroll bar refreshed as it is arranged), arranged every
  widget a second time;
- a widget new since the last layout (a chat entry loaded as the user scrolls back: a tool
  card's first title update, a code block measuring its width), which is in neither map: without
  a scroll since that layout, Textual answers such a lookup "not in the layout" at once, and now
  it does after a scroll as well (its region comes with the next layout, as it would have).

In a resumed 300-turn session paged back from the end, those rebuilds were about a fifth of the
app's CPU time (py-spy), each as long as a layout of every mounted widget.
"""

from __future__ import annotations

from textual import errors
from textual._compositor import Compositor, MapGeometry, ReflowResult
from textual.geometry import Size
from textual.widget import Widget


class LayoutCompositor(Compositor):
    """Textual's compositor; a layout leaves the full map fresh, and a widget new since the last
    layout is not searched for."""

    def reflow(self, parent: Widget, size: Size) -> ReflowResult:
        # During the layout a lookup (a scroll bar refreshing as it is arranged) reads the map of
        # the last layout, as Textual does when no scroll came in between, rather than arranging
        # everything once more inside the layout; after it, the map it built is fresh.
        self._full_map_invalidated = False
        result = super().reflow(parent, size)
        self._full_map_invalidated = False
        return result

    def find_widget(self, widget: Widget) -> MapGeometry:
        if (
            self._full_map_invalidated
            and widget not in self._full_map
            and (self._visible_map is None or widget not in self._visible_map)
        ):
            # New since the last layout (mounting, or mounted and not laid out yet): no layout
            # has placed it. Without a scroll since that layout Textual answers NoWidget too.
            raise errors.NoWidget("Widget is not in layout")
        return super().find_widget(widget)
