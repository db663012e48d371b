"""Pilot tests: a real MCP server asks the app for a form and to sample; the user answers in modals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, Static, Switch, TextArea

from tests.helpers.mcp_servers import asking_server
from turnstone_tui.app.screens.elicitation import ElicitationScreen
from turnstone_tui.app.screens.sampling import SampleReviewScreen, SamplingApprovalScreen
from turnstone_tui.app.server_asks import AppServerAsks
from turnstone_tui.core.mcp_bridge import ServerState
from turnstone_tui.core.types import ToolResult
from turnstone_tui.mcp.asks import SampleResult, SamplingRequest
from turnstone_tui.mcp.manager import McpManager

pytestmark = pytest.mark.timeout(120)


class Harness(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("main")


async def until(predicate: Callable[[], Any], limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.fixture
async def manager() -> AsyncIterator[McpManager]:
    manager = McpManager({"asking": asking_server()}, connect_timeout=30, call_timeout=60)
    await manager.start()
    await manager.wait_ready(40)
    assert manager.status("asking").state is ServerState.CONNECTED  # type: ignore[union-attr]

    async def sampler(request: SamplingRequest) -> SampleResult:
        return SampleResult("A cat sat.", "scripted-model")

    manager.set_sampler(sampler)
    try:
        yield manager
    finally:
        await manager.aclose()


async def test_form_shows_defaults_validates_then_sends(manager: McpManager) -> None:
    app = Harness()
    async with app.run_test(size=(100, 40)) as pilot:
        manager.set_asks(AppServerAsks(app, lambda: "scripted-model"))
        call: asyncio.Task[ToolResult] = asyncio.create_task(manager.call_tool("mcp__asking__book_table", {}))
        await until(lambda: isinstance(app.screen, ElicitationScreen))
        screen = app.screen
        await pilot.pause()
        assert screen.query_one("#field-name", Input).value == "Ada"  # defaults pre-filled
        assert screen.query_one("#field-guests", Input).value == "2"
        assert screen.query_one("#field-outside", Switch).value is True

        await pilot.press("ctrl+s")  # email is required and empty: not sent
        await pilot.pause()
        assert app.screen is screen and not call.done()
        assert "required" in str(screen.query_one("#hint-email", Static).render())
        assert screen.query_one("#row-email").has_class("-invalid")

        screen.query_one("#field-email", Input).focus()
        await pilot.press(*"ada@example.com")
        guests = screen.query_one("#field-guests", Input)
        guests.value = "9"  # over the maximum of 8
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "must be at most 8" in str(screen.query_one("#hint-guests", Static).render())
        guests.value = "3"
        screen.query_one("#field-outside", Switch).value = False
        await pilot.press("ctrl+s")
        result = await asyncio.wait_for(call, 30)
        assert (
            result.text == "booked: email='ada@example.com', guests=3, name='Ada', outside=False, time='20'"
        )
        assert not isinstance(app.screen, ElicitationScreen)


@pytest.mark.parametrize(("key", "answer"), [("ctrl+d", "decline"), ("escape", "cancel")])
async def test_form_decline_and_cancel(manager: McpManager, key: str, answer: str) -> None:
    app = Harness()
    async with app.run_test(size=(100, 40)) as pilot:
        manager.set_asks(AppServerAsks(app))
        call = asyncio.create_task(manager.call_tool("mcp__asking__book_table", {}))
        await until(lambda: isinstance(app.screen, ElicitationScreen))
        await pilot.press(key)
        assert (await asyncio.wait_for(call, 30)).text == f"booking {answer}"


async def test_url_mode_asks_before_opening(manager: McpManager) -> None:
    opened: list[str] = []
    manager.client_side.open_url = opened.append
    app = Harness()
    async with app.run_test(size=(100, 40)) as pilot:
        manager.set_asks(AppServerAsks(app))
        call = asyncio.create_task(
            manager.call_tool("mcp__asking__open_page", {"url": "https://example.com/x"})
        )
        await until(lambda: isinstance(app.screen, ElicitationScreen))
        assert "https://example.com/x" in str(app.screen.query_one("#elicit-url", Static).render())
        assert opened == []  # nothing opens before the user says so
        await pilot.press("enter")  # the Open button has focus
        assert (await asyncio.wait_for(call, 30)).text == "page accept"
        assert opened == ["https://example.com/x"]


async def test_sampling_approve_edit_send(manager: McpManager) -> None:
    app = Harness()
    async with app.run_test(size=(100, 40)) as pilot:
        manager.set_asks(AppServerAsks(app, lambda: "scripted-model"))
        call = asyncio.create_task(
            manager.call_tool("mcp__asking__summarize", {"text": "The cat sat on the mat."})
        )
        await until(lambda: isinstance(app.screen, SamplingApprovalScreen))
        await pilot.pause()
        shown = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "The cat sat on the mat." in shown and "Summarize in one line." in shown and "77" in shown
        await pilot.press("y")
        await until(lambda: isinstance(app.screen, SampleReviewScreen))
        editor = app.screen.query_one("#sample-text", TextArea)
        assert editor.text == "A cat sat."
        editor.text = "A cat sat (edited)."
        await pilot.press("ctrl+s")
        assert (await asyncio.wait_for(call, 30)).text == "summary (scripted-model): A cat sat (edited)."


async def test_sampling_refused_and_answer_denied(manager: McpManager) -> None:
    app = Harness()
    async with app.run_test(size=(100, 40)) as pilot:
        manager.set_asks(AppServerAsks(app))
        call = asyncio.create_task(manager.call_tool("mcp__asking__summarize", {"text": "x"}))
        await until(lambda: isinstance(app.screen, SamplingApprovalScreen))
        await pilot.press("n")
        assert "rejected the sampling request" in (await asyncio.wait_for(call, 30)).text

        call = asyncio.create_task(manager.call_tool("mcp__asking__summarize", {"text": "x"}))
        await until(lambda: isinstance(app.screen, SamplingApprovalScreen))
        await pilot.press("y")
        await until(lambda: isinstance(app.screen, SampleReviewScreen))
        await pilot.press("escape")
        assert "denied the sampled answer" in (await asyncio.wait_for(call, 30)).text


async def test_progress_reaches_the_tool_card_and_panel_logs(manager: McpManager, tmp_path) -> None:
    """A real call through the MCP executor: the bridge posts progress, the card shows it; the panel
    shows the server's progress and log, error logs pop up as toasts."""
    from textual.containers import Vertical

    from turnstone_tui.app import messages as m
    from turnstone_tui.app.server_asks import server_errors_as_toasts
    from turnstone_tui.app.ui_bridge import TextualSessionUI
    from turnstone_tui.config import Config
    from turnstone_tui.core.registry import default_registry
    from turnstone_tui.core.tools import ToolContext
    from turnstone_tui.core.types import ExecContext, PreparedItem
    from turnstone_tui.executors.mcp_tools import prepare_mcp_tool
    from turnstone_tui.widgets.mcp_panel import McpPanel
    from turnstone_tui.widgets.tool_card import ToolCard

    class CardHarness(App[None]):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []
            self.card: ToolCard | None = None

        def compose(self) -> ComposeResult:
            yield Vertical(id="cards")
            yield McpPanel(manager)

        def on_tool_progress(self, message: m.ToolProgress) -> None:
            self.seen.append(message.text)
            if self.card is not None:
                self.card.set_progress(message.text)

    app = CardHarness()
    async with app.run_test(size=(120, 40)) as pilot:
        manager.add_listener(server_errors_as_toasts(app))
        bridge = TextualSessionUI(app)
        ctx = ToolContext(
            config=Config(), registry=default_registry(), cwd=tmp_path, session_id="s", ui=bridge, mcp=manager
        )
        item: PreparedItem = await prepare_mcp_tool(
            ctx, "c1", "mcp__asking__steps", {"count": 4, "pause": 0.4}
        )
        app.card = ToolCard(item)
        await app.query_one("#cards").mount(app.card)
        app.card.mark_running()
        assert item.execute is not None
        run = asyncio.create_task(item.execute(ExecContext("c1", lambda text, stream: None)))
        await until(lambda: any("50% step 2 of 4" == t for t in app.seen))
        await pilot.pause()
        assert "50% step 2 of 4" in str(app.card._status_view.render()) or "75%" in str(
            app.card._status_view.render()
        )
        panel = app.query_one(McpPanel)
        await until(lambda: "⟳" in str(panel._server_nodes["asking"].label))
        assert (await asyncio.wait_for(run, 30)).text == "did 4 steps"
        await until(lambda: "⟳" not in str(panel._server_nodes["asking"].label))

        await until(lambda: len(manager.logs("asking")) == 3)
        panel.server_tree.focus()
        await pilot.press("v")
        await pilot.pause()
        log_text = str(panel.query_one("#mcp-log", Static).render())
        assert "asking log" in log_text
        assert "info starting the steps" in log_text and "erro a step complained" in log_text
        await until(lambda: any("a step complained" in n.message for n in app._notifications))
        await pilot.press("v")
        await pilot.pause()
        assert not panel.query_one("#mcp-log").display
