"""Resource subscriptions against a real MCP server: a resource the model read is subscribed
(``resources/subscribe`` on the handshake protocol, a ``subscriptions/listen`` stream on
2026-07-28), and ``notifications/resources/updated`` makes it read again and its new contents go
to the model with the next message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.helpers.mcp_servers import stdio_server, wait_for
from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.core.mcp_bridge import McpEvent
from turnstone_tui.mcp.manager import McpManager
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(120)


async def live_manager(protocol: str = "legacy") -> McpManager:
    manager = McpManager(
        {"demo": stdio_server("demo", "--live-resources", protocol=protocol)},
        connect_timeout=60,
        call_timeout=30,
    )
    await manager.start()
    await manager.wait_ready(90)
    return manager


@pytest.fixture
async def manager() -> AsyncIterator[McpManager]:
    manager = await live_manager()
    try:
        yield manager
    finally:
        await manager.aclose()


async def test_a_read_resource_is_subscribed_and_re_read_when_it_changes(manager: McpManager) -> None:
    events: list[McpEvent] = []
    manager.add_listener(lambda event: events.append(event) if event.kind == "resource" else None)
    # Not read yet: a change is not followed.
    touched = await manager.call_tool("mcp__demo__touch_readme", {})
    assert "subscribed: []" in touched.text
    assert manager.take_resource_updates() == []

    read = await manager.read_resource("docs://readme")
    assert read.text == "# demo\nThe demo readme (edited 1 times)."
    assert manager.subscribed_resources("demo") == ["docs://readme"]
    # The server saw the subscription (resources/subscribe, sent in the background) ...
    for _ in range(100):
        touched = await manager.call_tool("mcp__demo__touch_readme", {})
        if "subscribed: ['docs://readme']" in touched.text:
            break
    assert "subscribed: ['docs://readme']" in touched.text
    # ... and its notifications/resources/updated made the client read the resource again.
    await wait_for(lambda: bool(events), within=30)
    assert events[0].server == "demo" and events[0].added == ("docs://readme",)
    updates = manager.take_resource_updates()
    assert [(u.uri, u.server) for u in updates] == [("docs://readme", "demo")]
    assert "The demo readme (edited" in updates[0].text and not updates[0].is_error
    assert manager.take_resource_updates() == []  # taken once


async def test_a_2026_server_delivers_updates_on_a_listen_stream() -> None:
    manager = await live_manager("auto")
    try:
        status = manager.status("demo")
        assert status is not None and status.protocol_version == "2026-07-28"
        events: list[McpEvent] = []
        manager.add_listener(lambda event: events.append(event) if event.kind == "resource" else None)
        await manager.read_resource("docs://readme")
        assert manager.subscribed_resources("demo") == ["docs://readme"]
        for _ in range(100):
            # the listen stream opens in the background: touch until a change is delivered
            await manager.call_tool("mcp__demo__touch_readme", {})
            try:
                await wait_for(lambda: bool(events), within=0.3)
            except AssertionError:
                continue
            break
        assert events, "no resource update arrived on the listen stream"
        (update,) = manager.take_resource_updates()[-1:]
        assert update.uri == "docs://readme" and "edited" in update.text
    finally:
        await manager.aclose()


async def test_the_model_gets_the_new_contents_with_the_next_message(
    model_server: ScriptedModelServer, manager: McpManager, tmp_path: Path
) -> None:
    model_server.script(
        [
            Reply.tools([("read_resource", {"uri": "docs://readme"})]),
            Reply.text("It is the demo readme."),
            Reply.text("It changed: edited once."),
        ]
    )
    cfg = model_server.config("openai")
    cfg.tools.skip_permissions = True
    ui = RecordingUI()
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session = build_session(cfg, create_provider(cfg), ui, storage=storage, mcp=manager, cwd=tmp_path)
        await session.start()
        await session.send("what does the readme say?")
        assert "docs://readme" in manager.subscribed_resources("demo")
        for _ in range(100):
            touched = await manager.call_tool("mcp__demo__touch_readme", {})
            if "subscribed: ['docs://readme']" in touched.text:
                break
        await wait_for(lambda: any("changed since the model read it" in i for i in ui.infos), within=30)
        await session.send("and now?")
        last = model_server.model_requests()[-1].body["messages"]
        note, asked = last[-2], last[-1]
        assert asked == {"role": "user", "content": "and now?"}
        assert note["role"] == "user" and '<resource uri="docs://readme" server="demo">' in note["content"]
        assert "The demo readme (edited" in note["content"]
        # Stored with its mark: a resumed chat shows it as a notice, not as something the user typed.
        stored = await storage.load_messages(session.session_id)
        assert [m.get("kind") for m in stored if m["role"] == "user"] == [None, "mcp_resource_update", None]
    finally:
        await storage.close()
