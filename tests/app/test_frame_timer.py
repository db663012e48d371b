"""The main screen's frame clock goes on at the next period after a tick a little longer than a
period, not the one after; after a long tick (a starved app) it skips as Textual's timer does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from textual.app import App
from textual.timer import Timer

from tests.app.helpers import wait_until
from turnstone_tui.app import frame_timer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.frame_timer import FrameTimer, next_tick


def test_a_short_late_tick_is_followed_by_the_next_period_boundary() -> None:
    # Ticks every 1.0 from 0; tick 5 (5.0 -> 6.3, 1.3 periods) ended late: next at 7.0 (Textual: 8.0).
    assert next_tick(0.0, 1.0, 5, 6.3, 5.0) == (6, 7.0)
    # On time: the next tick is the next one.
    assert next_tick(0.0, 1.0, 5, 5.5, 5.0) == (5, 6.0)
    assert next_tick(0.0, 1.0, 5, 6.0, 5.0) == (5, 6.0)
    # A tick resumed long after its boundary (the clock was paused), 0.2 periods long: next at 41.0.
    assert next_tick(10.0, 1.0, 3, 40.2, 40.0) == (30, 41.0)


def test_a_long_tick_skips_as_textuals_timer_does() -> None:
    # Tick 5 (5.0 -> 7.3, 2.3 periods): a starved app; the next at 9.0, as Textual's Timer._run.
    assert next_tick(0.0, 1.0, 5, 7.3, 5.0) == (8, 9.0)


class FakeClock:
    """Textual's clock and sleep for the timer under test only: sleeping moves the clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def get_time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)


def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The frame timer's clock and sleep replaced by a FakeClock."""
    clock = FakeClock()
    monkeypatch.setattr(frame_timer, "_time", clock)
    monkeypatch.setattr(frame_timer, "sleep", clock.sleep)
    return clock


async def first_three_ticks(make_timer: Callable[[App[None]], FrameTimer], ticks: list[float]) -> list[float]:
    """Start the timer ``make_timer`` builds in a running app; the times of its first three ticks
    (its callback appends them to ``ticks``)."""
    app = App[None]()
    async with app.run_test() as pilot:
        timer = make_timer(app)
        timer._start()
        await wait_until(pilot, lambda: len(ticks) >= 3, 30)
        timer.stop()
    return ticks[:3]


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (1.3, [1.0, 3.0, 4.0]),  # Textual's Timer: 1.0, 4.0, 5.0
        (2.3, [1.0, 5.0, 6.0]),  # as Textual's
    ],
)
async def test_the_timer_after_a_long_tick(
    monkeypatch: pytest.MonkeyPatch, length: float, expected: list[float]
) -> None:
    """Tick 1 (at 1.0) takes ``length`` periods; where do the next two come?"""
    clock = fake_clock(monkeypatch)
    ticks: list[float] = []

    def tick() -> None:
        ticks.append(clock.now)
        if len(ticks) == 1:
            clock.now += length

    assert await first_three_ticks(lambda app: FrameTimer(app, 1.0, callback=tick), ticks) == pytest.approx(
        expected
    )


async def test_a_tick_that_drew_nothing_ticks_again_when_resumed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tick 1 (at 1.0) finds a batch update open: the screen pauses the clock and calls retick();
    resumed at 1.3 (the batch closed), the clock ticks at once, then on its grid (2.0). Textual's
    timer, and this one without retick(), tick at 2.0 and 3.0."""
    clock = fake_clock(monkeypatch)
    ticks: list[float] = []
    timer: FrameTimer

    def resume_at(when: float) -> None:
        clock.now = max(clock.now, when)
        timer.resume()

    def tick() -> None:
        ticks.append(clock.now)
        if len(ticks) == 1:
            timer.pause()  # (as Screen._on_timer_update does)
            timer.retick()
            asyncio.get_running_loop().call_soon(resume_at, 1.3)

    def make_timer(app: App[None]) -> FrameTimer:
        nonlocal timer
        timer = FrameTimer(app, 1.0, callback=tick)
        return timer

    assert await first_three_ticks(make_timer, ticks) == pytest.approx([1.0, 1.3, 2.0])


async def test_a_frame_held_by_a_batch_update_asks_for_a_retick(app: TurnstoneApp) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        timer = app.main._update_timer
        assert isinstance(timer, FrameTimer)
        asked: list[bool] = []
        timer.retick = lambda: asked.append(True)  # type: ignore[method-assign]
        with app.batch_update():
            app.main.query_one("#status-bar").refresh(layout=True)
            app.main._on_timer_update()  # a tick inside the batch: nothing drawn
        assert asked == [True]
        app.main._on_timer_update()  # outside a batch: no retick
        assert asked == [True]


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
