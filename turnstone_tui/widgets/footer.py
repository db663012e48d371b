"""Textual's footer without its leak: the keys of every earlier recompose stayed alive.

Each ``FooterKey`` is data-bound to ``Footer.compact``, which stores a watcher entry ``(key,
callback)`` on the footer. Textual drops entries of closed widgets only when ``compact`` changes,
which it never does here; and the footer recomposes whenever the screen's bindings change (focus
moves, a turn starts or ends). So every recompose left its keys, their styles and render caches on
the footer's watcher list: a few keys per turn, megabytes over a long session (Textual issue
#6666). This footer drops the entries of keys no longer in the DOM before it composes new ones.

It also recomposes only when what it shows changed: Textual recomposes the footer (every key
unmounted, new ones mounted and styled, a full layout: 10-30 ms) on every bindings refresh of the
screen, and most of them (a turn's state changes, a card's status, a modal closing) leave the same
keys, descriptions and enabled states as before.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import Footer as TextualFooter

_WATCHERS = "__watchers"  # where Textual's reactive keeps ``watch`` entries (textual is pinned exactly)


class Footer(TextualFooter):
    """The key bar at the bottom of a screen."""

    _composed: tuple[Any, ...] | None = None  # what the keys on screen show (``shown()`` then)

    def compose(self) -> ComposeResult:
        self.drop_stale_watchers()
        self._composed = self.shown()
        yield from super().compose()

    async def recompose(self) -> None:
        if self._composed is not None and self.is_attached and self.shown() == self._composed:
            return  # the same keys as on screen: nothing to rebuild
        await super().recompose()

    def shown(self) -> tuple[Any, ...] | None:
        """Everything ``compose`` draws from the screen's bindings, or None before they are ready."""
        if not self._bindings_ready or not self.is_attached:
            return None
        app = self.app
        keys: list[tuple[Any, ...]] = []
        palette = app.COMMAND_PALETTE_BINDING
        for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items():
            if binding.show or key == palette:
                group = binding.group
                keys.append(
                    (
                        binding.key,
                        app.get_key_display(binding),
                        binding.description,
                        binding.action,
                        enabled,
                        tooltip,
                        binding.tooltip,
                        binding.show,
                        (group.description, group.compact) if group is not None else None,
                    )
                )
        return (self.show_command_palette, app.ENABLE_COMMAND_PALETTE, palette, *keys)

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
