"""The main screen's compositor: Textual's, without the full layouts it repeats for nothing.

Textual keeps two maps of where widgets are: the full map (every widget, built by a layout) and the
visible map (what a scroll shows, built without laying out the rest). A scroll marks the full map
stale, and the next lookup of a widget's region that the visible map cannot answer arranges the
whole screen again to rebuild it. Two such lookups are wasted work:

- after a full layout (``reflow``), which has just built the full map but leaves it marked stale,
  so the first region lookup after it (Textual's own ``_size_updated`` on every laid-out widget,
  rendering a widget) arranges every widget a second time;
- a widget still composing or mounting (a chat entry loaded as the user scrolls back: a tool
  card's first title update, a code block measuring its width), which is in neither map and
  cannot be: the layout leaves out widgets that are not mounted yet.

In a resumed 300-turn session paged back from the end, those rebuilds were about a fifth of the
app's CPU time (py-spy), each as long as a layout of every mounted widget.
"""

from __future__ import annotations

from textual import errors
from textual._compositor import Compositor, MapGeometry, ReflowResult
from textual.geometry import Size
from textual.widget import Widget


class LayoutCompositor(Compositor):
    """Textual's compositor; a layout leaves the full map fresh, and a widget that is not mounted
    yet is not searched for."""

    def reflow(self, parent: Widget, size: Size) -> ReflowResult:
        result = super().reflow(parent, size)
        self._full_map_invalidated = False  # (Textual's reflow built it from every widget)
        return result

    def find_widget(self, widget: Widget) -> MapGeometry:
        if not widget._is_mounted:
            # Not placed by any layout (``_arrange_root`` skips it): rebuilding cannot find it.
            raise errors.NoWidget("Widget is not in layout")
        return super().find_widget(widget)
