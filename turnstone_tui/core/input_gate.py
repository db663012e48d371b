"""Keys before output: a key the terminal has just sent holds back the event loop's bulk work.

While commands flood output, every turn of the event loop runs the output pumps (each a chunk of
up to 64 KiB split into lines, 2-8 ms on a busy machine) beside whatever else is ready. A key
travels through several turns of the loop before its frame is drawn (the app, then the focused
widget, then the screen's update), and each of those turns waited behind every pump that was
ready, so the key's latency grew with the number of flooding commands.

The front end's input thread calls :meth:`InputGate.key_read` the moment it reads a key (before the
loop even knows of it); the bulk work (:func:`executors.proc_group._pump`, the bash panes' flush, the
stream applier) checks :attr:`InputGate.held` and waits in :meth:`InputGate.wait_open` until the
front end calls :meth:`InputGate.shown` once the frame after the key has been drawn. A key never
holds output back for more than ``MAX_HOLD`` seconds, nor keeps it held for more than
``MAX_HELD_IN_A_ROW`` seconds in a row while the user keeps typing, so a pane streams on whatever
the user does.

Threads: ``key_read`` is the input thread's (it only writes ``_last_key``); everything else is the
event loop's (``_shown_upto`` and the waiters). A single writer per field: no lock.
"""

from __future__ import annotations

import asyncio
import time

MAX_HOLD = 0.1
"""Seconds after a key is read after which output goes on even if its frame was never reported."""
MAX_HELD_IN_A_ROW = 0.25
"""Seconds output may stay held while keys keep coming; then it goes on until the gate opens."""


class InputGate:
    """See the module docstring. One per process: :data:`GATE`."""

    def __init__(self, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
        self._clock = clock
        self._last_key = 0.0  # when the newest key was read (input thread)
        self._shown_upto = 0.0  # keys read up to this time are on the screen (event loop)
        self._dispatched_upto = 0.0  # keys read up to this time reached the app (event loop)
        self._held_since = 0.0  # when a waiter first found the gate held, in this run of holds
        self._waiters: list[asyncio.Future[None]] = []

    def key_read(self, at: float | None = None) -> None:
        """A key was read from the terminal (any thread): hold bulk work back until it is shown."""
        self._last_key = self._clock() if at is None else at

    def dispatched(self, upto: float) -> None:
        """Every key read up to ``upto`` has reached the app's handler (event loop)."""
        if upto > self._dispatched_upto:
            self._dispatched_upto = upto

    @property
    def undispatched(self) -> bool:
        """A key was read and the app has not taken it yet (``MAX_HOLD`` at most): the screen
        puts its next frame off meanwhile (``MainScreen``), so the loop gets to the key first."""
        last = self._last_key
        return last > self._dispatched_upto and self._clock() - last < MAX_HOLD

    def shown(self, upto: float) -> None:
        """Every key read up to ``upto`` (a time from the same clock) is on the screen: open the
        gate unless a newer key is still on its way (event loop)."""
        if upto > self._shown_upto:
            self._shown_upto = upto
        if not self._pending():
            self._open()

    def _pending(self) -> bool:
        return self._last_key > self._shown_upto

    @property
    def held(self) -> bool:
        """A key is on its way to the screen and output should wait (cheap: checked per chunk)."""
        last = self._last_key
        if last <= self._shown_upto:
            return False
        now = self._clock()
        if now - last >= MAX_HOLD:
            self._held_since = 0.0  # (the event loop's: only it asks)
            return False
        since = self._held_since
        return not since or now - since < MAX_HELD_IN_A_ROW

    async def wait_open(self) -> None:
        """Return once the gate is open (at once if it is): the key's frame was drawn, or the
        hold's time ran out."""
        while self.held:
            now = self._clock()
            if not self._held_since:
                self._held_since = now
            remaining = min(MAX_HOLD - (now - self._last_key), MAX_HELD_IN_A_ROW - (now - self._held_since))
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            timer = loop.call_later(max(remaining, 0.001), _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        if not self._pending():
            self._held_since = 0.0

    def _open(self) -> None:
        self._held_since = 0.0
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _wake(waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


GATE = InputGate()
"""The process's gate: the front end marks keys, the output pumps and panes wait on it."""
