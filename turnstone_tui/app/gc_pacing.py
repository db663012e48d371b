"""Keep Python's garbage collections short, and out of streaming turns.

A full (generation 2) collection walks every tracked object: with the SDKs, Textual and a long
conversation loaded that is several hundred thousand objects (most of them the render caches of
mounted widgets: Strips and their FIFOCaches) and 100-600 ms, long enough to be seen as a frozen
screen while an answer streams, and a cost per turn that grew with the session. So:

- after start-up, everything alive (modules, SDK types, the first screen) is collected once and
  frozen, so later collections skip it;
- while a turn runs, automatic full collections are put off (generations 0 and 1 still run, and
  they reclaim most garbage);
- when the turn ends, and every ``max_deferral`` seconds during a very long turn (at a moment
  when nothing streams, if one comes soon), what is not frozen (what the turns since the last
  one made) is collected and what survives is frozen too: the collection after a turn costs
  what that turn left behind, not what the whole session holds;
- cyclic garbage among frozen objects (a widget pruned from the chat after it was frozen: a
  widget and its parent, its styles and its message queue refer to each other; most Textual
  Strips, which keep themselves in their own caches, so every line drawn again leaves some) is
  freed by a
  thorough collection — everything unfrozen, collected, frozen again — run at the same moments
  when the heap (``sys.getallocatedblocks()``: Python's memory blocks in use, garbage included;
  a fraction of a millisecond to read, where counting the frozen objects walks them all) has
  grown by ``growth_ratio`` since the last thorough one. That is the rule Python uses for its
  own full collections (long-lived objects grown by a quarter; a tenth here, for memory), so the
  garbage kept is at most about that fraction of the heap, and the thorough collections' cost,
  spread over the turns between them, stays proportional to what a turn leaves behind rather
  than to the session's length;
- while the user scrolls through the chat (``scrolling``) automatic full collections wait too:
  each page of a long session draws entries never drawn before, and the objects that makes
  brought on a full collection in the frame of about one PageUp in five (50-250 ms in a resumed
  300-turn session, growing as the pages were drawn); the pacer's collection runs once the
  scrolling has stopped (``scroll_settled``);
- while the user types (a key within ``TYPING_QUIET_SECONDS``), the collection after a turn and the
  one that ends start-up wait for a pause in the typing (``tick``, every second; or
  ``max_deferral`` seconds of typing without one), or for the user to send what they typed (the
  next turn's start, before its request goes out): a thorough collection in a long session takes
  0.5 s and more, and one that started while a user typed ahead during the answer held every key
  after it that long.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

# gen-2 threshold while a turn runs: "never, unless we ask".
_DEFERRED_THRESHOLD = 1_000_000
# A long turn's periodic collection waits for a quiet moment for up to this many deferrals.
QUIET_WAIT_FACTOR = 4
# A thorough collection once the heap grew by this fraction since the last one. Python's own
# ratio for its full collections is a quarter (long_lived_pending > long_lived_total / 4); in
# 300-turn runs of bench/terminal_turns.py a quarter kept ~28 MB more than collecting everything
# after each turn (a thorough collection every ~63 turns, 750-880 ms each), a tenth ~12 MB (every
# ~26 turns, ~530 ms: ~23 ms a turn averaged), a twentieth ~6 MB (every ~12 turns, ~40 ms a turn).
GROWTH_RATIO = 0.1
# A key within this many seconds: the user is typing, and a full collection waits for a pause.
TYPING_QUIET_SECONDS = 1.0


class GcPacer:
    """Defers full collections during turns; call ``turn_started`` / ``turn_ended``."""

    def __init__(
        self,
        *,
        max_deferral: float = 30.0,
        growth_ratio: float = GROWTH_RATIO,
        before_collection: Callable[[], None] | None = None,
    ) -> None:
        self.max_deferral = max_deferral
        self.growth_ratio = growth_ratio
        self._before_collection = before_collection
        self._normal = gc.get_threshold()
        self._deferring_since: float | None = None
        self._freeze_pending = False
        self._scrolling_since: float | None = None
        self._last_key_at: float | None = None
        # A collection that waits for the user to stop typing: since when, and which.
        self._put_off_since: float | None = None
        # The heap's size (Python's memory blocks in use) after the last thorough collection.
        self._blocks_after_thorough = 0
        self.collections = 0
        self.thorough_collections = 0

    @property
    def deferring(self) -> bool:
        return self._deferring_since is not None

    @property
    def waiting_for_typing(self) -> bool:
        """A collection is put off until the user pauses their typing."""
        return self._put_off_since is not None

    def key_pressed(self) -> None:
        self._last_key_at = time.monotonic()

    def _typing(self, now: float) -> bool:
        return self._last_key_at is not None and now - self._last_key_at < TYPING_QUIET_SECONDS

    def _put_off_for_typing(self) -> bool:
        """The user is typing: note a collection as put off (the automatic ones wait too) and
        say so; ``tick`` runs it at a pause, or ``turn_started`` when the user sends a prompt."""
        now = time.monotonic()
        if not self._typing(now):
            return False
        if self._put_off_since is None:
            self._put_off_since = now
        gen0, gen1, _ = self._normal
        gc.set_threshold(gen0, gen1, _DEFERRED_THRESHOLD)
        return True

    def freeze_startup(self) -> None:
        """Collect, then move everything alive now out of future collections' way. During a turn
        this waits for the turn's end (a full collection would stall the stream), and while the
        user types for a pause. The collector is on from now in any case (the console script starts the app with it off)."""
        gc.enable()
        if self._deferring_since is not None or self._put_off_for_typing():
            self._freeze_pending = True
            return
        self._freeze_pending = False
        self._thorough()

    def turn_started(self) -> None:
        if self._put_off_since is not None and self._deferring_since is None:
            # The user sent what they typed: the pause their typing left, before the answer streams.
            self._collect_put_off()
        # Typing that counts is typing during the turn (ahead of the answer): the prompt that
        # started it, sent a moment before, does not put off the collection at its end.
        self._last_key_at = None
        if self._deferring_since is None:
            self._deferring_since = time.monotonic()
            gen0, gen1, _ = self._normal
            gc.set_threshold(gen0, gen1, _DEFERRED_THRESHOLD)

    def turn_ended(self) -> None:
        if self._deferring_since is not None:
            self._deferring_since = None
            gc.set_threshold(*self._normal)
            self._collect_unless_typing()

    def _collect_unless_typing(self) -> None:
        if self._freeze_pending:
            self.freeze_startup()
        elif not self._put_off_for_typing():
            self.collect()

    def tick(self, *, quiet: bool = True) -> None:
        """Call every second or so: a collection put off while the user typed runs once they
        paused (or typed for ``max_deferral`` seconds); a turn that runs for long still gets a
        collection, at a quiet moment (``quiet``: nothing is streaming onto the screen right now)
        if one comes within ``QUIET_WAIT_FACTOR`` times ``max_deferral``, and then regardless."""
        if self._deferring_since is None:
            self._collect_after_typing()
            return
        waited = time.monotonic() - self._deferring_since
        if waited >= self.max_deferral and (quiet or waited >= self.max_deferral * QUIET_WAIT_FACTOR):
            self.collect()
            self._deferring_since = time.monotonic()

    def _collect_after_typing(self) -> None:
        if self._put_off_since is None or self._scrolling_since is not None:
            return
        now = time.monotonic()
        if self._typing(now) and now - self._put_off_since < self.max_deferral:
            return
        self._collect_put_off()

    def _collect_put_off(self) -> None:
        gc.set_threshold(*self._normal)
        if self._freeze_pending:
            self._freeze_pending = False
            self._thorough()
        else:
            self.collect()

    def collect(self) -> None:
        """Collect what is not frozen and freeze what survives; a thorough collection instead
        when the heap has grown by ``growth_ratio`` since the last one."""
        self.collections += 1
        self._put_off_since = None
        if sys.getallocatedblocks() > self._blocks_after_thorough * (1 + self.growth_ratio):
            self._thorough()
            return
        if self._before_collection is not None:
            self._before_collection()
        gc.collect()
        gc.freeze()

    def _thorough(self) -> None:
        if self._before_collection is not None:
            self._before_collection()
        self._put_off_since = None
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self._blocks_after_thorough = sys.getallocatedblocks()
        self.thorough_collections += 1

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
        self._put_off_since = None
        gc.set_threshold(*self._normal)
        gc.unfreeze()
