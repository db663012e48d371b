"""The main screen's frame clock: Textual's update timer, without the period it skips for nothing
after a frame that overran its period by a little.

A screen draws its frames from a repeating timer (Textual's ``Screen._update_timer``, 60 a second),
paused while nothing needs drawing and resumed when something does. The timer sleeps until the
next multiple of its period from its start. When a tick ends after the next boundary (a frame
longer than a period), Textual's ``Timer._run`` skips the periods it missed but counts one too many
(``count = int(elapsed / interval + 1)``): the next tick is a whole period *after* the next
boundary. While an answer streams on a quiet machine a frame takes 15-25 ms, just over the period,
so every such frame was followed by 17-33 ms of waiting for the clock before the next append could
be drawn: in-app traces of bench/terminal_markdown.py showed each gap over 50 ms as a frame, ~32 ms
of clock, then the next frame.

:class:`FrameTimer` goes on at the next boundary after a tick that took less than ``SHORT_TICKS``
periods, and as Textual's timer after a longer one. A long tick is a starved app (a busy machine):
there the extra period keeps its frame rate down, which is what lets it keep up with a stream at all
(d453c6f skipped to the next boundary after every tick and a starved app drew more frames, each with
its fixed cost, and settled later: reverted in 5741ca8).

A tick that drew nothing because a batch update was open (a streamed append mounting its blocks:
Textual draws no frame inside ``App.batch_update``) is not a frame: the screen calls
:meth:`FrameTimer.retick`, and the timer ticks again as soon as the screen resumes it (when the
batch has closed and the screen is idle), not at the next period boundary after that.
"""

from __future__ import annotations

from textual import _time
from textual._time import sleep
from textual.timer import EventTargetGone, Timer

SHORT_TICKS = 2.0
"""A tick that took less than this many periods is followed by the next period boundary."""


def next_tick(start: float, interval: float, count: int, now: float, ticked: float) -> tuple[int, float]:
    """``(count, when)`` of the next tick of a timer started at ``start`` whose last tick, number
    ``count``, began at ``ticked`` and ended at ``now``. On time: tick ``count + 1``. Late after a
    short tick: the next period boundary after ``now``. Late after a long one: the boundary after
    that, as Textual's ``Timer`` does."""
    when = start + (count + 1) * interval
    if when >= now:
        return count, when
    if now - ticked < SHORT_TICKS * interval:
        count = int((now - start) / interval)
        return count, max(start + (count + 1) * interval, now)
    count = int((now - start) / interval + 1)  # (Textual's Timer._run)
    return count, start + (count + 1) * interval


class FrameTimer(Timer):
    """Textual's Timer; a tick shorter than ``SHORT_TICKS`` periods that ended late is followed by
    the next period boundary, not the one after."""

    _retick = False

    def retick(self) -> None:
        """The tick that runs now drew nothing (a batch update was open): tick again as soon as
        the timer is resumed."""
        self._retick = True

    async def _run(self) -> None:
        count = 0
        repeat = self._repeat
        interval = self._interval
        self._active  # noqa: B018 (Textual's: the event is made in the timer's own task)
        await self._active.wait()
        start = _time.get_time()
        ticked = start
        while repeat is None or count <= repeat:
            if self._retick:
                self._retick = False
                await self._active.wait()
                if not self._reset:
                    ticked = _time.get_time()
                    count = int((ticked - start) / interval)  # (back on the grid)
                    try:
                        await self._tick(next_timer=ticked, count=count)
                    except EventTargetGone:
                        break
                    continue
            now = _time.get_time()
            if self._skip:
                count, next_timer = next_tick(start, interval, count, now, ticked)
            else:
                next_timer = start + (count + 1) * interval
            await sleep(max(0.0, next_timer - _time.get_time()))
            count += 1
            await self._active.wait()
            if self._reset:
                start = _time.get_time()
                ticked = start
                count = 0
                self._reset = False
                continue
            ticked = _time.get_time()
            try:
                await self._tick(next_timer=next_timer, count=count)
            except EventTargetGone:
                break
