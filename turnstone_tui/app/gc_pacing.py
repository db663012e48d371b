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
  builds up for long.
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

    def restore(self) -> None:
        """The app is closing: put the interpreter's settings back."""
        self._deferring_since = None
        gc.set_threshold(*self._normal)
        gc.unfreeze()
