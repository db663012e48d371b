"""The stream applier's slices: streamed items (output lines, answer text) give the loop back after
about STREAM_SLICE_SECONDS; discrete events queued behind them (tools finishing) are applied
together, not one per frame."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from turnstone_tui.app import messages as m
from turnstone_tui.app import stream_applier
from turnstone_tui.app.stream_applier import StreamApplier
from turnstone_tui.core.types import ToolResult


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
