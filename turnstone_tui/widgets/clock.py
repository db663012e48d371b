"""One clock for every spinner and elapsed time in the UI, freezable so snapshots are stable.

`now()` is `time.monotonic()` unless `freeze(t)` was called; then it returns `t` until
`freeze(None)`. `spinner_frame()` picks the frame from the same clock, so a frozen clock shows
a fixed frame.
"""

from __future__ import annotations

import time

SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_FPS = 10.0

_frozen_at: float | None = None
_tick_at: float | None = None


def now() -> float:
    """Seconds on a monotonic clock, or the frozen time (or, during a tick, the tick's time)."""
    if _frozen_at is not None:
        return _frozen_at
    if _tick_at is not None:
        return _tick_at
    return time.monotonic()


def hold_tick(t: float | None) -> None:
    """While one tick updates every spinner, they all read the tick's time ``t`` (``None`` ends it)."""
    global _tick_at
    _tick_at = t


def freeze(t: float | None) -> None:
    """Freeze the clock at ``t`` seconds (``None`` unfreezes it)."""
    global _frozen_at
    _frozen_at = t


def is_frozen() -> bool:
    return _frozen_at is not None


def spinner_frame(at: float | None = None) -> str:
    """The spinner character for the current (or given) time."""
    t = now() if at is None else at
    return SPINNER_FRAMES[int(t * SPINNER_FPS) % len(SPINNER_FRAMES)]


def format_elapsed(seconds: float) -> str:
    """``0.4s``, ``12.3s``, ``2m05s``, ``1h02m``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
