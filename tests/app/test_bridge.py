"""The UI bridge: engine callbacks become app messages, in order, with streams coalesced."""

from __future__ import annotations

import asyncio
import re

from textual import on
from textual.app import App, ComposeResult
from textual.widgets import Static

from tests.app.helpers import start, wait_until
from tests.helpers.model_server import ScriptedModelServer
from turnstone_tui.app import messages as m
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.ui_bridge import TextualSessionUI
from turnstone_tui.core.protocol import SessionUI
from turnstone_tui.core.types import ApprovalDecision, PreparedItem, SessionState, ToolResult


class Recorder(App[None]):
    """Records every engine message it receives, flattening stream batches."""

    def __init__(self, *, answer: bool = True) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []
        self.batches = 0
        self.answer = answer
        self.asked: list[m.ApprovalRequested] = []

    def compose(self) -> ComposeResult:
        yield Static("recorder")

    @on(m.EngineMessage)
    def record(self, message: m.EngineMessage) -> None:
        if isinstance(message, m.StreamBatch):
            self.batches += 1
            items, message.buffer.items[:] = list(message.buffer.items), []
            for item in items:
                if isinstance(item, m.TextPiece):
                    self.events.append((item.kind, item.text))
                else:
                    self.events.extend(("output", f"{item.call_id}:{line}") for line in item.lines)
            message.buffer.consumed = True
        elif isinstance(message, m.ApprovalRequested) and not self.answer:
            self.asked.append(message)
            self.events.append((type(message).__name__, ""))
        elif isinstance(message, m.ApprovalRequested) and self.answer:
            self.events.append(("approval", ",".join(i.call_id for i in message.items)))
            message.future.set_result(ApprovalDecision(approved=True, always=frozenset({"bash"})))
        else:
            self.events.append((type(message).__name__, ""))


def test_bridge_implements_the_protocol() -> None:
    assert isinstance(TextualSessionUI(App()), SessionUI)


async def test_stream_is_coalesced_and_ordered_around_discrete_events() -> None:
    app = Recorder()
    async with app.run_test() as pilot:
        ui = TextualSessionUI(app)
        ui.bind_loop(asyncio.get_running_loop())
        ui.on_turn_start("hi")
        for token in ["Hel", "lo", " wor", "ld"]:
            ui.on_content_token(token)
        ui.on_reasoning_token("hmm")
        ui.on_content_token("!")
        ui.on_message_end()
        for i in range(1000):
            ui.on_tool_output("c1", [f"line {i}"], "stdout")
        ui.on_tool_result("c1", "bash", ToolResult("ok"))
        ui.on_state(SessionState.IDLE)
        ui.on_turn_end()
        await wait_until(pilot, lambda: app.events and app.events[-1][0] == "TurnEnded")
        kinds = [kind for kind, _ in app.events]
        assert kinds[0] == "TurnStarted"
        assert app.events[1:4] == [("content", "Hello world"), ("reasoning", "hmm"), ("content", "!")]
        assert kinds[4] == "MessageEnded"
        outputs = [text for kind, text in app.events if kind == "output"]
        assert outputs == [f"c1:line {i}" for i in range(1000)]
        assert kinds[-3:] == ["ToolFinished", "StateChanged", "TurnEnded"]
        assert app.batches == 2  # one for the answer, one for 1000 output lines


async def test_approval_question_is_answered_through_a_future() -> None:
    app = Recorder()
    async with app.run_test():
        ui = TextualSessionUI(app)
        item = PreparedItem(call_id="c7", func_name="bash", args={"command": "ls"}, header="bash: ls")
        decision = await asyncio.wait_for(ui.approve_tools([item]), 5)
        assert decision.approved and decision.always == frozenset({"bash"})
        assert ("approval", "c7") in app.events


async def test_an_answer_reaches_the_engine_on_the_next_loop_turn() -> None:
    """The engine resumes one loop turn after the answer (through asyncio.shield it took three:
    the frame due meanwhile, a repaint of the whole screen under the closing modal, ran first)."""
    app = Recorder(answer=False)
    async with app.run_test() as pilot:
        ui = TextualSessionUI(app)
        item = PreparedItem(call_id="c9", func_name="bash", args={}, header="bash")
        task = asyncio.create_task(ui.approve_tools([item]))
        await wait_until(pilot, lambda: ("ApprovalRequested", "") in app.events)
        requested = next(q for q in app.asked)
        requested.future.set_result(ApprovalDecision(approved=True))
        await asyncio.sleep(0)
        assert task.done() and task.result().approved


async def test_a_withdrawn_question_is_reported() -> None:
    app = Recorder(answer=False)
    async with app.run_test() as pilot:
        ui = TextualSessionUI(app)
        item = PreparedItem(call_id="c8", func_name="bash", args={}, header="bash")
        task = asyncio.create_task(ui.approve_tools([item]))
        await wait_until(pilot, lambda: ("ApprovalRequested", "") in app.events)
        assert not task.done()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await wait_until(pilot, lambda: ("QuestionWithdrawn", "") in app.events)


async def test_no_color_is_respected(
    monkeypatch, app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    plain = TurnstoneApp(app.runtime, cwd=app.cwd)
    async with plain.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        assert plain.no_color
        svg = plain.export_screenshot()
    # The monochrome filter turns every colour into a grey: no saturated accent colours remain.
    colours = set(re.findall(r"fill: (#[0-9a-f]{6})", svg))

    def spread(colour: str) -> int:
        channels = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
        return max(channels) - max(0, min(channels))

    saturated = [c for c in colours if spread(c) > 8]  # the SVG frame's own #c5c8c6 is near-grey
    assert len(colours) > 3 and not saturated, saturated
