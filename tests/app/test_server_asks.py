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
