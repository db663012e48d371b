"""A key's frame is drawn as soon as the key is handled, not at the screen's next update tick.

Textual draws a screen from its update timer, an interval timer on a grid of 1/60 s that the
screen resumes when something is dirty; after a frame that overran its interval the next tick is
the grid's next point after it. A key handled right after a slow frame (four bash panes
streaming, a busy machine) waited for that tick, up to 1/60 s, for a frame that shows one
character.

The widget a key went to calls :func:`after_key` once it handled the key (``call_next``): its
repaint request reaches the screen in the same step (the widget's idle posts it). The screen
takes a callback behind that request and draws at once there, as its update timer would
(``Screen._on_timer_update``, which Textual also runs outside the timer: its Pilot between steps;
a resize handler lays out the screen the same way), then opens the input gate
(``core.input_gate``). When it cannot draw now (not the current screen, a batch update open, or
the widget's repaint not posted yet: more keys were queued behind the key) the gate opens after
the screen's next frame, as before.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widget import Widget

from ..core.input_gate import GATE


def after_key(target: Widget | Screen[Any], dispatched: float) -> None:
    """Run by ``target`` right after it handled a key dispatched at ``dispatched``."""
    screen = target.screen
    # Two hops: this callback reaches the screen before the repaint request the widget posts
    # next (in its idle); the second goes behind it.
    screen.call_later(screen.call_later, _draw_key_frame, target, screen, dispatched)


def _draw_key_frame(target: Widget | Screen[Any], screen: Screen[Any], dispatched: float) -> None:
    if (
        screen.is_current
        and not screen.app._batch_count
        and not (target._repaint_required or target._layout_required)
        and _has_updates(screen)
    ):
        Screen._on_timer_update(screen)  # (Textual's: not MainScreen's, which waits for keys)
        GATE.shown(dispatched)  # that frame showed the key
    else:
        screen.call_after_refresh(GATE.shown, dispatched)


def _has_updates(screen: Screen[Any]) -> bool:
    return bool(
        screen._dirty_widgets
        or screen._layout_required
        or screen._scroll_required
        or screen._repaint_required
    )
