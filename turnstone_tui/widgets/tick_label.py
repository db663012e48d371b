"""A one-line label that changes on every tick of a clock (a spinner, an elapsed time).

``Static.update`` asks for a layout of the whole screen by default: with four panes, their cards
and the status bar each ticking ten times a second, that was a full reflow of the screen (and of
the conversation in it) on nearly every frame, the loop's largest cost while tools run. A tick
that leaves the label as wide as it was only repaints it.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.content import Content
from textual.widgets import Label


class TickLabel(Label):
    """A label whose ``tick()`` updates lay out the screen only when its width changes."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._cells = -1

    def tick(self, content: Content | str) -> None:
        cells = content.cell_length if isinstance(content, Content) else cell_len(content)
        self.update(content, layout=cells != self._cells)
        self._cells = cells
