"""Chat entries kept off the screen: finished widgets leave the DOM as small recipes to rebuild them.

A long session keeps only the part of the conversation near the view mounted (Textual lays out and
composites every mounted widget, so a DOM that grows with the session makes every frame slower).
The older entries are held here as :data:`Revive` callables (each holds the entry's text, not its
widgets) and are mounted again, newest first, when the view scrolls up to them. A resumed session
starts with its whole history here and only the last screenful mounted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from .chat_messages import AssistantMessage, ErrorMessage, InfoMessage, ReasoningBlock, UserMessage

Revive = Callable[[], Widget]
"""Builds a finished entry's widget again."""


def revival(widget: Widget) -> Revive | None:
    """How to build ``widget`` again once removed, or None for an entry that is still changing
    (a streaming answer, a running tool) or that the chat cannot rebuild."""
    classes = " ".join(sorted(widget.classes)) or None
    if isinstance(widget, AssistantMessage):
        if not widget.finished:
            return None
        source = widget.source
        return lambda: AssistantMessage(source, finished=True, classes=classes)
    from .tool_card import ToolCard  # loaded with the first tool call (off the first frame)

    if isinstance(widget, ToolCard):
        return widget.recipe() if widget.finished_at is not None else None
    if isinstance(widget, ReasoningBlock):
        if not widget.finished:
            return None
        text = widget.text
        return lambda: ReasoningBlock(text, finished=True)
    if isinstance(widget, InfoMessage):  # also the welcome line
        kind, text, markup = type(widget), widget.text, widget.markup_text
        return lambda: kind(text, markup=markup, classes=classes)
    if isinstance(widget, UserMessage | ErrorMessage):
        kind2, text2 = type(widget), widget.text
        return lambda: kind2(text2)
    return None


class OlderEntries:
    """The entries above the mounted ones, oldest first."""

    def __init__(self) -> None:
        self._revives: list[Revive] = []

    def __len__(self) -> int:
        return len(self._revives)

    def add_newest(self, revives: Iterable[Revive]) -> None:
        """Entries that were just below the held ones (the oldest mounted ones, leaving)."""
        self._revives.extend(revives)

    def take_newest(self, count: int) -> list[Revive]:
        """The ``count`` newest held entries, oldest first (to be mounted above the mounted ones)."""
        count = min(count, len(self._revives))
        if count <= 0:
            return []
        taken = self._revives[-count:]
        del self._revives[-count:]
        return taken

    def clear(self) -> None:
        self._revives.clear()


class OlderMarker(Static):
    """The first line of a chat with entries above it: how many, and that scrolling up shows them."""

    def __init__(self) -> None:
        super().__init__("", markup=False)
        self.count = 0

    def show_count(self, count: int) -> None:
        self.count = count
        noun = "entry" if count == 1 else "entries"
        self.update(Content(f"↑ {count} earlier {noun} · shown as you scroll up"))
