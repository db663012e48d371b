"""Keys before output in the app: the terminal driver marks each key on the input gate as its input
thread reads it, and the app opens the gate once a frame showing the key has been drawn."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import pytest
from textual import events
from textual.app import App
from textual.drivers.headless_driver import HeadlessDriver
from textual.message import Message

from tests.app.helpers import start, start_four_floods, wait_until
from tests.helpers.model_server import ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.input_driver import input_gated
from turnstone_tui.core import input_gate
from turnstone_tui.core.input_gate import GATE, InputGate
from turnstone_tui.widgets import pane_grid

SIZE = (110, 34)


@pytest.fixture
def long_holds(monkeypatch: pytest.MonkeyPatch):
    """Holds no slow machine outlasts: the gate opens because the app says so, not by a bound."""
    monkeypatch.setattr(input_gate, "MAX_HOLD", 600.0)
    monkeypatch.setattr(input_gate, "MAX_HELD_IN_A_ROW", 600.0)
    yield
    GATE.shown(time.monotonic())


async def test_the_driver_marks_a_key_on_the_gate_from_its_input_thread(long_holds: None) -> None:
    GATE.shown(time.monotonic())
    driver = input_gated(HeadlessDriver)(App())
    passed_on: list[Message] = []
    driver.send_message = passed_on.append  # type: ignore[method-assign]
    key = events.Key("x", "x")
    reader = threading.Thread(target=driver.process_message, args=(key,))  # as the input thread does
    reader.start()
    reader.join()
    assert GATE.held
    assert passed_on == [key]
    GATE.shown(time.monotonic())
    driver.process_message(events.Resize.from_dimensions((80, 24), None))  # not a key: no hold
    assert not GATE.held


def test_the_app_runs_on_the_gated_driver_of_its_platform(app: TurnstoneApp) -> None:
    assert app.driver_class is input_gated(App().get_driver_class())
    assert app.driver_class.__name__.startswith("InputGated")


def record_prompt_frames(app: TurnstoneApp, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The prompt's text at each frame the app draws from now on."""
    drawn: list[str] = []
    display = app._display

    def record_display(screen, renderable) -> None:  # type: ignore[no-untyped-def]
        display(screen, renderable)
        if renderable is not None:
            drawn.append(app.prompt.text)

    monkeypatch.setattr(app, "_display", record_display)
    return drawn


async def test_keys_typed_during_a_flood_open_the_gate_once_their_frame_is_drawn(
    app: TurnstoneApp, model_server: ScriptedModelServer, long_holds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four endless floods run; for each key (marked on the gate as the driver does) the gate opens
    only after a frame with the key in the prompt was drawn, and the panes stream on between keys."""
    async with app.run_test(size=SIZE) as pilot:
        streamed = await start_four_floods(pilot, model_server)
        app.prompt.focus()
        await pilot.pause()
        drawn = record_prompt_frames(app, monkeypatch)  # the prompt's text at each frame drawn
        opened_after: list[str | None] = []  # the last frame's prompt text when the gate opened

        def shown(upto: float) -> None:
            if GATE.held:
                opened_after.append(drawn[-1] if drawn else None)
            InputGate.shown(GATE, upto)

        monkeypatch.setattr(GATE, "shown", shown)
        for typed in ("h", "hi"):
            before = streamed()
            GATE.key_read()
            app.post_message(events.Key(typed[-1], typed[-1]))
            await wait_until(pilot, lambda: not GATE.held, 30, "the gate open again")
            assert opened_after[-1] == typed  # not before a frame showed the key
            await wait_until(
                pilot,
                lambda: all(now > then for now, then in zip(streamed(), before, strict=True)),  # noqa: B023
                30,
                "every pane receiving output again",
            )
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.turns_finished == 1, 30, "the cancelled turn")


async def test_a_held_gate_holds_the_panes_flush(long_holds: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Output queued for the panes while a key is on its way waits for the key's frame, even when
    it has waited longer than the panes hold output for typing (MAX_INPUT_HOLD: that flush, forced
    every 0.25 s while the user types, no longer lands in the middle of a key's way)."""
    from tests.app.test_panes import PanesHarness

    monkeypatch.setattr(pane_grid, "MAX_INPUT_HOLD", 0.05)
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "seq 1 3")
        await pilot.pause()
        GATE.key_read()
        panes.write_lines("c1", ["1", "2", "3"])
        await asyncio.sleep(0.3)
        await pilot.pause()
        assert pane.lines == []  # held while the key is on its way
        GATE.shown(time.monotonic())
        await wait_until(pilot, lambda: pane.lines == ["1", "2", "3"], 10, "the held output")


async def test_a_key_s_frame_is_drawn_as_the_key_is_handled_not_by_the_update_timer(
    app: TurnstoneApp, long_holds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual draws from the screen's update timer, on a 1/60 s grid (a key handled just after a
    slow frame waited for the grid's next point); a key's frame is drawn once the key is handled,
    without the timer (stopped here), and the gate opens after it; also for a key that adds a line
    to the prompt (a layout)."""
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.prompt.focus()
        await pilot.pause()
        drawn = record_prompt_frames(app, monkeypatch)  # the prompt's text at each frame drawn
        timer = app.screen._update_timer
        resume, stalled = timer.resume, [True]
        timer.pause()
        monkeypatch.setattr(timer, "resume", lambda: None if stalled[0] else resume())  # never ticks
        opened = asyncio.Event()

        def shown(upto: float) -> None:
            InputGate.shown(GATE, upto)
            if not GATE.held:
                opened.set()

        monkeypatch.setattr(GATE, "shown", shown)
        for key, character, typed in (
            ("h", "h", "h"),
            ("i", "i", "hi"),
            ("ctrl+j", None, "hi\n"),
            ("x", "x", "hi\nx"),
        ):
            opened.clear()
            GATE.key_read()
            app.post_message(events.Key(key, character))  # (Pilot.press would draw a frame itself)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(opened.wait(), 30)
            assert not GATE.held, "the gate stayed held: no frame showed the key"
            assert app.prompt.text == typed
            assert drawn[-1] == typed
        stalled[0] = False
        resume()


async def test_the_main_screen_draws_no_frame_while_a_key_read_has_not_reached_the_app(
    app: TurnstoneApp, long_holds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame drawn between the terminal's input thread reading a key and the app taking it
    (the panes' output, a spinner) held the key back by the frame's length: the main screen puts
    its frames off meanwhile (the key's own frame is drawn as it is handled)."""
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        drawn = record_prompt_frames(app, monkeypatch)  # the prompt's text at each frame drawn
        GATE.key_read()  # read by the input thread, not handed to the app yet
        app.prompt.load_text("output arrived meanwhile")  # something to draw
        await asyncio.sleep(0.5)  # thirty update ticks
        assert "output arrived meanwhile" not in drawn
        GATE.dispatched(time.monotonic())  # the app took it
        await wait_until(pilot, lambda: "output arrived meanwhile" in drawn, 30, "the frame")
