"""The input gate: a key read holds bulk work back until its frame is shown (or a bound runs out)."""

from __future__ import annotations

import asyncio

import pytest

from turnstone_tui.core import input_gate
from turnstone_tui.core.input_gate import InputGate


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_holds_until_its_frame_is_shown() -> None:
    clock = Clock()
    gate = InputGate(clock)
    assert not gate.held
    gate.key_read()
    assert gate.held
    clock.now += 0.01
    gate.shown(clock.now)
    assert not gate.held


def test_a_newer_key_still_on_its_way_keeps_the_gate_held() -> None:
    clock = Clock()
    gate = InputGate(clock)
    gate.key_read()
    dispatched = clock.now + 0.001  # the first key reached the app; a second was read after it
    clock.now += 0.002
    gate.key_read()
    gate.shown(dispatched)
    assert gate.held
    clock.now += 0.003
    gate.shown(clock.now)
    assert not gate.held


def test_a_key_never_reported_shown_holds_no_longer_than_max_hold() -> None:
    clock = Clock()
    gate = InputGate(clock)
    gate.key_read()
    clock.now += input_gate.MAX_HOLD * 0.9
    assert gate.held
    clock.now += input_gate.MAX_HOLD * 0.2
    assert not gate.held


async def test_keys_that_keep_coming_hold_output_no_longer_than_max_held_in_a_row() -> None:
    """A user who keeps typing faster than the frames show the keys does not freeze the output:
    after MAX_HELD_IN_A_ROW of holding, output goes on."""
    clock = Clock()
    gate = InputGate(clock)
    gate.key_read()
    waiter = asyncio.ensure_future(gate.wait_open())
    await asyncio.sleep(0)
    assert not waiter.done()  # the pump waits
    step = input_gate.MAX_HOLD / 2
    held_for = 0.0
    while held_for < input_gate.MAX_HELD_IN_A_ROW:
        clock.now += step
        held_for += step
        gate.key_read()  # the next key, before the last was shown
        assert gate.held
    clock.now += step
    gate.key_read()
    assert not gate.held
    waiter.cancel()


async def test_waiting_ends_when_the_frame_is_shown() -> None:
    gate = InputGate()
    gate.key_read()
    waiter = asyncio.ensure_future(gate.wait_open())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    gate.shown(input_gate.time.monotonic())
    await asyncio.wait_for(waiter, 30)


async def test_waiting_ends_when_the_hold_runs_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(input_gate, "MAX_HOLD", 0.05)
    gate = InputGate()
    gate.key_read()
    await asyncio.wait_for(gate.wait_open(), 30)  # nobody says shown: the bound opens it
    assert not gate.held


async def test_an_open_gate_does_not_wait() -> None:
    gate = InputGate()
    await asyncio.wait_for(gate.wait_open(), 30)
    gate.key_read()
    gate.shown(input_gate.time.monotonic())
    await asyncio.wait_for(gate.wait_open(), 30)


def test_a_key_is_undispatched_until_the_app_takes_it_and_for_max_hold_at_most() -> None:
    clock = Clock()
    gate = InputGate(clock)
    assert not gate.undispatched
    gate.key_read()
    assert gate.undispatched
    clock.now += 0.001
    gate.dispatched(clock.now)
    assert not gate.undispatched and gate.held  # taken, not yet on the screen
    clock.now += 0.001
    gate.key_read()
    assert gate.undispatched
    clock.now += input_gate.MAX_HOLD + 0.001
    assert not gate.undispatched  # never taken: the screen draws again after MAX_HOLD
