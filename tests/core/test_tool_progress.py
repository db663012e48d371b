"""MCP progress reaches every front end through the typed UI protocol (SessionUI.on_tool_progress),
not only the Textual one: a real session, the scripted model, a real MCP server reporting progress."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.helpers.mcp_servers import asking_server, stdio_server
from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.core.protocol import SessionUI
from turnstone_tui.core.subagent import SubagentUI
from turnstone_tui.core.types import PreparedItem
from turnstone_tui.headless import HeadlessUI
from turnstone_tui.mcp.manager import McpManager
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def asking_mcp() -> AsyncIterator[McpManager]:
    manager = McpManager({"asking": asking_server()}, connect_timeout=60, call_timeout=30)
    await manager.start()
    await manager.wait_ready(90)
    try:
        yield manager
    finally:
        await manager.aclose()


async def test_progress_of_a_running_mcp_tool_reaches_the_ui(
    model_server: ScriptedModelServer, asking_mcp: McpManager, tmp_path: Path
) -> None:
    model_server.script(
        [Reply.tools([("mcp__asking__steps", {"count": 3}, "call_steps")]), Reply.text("all steps done")]
    )
    cfg = model_server.config("openai")
    cfg.tools.skip_permissions = True
    ui = RecordingUI()
    session = build_session(cfg, create_provider(cfg), ui, mcp=asking_mcp, cwd=tmp_path)
    await session.start()
    await session.send("do the steps")
    assert ui.results["call_steps"][1].text == "did 3 steps"
    assert ui.progress["call_steps"] == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    assert "all steps done" in ui.text


def test_every_front_end_speaks_the_progress_callback() -> None:
    import io

    parent = RecordingUI()
    sub = SubagentUI(parent, "task")
    sub.on_tool_progress("c1", 1, 2, "half")
    assert parent.progress == {"c1": [(1, 2, "half")]}
    for ui in (parent, sub, HeadlessUI(out=io.StringIO(), err=io.StringIO())):
        assert isinstance(ui, SessionUI)


async def test_a_call_to_a_failed_mcp_server_says_so_and_how_to_reconnect(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    manager = McpManager(
        {"quitter": stdio_server("quitter", "--mode", "exit"), "fine": stdio_server("fine")},
        connect_timeout=60,
        call_timeout=30,
    )
    await manager.start()
    await manager.wait_ready(90)
    try:
        model_server.script(
            [
                Reply.tools(
                    [
                        ("mcp__quitter__echo", {"text": "hi"}, "call_dead"),
                        ("mcp__fine__no_such_tool", {}, "call_missing"),
                        ("mcp__ghost__echo", {}, "call_ghost"),
                    ]
                ),
                Reply.text("told"),
            ]
        )
        cfg = model_server.config("openai")
        cfg.tools.skip_permissions = True
        ui = RecordingUI()
        session = build_session(cfg, create_provider(cfg), ui, mcp=manager, cwd=tmp_path)
        await session.start()
        await session.send("use the tools")
        dead = ui.results["call_dead"][1]
        assert dead.is_error
        assert "MCP server 'quitter' is failed" in dead.text and "refusing to start (bad setup)" in dead.text
        assert "/mcp refresh quitter" in dead.text
        assert "MCP server 'fine' has no tool of that name" in ui.results["call_missing"][1].text
        assert "not available in this session" in ui.results["call_ghost"][1].text
    finally:
        await manager.aclose()


def test_headless_progress_is_one_compact_line_each() -> None:
    """Without a total the count alone; a server's multi-line or hostile message stays one safe line."""
    import io

    err = io.StringIO()
    ui = HeadlessUI(out=io.StringIO(), err=err, color=False)
    ui.progress_interval = 0
    ui.on_tools_prepared([PreparedItem("c1", "mcp__files__index", {}, header="files/index")])
    ui.on_tool_progress("c1", 40, None, "scanning\nsrc/\x1b]52;c;bad\x07")
    ui.on_tool_progress("c1", 2.5, 10, None)
    ui.on_tool_progress("c2", 1, 2, "half")  # a call it never saw prepared: named by its id
    assert [line for line in err.getvalue().splitlines() if not line.startswith("▶")] == [
        "[progress] files/index 40 scanning src/\\x1b]52;c;bad\\x07",
        "[progress] files/index 2.5/10",
        "[progress] c2 1/2 half",
    ]


def test_headless_progress_from_a_chatty_server_is_thinned_but_ends_on_the_total() -> None:
    """10,000 notifications in 10 s print about one line per 0.25 s, the first and the final one."""
    import io

    err = io.StringIO()
    ui = HeadlessUI(out=io.StringIO(), err=err, color=False)
    now = [0.0]
    ui.clock = lambda: now[0]
    for step in range(1, 10_001):
        now[0] = step / 1000
        ui.on_tool_progress("c1", step, 10_000, "x" * 5000)
    lines = err.getvalue().splitlines()
    assert 30 <= len(lines) <= 45, len(lines)
    assert lines[0].startswith("[progress] c1 1/10000 ")
    assert lines[-1].startswith("[progress] c1 10000/10000 ")
    assert max(len(line) for line in lines) < 260, "a huge message is cut"
