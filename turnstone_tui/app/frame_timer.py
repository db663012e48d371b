"""The main screen's frame clock: Textual's update timer, without the period it skips for nothing.

A screen draws its frames from a repeating timer (Textual's ``Screen._update_timer``, 60 a second),
paused while nothing needs drawing and resumed when something does. The timer sleeps until the
next multiple of its period from its start; when it wakes late (a frame longer than a period, or a
resume after a pause), Textual's ``Timer._run`` skips the periods it missed, but counts one too
many: ``count = int(elapsed / interval + 1)`` makes the next tick ``start + (count + 1) * interval``,
a period *after* the next boundary. A frame asked for right after a long frame, or after the first
frame that follows a pause (every frame of a streaming answer: the screen pauses its clock after
each frame until the next append), waited 17-33 ms for the clock instead of 0-17 ms. In a
streaming answer that wait is part of every gap in the output (bench/terminal_markdown.py).

:class:`FrameTimer` skips to the next boundary; everything else is Textual's ``Timer``.
"""

from __future__ import annotations

from textual import _time
from textual._time import sleep
from textual.timer import EventTargetGone, Timer


def next_tick(start: float, interval: float, count: int, now: float) -> tuple[int, float]:
    """``(count, when)`` of the next tick of a timer started at ``start`` whose last tick was
    number ``count``: the next period boundary after ``now`` if ticks were missed (Textual's timer
    skips to the one after it), else tick ``count + 1``."""
    when = start + (count + 1) * interval
    if when < now:
        count = max(count, int((now - start) / interval))
        when = max(start + (count + 1) * interval, now)
    return count, when


class FrameTimer(Timer):
    """Textual's Timer; a late tick is followed by the next period boundary, not the one after."""

    async def _run(self) -> None:
        count = 0
        repeat = self._repeat
        interval = self._interval
        self._active  # noqa: B018 (Textual's: the event is made in the timer's own task)
        await self._active.wait()
        start = _time.get_time()
        while repeat is None or count <= repeat:
            now = _time.get_time()
            if self._skip:
                count, next_timer = next_tick(start, interval, count, now)
            else:
                next_timer = start + (count + 1) * interval
            await sleep(max(0.0, next_timer - _time.get_time()))
            count += 1
            await self._active.wait()
            if self._reset:
                start = _time.get_time()
                count = 0
                self._reset = False
                continue
            try:
                await self._tick(next_timer=next_timer, count=count)
            except EventTargetGone:
                break
