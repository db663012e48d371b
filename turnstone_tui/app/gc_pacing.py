"""Keep Python's full garbage collections out of streaming turns.

A full (generation 2) collection walks every tracked object: with the SDKs, Textual and a long
conversation loaded that is several hundred thousand objects and 100-200 ms on a slow machine,
long enough to be seen as a frozen screen while an answer streams. So:

- after start-up, everything alive (modules, SDK types, the first screen) is collected once and
  frozen, so later full collections skip it;
- while a turn runs, automatic full collections are put off (generations 0 and 1 still run, and
  they reclaim most garbage);
- when the turn ends, and every ``max_deferral`` seconds during a very long turn (at a moment
  when nothing streams, if one comes soon), a full collection is run, so cyclic garbage never
  builds up for long;
- the same while the user scrolls through the chat (``scrolling``): each page of a long session
  draws entries never drawn before, and the objects that makes brought on a full collection in
  the frame of about one PageUp in five (50-250 ms in a resumed 300-turn session, growing as the
  pages were drawn); it runs once the scrolling has stopped (``scroll_settled``).
"""

from __future__ import annotations

import gc
import time

# gen-2 threshold while a turn runs: "never, unless we ask".
_DEFERRED_THRESHOLD = 1_000_000
# A long turn's periodic collection waits for a quiet moment for up to this many deferrals.
QUIET_WAIT_FACTOR = 4


class GcPacer:
    """Defers full collections during turns; call ``turn_started`` / ``turn_ended``."""

    def __init__(self, *, max_deferral: float = 30.0) -> None:
        self.max_deferral = max_deferral
        self._normal = gc.get_threshold()
        self._deferring_since: float | None = None
        self._freeze_pending = False
        self._scrolling_since: float | None = None
        self.full_collections = 0

    @property
    def deferring(self) -> bool:
        return self._deferring_since is not None

    def freeze_startup(self) -> None:
        """Collect, then move everything alive now out of future collections' way. During a turn
        this waits for the turn's end (a full collection would stall the stream). The collector
        is on from now in any case (the console script starts the app with it off)."""
        gc.enable()
        if self._deferring_since is not None:
            self._freeze_pending = True
            return
        self._freeze_pending = False
        gc.collect()
        gc.freeze()

    def turn_started(self) -> None:
        if self._deferring_since is None:
            self._deferring_since = time.monotonic()
            gen0, gen1, _ = self._normal
            gc.set_threshold(gen0, gen1, _DEFERRED_THRESHOLD)

    def turn_ended(self) -> None:
        if self._deferring_since is not None:
            self._deferring_since = None
            gc.set_threshold(*self._normal)
            self.collect()
            if self._freeze_pending:
                self.freeze_startup()

    def tick(self, *, quiet: bool = True) -> None:
        """Call now and then: a turn that runs for long still gets a full collection, at a quiet
        moment (``quiet``: nothing is streaming onto the screen right now) if one comes within
        ``QUIET_WAIT_FACTOR`` times ``max_deferral``, and then regardless."""
        if self._deferring_since is None:
            return
        waited = time.monotonic() - self._deferring_since
        if waited >= self.max_deferral and (quiet or waited >= self.max_deferral * QUIET_WAIT_FACTOR):
            self.collect()
            self._deferring_since = time.monotonic()

    def collect(self) -> None:
        gc.collect()
        self.full_collections += 1

    def scrolling(self) -> None:
        """The user scrolls the chat: automatic full collections wait for ``scroll_settled``
        (or, for one who keeps scrolling, ``max_deferral`` seconds: one runs then)."""
        now = time.monotonic()
        if self._scrolling_since is None:
            self._scrolling_since = now
        elif now - self._scrolling_since >= self.max_deferral:
            self._scrolling_since = now
            if self._deferring_since is None:
                self.collect()
        if self._deferring_since is None:  # (again each time: a turn's end restores the threshold)
            gen0, gen1, _ = self._normal
            gc.set_threshold(gen0, gen1, _DEFERRED_THRESHOLD)

    def scroll_settled(self) -> None:
        """The scrolling stopped: the collection put off for it runs now (a turn that is running
        keeps deferring; its end collects)."""
        if self._scrolling_since is None:
            return
        self._scrolling_since = None
        if self._deferring_since is None:
            gc.set_threshold(*self._normal)
            self.collect()

    def restore(self) -> None:
        """The app is closing: put the interpreter's settings back."""
        self._deferring_since = None
        self._scrolling_since = None
        gc.set_threshold(*self._normal)
        gc.unfreeze()
