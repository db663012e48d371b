"""The stream applier's slices: streamed items (output lines, answer text) give the loop back after
about STREAM_SLICE_SECONDS; discrete events queued behind them (tools finishing) are applied
together, not one per frame."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

from tests.app.helpers import answers, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app import messages as m
from turnstone_tui.app import stream_applier
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.approval import ApprovalScreen
from turnstone_tui.app.stream_applier import StreamApplier
from turnstone_tui.core.types import ToolResult
from turnstone_tui.widgets.tool_card import ToolCard

T = TypeVar("T")


class FakePanes:
    def __init__(self) -> None:
        self.written: list[str] = []

    def __contains__(self, call_id: object) -> bool:
        return True

    def write_lines(self, call_id: str, lines: list[str], stream: str) -> None:
        self.written.append(call_id)


def applier_with_slow_finish(applied: list[str]) -> tuple[StreamApplier, list[Any]]:
    continuations: list[Any] = []
    app = SimpleNamespace(
        chat=SimpleNamespace(),
        panes=FakePanes(),
        status_bar=SimpleNamespace(activity=""),
        call_later=continuations.append,
    )
    applier = StreamApplier(
        app,
        SimpleNamespace(
            ask_approval=None, ask_plan_review=None, ask_escalation=None, withdraw=None, state_changed=None
        ),
    )  # type: ignore[arg-type]

    def finished(message: m.ToolFinished) -> None:
        time.sleep(0.002)  # a card and a pane changing: longer than a slice
        applied.append(message.call_id)

    applier._handlers[m.ToolFinished] = finished
    return applier, continuations


async def test_tools_finishing_behind_output_are_applied_in_one_slice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stream_applier, "STREAM_SLICE_SECONDS", 0.0)
    applied: list[str] = []
    applier, continuations = applier_with_slow_finish(applied)
    # Output is waiting (the slice before ran out), then four results arrive behind it.
    applier._backlog.append(m.OutputLines("c0", "stdout", ["slept0"]))
    applier._slice_queued = True
    for n in range(4):
        await applier.receive(m.ToolFinished(f"c{n}", "bash", ToolResult("ok")))
    assert applied == [] and continuations == []  # queued behind the output, in order
    await applier._continue()
    assert applied == ["c0", "c1", "c2", "c3"], "each result waited for a frame of its own"
    assert applier.caught_up


async def test_streamed_items_still_wait_for_the_next_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_applier, "STREAM_SLICE_SECONDS", 0.0)
    applied: list[str] = []
    applier, continuations = applier_with_slow_finish(applied)
    applier._backlog.append(m.OutputLines("c0", "stdout", ["a"]))
    applier._slice_queued = True
    await applier.receive(m.ToolFinished("c0", "bash", ToolResult("ok")))
    applier._backlog.extend([m.OutputLines("c1", "stdout", ["b"]), m.OutputLines("c1", "stdout", ["c"])])
    await applier._continue()
    # The output line, the result, then the slice is over: the rest of the output waits.
    assert applied == ["c0"] and applier._app.panes.written == ["c0"]
    assert len(applier._backlog) == 2 and len(continuations) == 1


# --- finished calls held for the next thing the chat shows ----------------------------------


async def frames_of_an_approved_batch(
    app: TurnstoneApp, frame: Callable[[], T], answer: str = "Both ran."
) -> list[T]:
    """Run the app through the scripted batch (approved with y) until ``answer`` is shown and the
    turn ended; ``frame()`` noted at every frame drawn of the main screen from the approval on,
    and once more at the end."""
    frames: list[T] = []
    async with app.run_test(size=(100, 40)) as pilot:
        await start(pilot)
        await send(pilot, "run both", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), 20, "the approval modal")
        screen = app.screen_stack[0]
        refresh = screen._compositor_refresh

        def drawn() -> None:
            frames.append(frame())
            refresh()

        screen._compositor_refresh = drawn  # type: ignore[method-assign]
        await pilot.press("y")
        await wait_until(pilot, lambda: answer in answers(app), 30, "the answer")
        await wait_until(pilot, lambda: not app.busy, 20)
        assert app.applier.caught_up
        frames.append(frame())
    return frames


def card_statuses(app: TurnstoneApp) -> list[str]:
    return [card.status for card in app.query(ToolCard)]


async def test_a_batch_s_results_are_drawn_with_the_answer_not_frames_of_their_own(
    app: TurnstoneApp, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finished call's card and pane changing were a restyle and a full layout drawn at once:
    while the rest of the batch was ending (their ends read a frame late) and while the request
    for the answer was out (the reply read behind that frame). Held until the next thing the chat
    shows, the results are drawn in the frame that shows the answer. (The hold is made long here,
    so the answer always comes within it.)"""
    monkeypatch.setattr(stream_applier, "FINISH_HOLD_SECONDS", 60.0)
    model_server.script(
        [
            Reply.tools(
                [
                    ("bash", {"command": "echo first"}, "call_a"),
                    ("bash", {"command": "sleep 0.5; echo second"}, "call_b"),
                ]
            ),
            Reply.text("Both ran."),
        ]
    )
    frames = await frames_of_an_approved_batch(app, lambda: (card_statuses(app), bool(answers(app))))
    assert frames[-1] == (["ok", "ok"], True)
    shown_early = [statuses for statuses, answered in frames if "ok" in statuses and not answered]
    assert not shown_early, f"frames drew finished cards before the answer: {shown_early}"
    assert any(statuses == ["ok", "ok"] and answered for statuses, answered in frames)


async def test_the_state_thinking_is_drawn_with_the_held_results_not_in_a_frame_of_its_own(
    app: TurnstoneApp, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a batch ends the session goes running -> thinking while the request for the answer is
    out. The state's label changes width (a full layout of the screen), and drawn at once that frame
    held the loop when the reply came (read behind it). The state now waits with the held results:
    no frame shows "thinking" with a call still drawn running; the results, the state and the answer
    are drawn together. (The hold is made long here, so the answer always comes within it.)"""
    monkeypatch.setattr(stream_applier, "FINISH_HOLD_SECONDS", 60.0)
    model_server.script(
        [
            Reply.tools(
                [("bash", {"command": "echo one"}, "call_a"), ("bash", {"command": "echo two"}, "call_b")]
            ),
            Reply.text("Both ran.", delay=0.05),
        ]
    )
    frames = await frames_of_an_approved_batch(app, lambda: (card_statuses(app), app.status_bar.state.value))
    early = [(statuses, state) for statuses, state in frames if state == "thinking" and "ok" not in statuses]
    assert not early, f"frames drew the state thinking before the results: {early}"
    assert any(state == "thinking" and statuses == ["ok", "ok"] for statuses, state in frames), frames
    assert frames[-1] == (["ok", "ok"], "idle")


async def test_a_finished_call_is_shown_within_the_hold_while_the_model_is_silent(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    """Nothing else to show (the model takes its time): the card and the pane change on their own."""
    model_server.script(
        [
            Reply.tools([("bash", {"command": "echo alone"}, "call_a")]),
            Reply.stall(30.0),
        ]
    )
    async with app.run_test(size=(100, 40)) as pilot:
        await start(pilot)
        await send(pilot, "run it", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), 20, "the approval modal")
        await pilot.press("y")
        card = app.query_one(ToolCard)
        await wait_until(pilot, lambda: card.status == "ok", 30, "the card to show the result")
        assert app.busy and not answers(app)  # (the model still says nothing)
        panes = app.main.mounted_panes
        assert panes is None or "call_a" not in panes.call_ids
        assert app.applier.caught_up
