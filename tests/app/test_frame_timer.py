"""The main screen's frame clock goes on at the next period after a late tick, not the one after."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App
from textual.timer import Timer

from tests.app.helpers import wait_until
from turnstone_tui.app import frame_timer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.frame_timer import FrameTimer, next_tick


def test_a_late_tick_is_followed_by_the_next_period_boundary() -> None:
    # Ticks every 1.0 from 0; tick 5 (at 5.0) ends at 7.3: the next is 8.0 (Textual's: 9.0).
    assert next_tick(0.0, 1.0, 5, 7.3) == (7, 8.0)
    # On time: the next tick is the next one.
    assert next_tick(0.0, 1.0, 5, 5.5) == (5, 6.0)
    assert next_tick(0.0, 1.0, 5, 6.0) == (5, 6.0)
    # A tick resumed long after its boundary (the clock was paused) ends at 40.2: next at 41.0.
    assert next_tick(10.0, 1.0, 3, 40.2) == (30, 41.0)


class FakeClock:
    """Textual's clock and sleep for the timer under test only: sleeping moves the clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def get_time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)


async def test_the_timer_ticks_at_the_next_boundary_after_a_long_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frame of 2.3 periods (tick 1, from 1.0 to 3.3) is followed by tick 4 at 4.0; Textual's
    Timer skipped to 5.0."""
    clock = FakeClock()
    monkeypatch.setattr(frame_timer, "_time", clock)
    monkeypatch.setattr(frame_timer, "sleep", clock.sleep)
    ticks: list[float] = []

    def tick() -> None:
        ticks.append(clock.now)
        if len(ticks) == 1:
            clock.now += 2.3  # a long frame

    app = App[None]()
    async with app.run_test() as pilot:
        timer = FrameTimer(app, 1.0, callback=tick)
        timer._start()
        await wait_until(pilot, lambda: len(ticks) >= 3, 30)
        timer.stop()
    assert ticks[:3] == pytest.approx([1.0, 4.0, 5.0])


async def test_the_main_screen_draws_its_frames_from_it(app: TurnstoneApp) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        timer: Timer = app.main._update_timer
        assert isinstance(timer, FrameTimer)
        assert app.main._update_timer is timer  # made once
        drawn: list[bool] = []
        app.main.query_one("#status-bar").refresh()
        app.main.call_after_refresh(lambda: drawn.append(True))
        await wait_until(pilot, lambda: drawn, 30)
