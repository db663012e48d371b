"""McpManager against the demo MCP server over streamable HTTP (a real subprocess on 127.0.0.1)."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.mcp_servers import HttpDemoServer, stdio_server, wait_for
from turnstone_tui.mcp.manager import McpEvent, ServerState

pytestmark = pytest.mark.timeout(90)


async def test_http_tools_resources_prompts(make_manager, http_demo: HttpDemoServer) -> None:
    manager = make_manager([http_demo.config("web")])
    await manager.start()
    await manager.wait_ready(20)
    status = manager.status("web")
    assert status is not None and status.state is ServerState.CONNECTED, status
    assert status.transport == "http" and status.target == http_demo.url
    assert manager.has_tool("mcp__web__echo")
    assert (await manager.call_tool("mcp__web__echo", {"text": "over http"})).text == "echo: over http"
    assert (await manager.call_tool("mcp__web__add", {"a": 1, "b": 2})).structured == {"sum": 3}
    assert (await manager.read_resource("docs://readme")).text == "# web\nThe demo readme."
    assert (await manager.read_resource("notes://http")).text == "note about http"
    prompt = await manager.get_prompt("mcp__web__greet", {"name": "Lin"})
    assert prompt.text == "[user]: Please greet Lin warmly."
    assert "docs://readme" in manager.system_catalog()


async def test_http_list_changed(make_manager, http_demo: HttpDemoServer) -> None:
    manager = make_manager([http_demo.config("web")])
    events: list[McpEvent] = []
    manager.add_listener(events.append)
    await manager.start()
    await manager.wait_ready(20)
    await manager.call_tool("mcp__web__add_tool", {"tool_name": "fresh"})
    await wait_for(lambda: manager.has_tool("mcp__web__fresh"))
    assert any(e.kind == "tools" and e.added == ("mcp__web__fresh",) for e in events)
    assert (await manager.call_tool("mcp__web__fresh", {"text": "hi"})).text == "fresh says hi"


async def test_http_server_killed_mid_call_then_reconnect(make_manager) -> None:
    server = HttpDemoServer()
    try:
        manager = make_manager([server.config("web"), stdio_server("local")], call_timeout=5.0)
        await manager.start()
        await manager.wait_ready(20)
        call = asyncio.create_task(manager.call_tool("mcp__web__slow", {"seconds": 30}))
        await asyncio.sleep(0.5)
        server.stop()  # SIGKILL while the call is in flight
        result = await call
        assert result.is_error
        assert "web" in result.text
        web = manager.status("web")
        assert web is not None and web.state is ServerState.FAILED, web
        assert (await manager.call_tool("mcp__local__echo", {"text": "fine"})).text == "echo: fine"
        failed_call = await manager.call_tool("mcp__web__echo", {"text": "x"})
        assert failed_call.is_error and "/mcp refresh web" in failed_call.text

        # Reconnect to a new server process on the same address.
        server = HttpDemoServer.on_port(server.port)
        report = await manager.refresh("web")
        assert report == "MCP refresh complete:\n  web: reconnected"
        assert (await manager.call_tool("mcp__web__echo", {"text": "back"})).text == "echo: back"
    finally:
        server.stop()


async def test_http_nothing_listening(make_manager) -> None:
    from tests.helpers.mcp_servers import free_port
    from turnstone_tui.mcp.config import ServerConfig

    manager = make_manager(
        [ServerConfig("void", "http", url=f"http://127.0.0.1:{free_port()}/mcp")], connect_timeout=3
    )
    await manager.start()
    await manager.wait_ready(10)
    status = manager.status("void")
    assert status is not None and status.state is ServerState.FAILED
    assert status.error


async def test_http_headers_are_sent(make_manager, http_demo: HttpDemoServer) -> None:
    from turnstone_tui.mcp.config import ServerConfig

    config = ServerConfig("web", "http", url=http_demo.url, headers={"X-Test": "secret-value"})
    manager = make_manager([config])
    await manager.start()
    await manager.wait_ready(20)
    assert (await manager.call_tool("mcp__web__whoami", {})).text == "x-test=secret-value"
