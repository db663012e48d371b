"""One clock tick for every spinner on screen.

Each running pane and tool card shows a spinner and an elapsed time. With a timer each, their
repaints fell into different frames, and a frame paints the rectangle around all that
changed in it (the status bar at the bottom, a card at the top: the whole screen): up to 60 frames
a second, each drawing everything. Subscribed to one timer per app instead, they all change in the
same frame, ``SPINNER_FPS`` times a second, and the frames between (a typed key, a pane scrolling)
draw only what changed. (The status bar keeps its own slower timer: an always-running app tick
kept the app from ever being idle and measured slower from approval to answer.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from weakref import WeakKeyDictionary

from textual.app import App
from textual.timer import Timer
from textual.widget import Widget

from . import clock


class Subscription:
    """A widget's place on its app's tick; ``stop()`` leaves it (as a Timer's ``stop()``)."""

    def __init__(self, ticker: _Ticker, widget: Widget, callback: Callable[[], object]) -> None:
        self._ticker = ticker
        self.widget = widget
        self.callback = callback

    def stop(self) -> None:
        self._ticker.leave(self)


class _Ticker:
    def __init__(self, app: App[object]) -> None:
        self._app = app
        self._subscriptions: list[Subscription] = []
        self._timer: Timer | None = None

    def join(self, widget: Widget, callback: Callable[[], object]) -> Subscription:
        subscription = Subscription(self, widget, callback)
        self._subscriptions.append(subscription)
        if self._timer is None:
            self._timer = self._app.set_interval(1 / clock.SPINNER_FPS, self._tick, name="spinner-tick")
        return subscription

    def leave(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
        if not self._subscriptions and self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _tick(self) -> None:
        clock.hold_tick(time.monotonic())  # every spinner shows the same frame
        try:
            for subscription in list(self._subscriptions):
                if subscription.widget.is_attached:
                    subscription.callback()
                else:  # removed without leaving
                    self.leave(subscription)
        finally:
            clock.hold_tick(None)


_TICKERS: WeakKeyDictionary[App[object], _Ticker] = WeakKeyDictionary()


def on_tick(widget: Widget, callback: Callable[[], object]) -> Subscription:
    """Call ``callback`` on every spinner tick of ``widget``'s app until ``stop()`` (or until the
    widget leaves the DOM). The widget must be mounted."""
    app = widget.app
    ticker = _TICKERS.get(app)
    if ticker is None:
        ticker = _TICKERS[app] = _Ticker(app)
    return ticker.join(widget, callback)
