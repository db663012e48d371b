"""Textual's footer without its leak: the keys of every earlier recompose stayed alive.

Each ``FooterKey`` is data-bound to ``Footer.compact``, which stores a watcher entry ``(key,
callback)`` on the footer. Textual drops entries of closed widgets only when ``compact`` changes,
which it never does here; and the footer recomposes whenever the screen's bindings change (focus
moves, a turn starts or ends). So every recompose left its keys, their styles and render caches on
the footer's watcher list: a few keys per turn, megabytes over a long session (Textual issue
#6666). This footer drops the entries of keys no longer in the DOM before it composes new ones.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer as TextualFooter

_WATCHERS = "__watchers"  # where Textual's reactive keeps ``watch`` entries (textual is pinned exactly)


class Footer(TextualFooter):
    """The key bar at the bottom of a screen."""

    def compose(self) -> ComposeResult:
        self.drop_stale_watchers()
        yield from super().compose()

    def drop_stale_watchers(self) -> None:
        """Forget watcher entries of widgets that left the DOM (the keys of a former compose)."""
        watchers: dict[str, list[tuple[object, object]]] = getattr(self, _WATCHERS, {})
        for entries in watchers.values():
            entries[:] = [
                (node, callback) for node, callback in entries if getattr(node, "is_attached", True)
            ]

    @property
    def watcher_count(self) -> int:
        """Watcher entries other widgets hold on this footer (one per key on screen)."""
        watchers: dict[str, list[tuple[object, object]]] = getattr(self, _WATCHERS, {})
        return sum(len(entries) for entries in watchers.values())
