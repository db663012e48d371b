"""McpManager against real MCP servers (the SDK's MCPServer) started as stdio subprocesses."""

from __future__ import annotations

import asyncio
import base64
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.mcp_servers import PNG_1X1, stdio_server, wait_for
from turnstone_tui.mcp.config import ServerConfig
from turnstone_tui.mcp.manager import McpEvent, ServerState

pytestmark = pytest.mark.timeout(90)


async def test_start_returns_at_once_and_servers_connect(make_manager) -> None:
    manager = make_manager([stdio_server("one"), stdio_server("two")])
    started = time.monotonic()
    await manager.start()
    assert time.monotonic() - started < 10  # servers connect in the background
    assert {s.state for s in manager.statuses()} == {ServerState.CONNECTING}
    await manager.wait_ready(20)
    statuses = {s.name: s for s in manager.statuses()}
    assert statuses["one"].state is ServerState.CONNECTED
    assert statuses["two"].state is ServerState.CONNECTED
    assert statuses["one"].server_name == "one"
    assert manager.connected_count() == (2, 2)
    names = [t["function"]["name"] for t in manager.tool_schemas()]
    assert "mcp__one__echo" in names and "mcp__two__echo" in names
    add = manager.tool_schema("mcp__one__add")
    assert add is not None
    assert add["type"] == "function"
    assert add["function"]["parameters"]["type"] == "object"
    assert set(add["function"]["parameters"]["properties"]) == {"a", "b"}
    assert add["function"]["description"].startswith("[MCP: one]")


async def test_tool_results(make_manager) -> None:
    manager = make_manager([stdio_server("demo")])
    await manager.start()
    await manager.wait_ready(20)

    echo = await manager.call_tool("mcp__demo__echo", {"text": "hi"})
    assert echo.text == "echo: hi" and not echo.is_error

    added = await manager.call_tool("mcp__demo__add", {"a": 2, "b": 40})
    assert added.structured == {"sum": 42}
    assert '"sum": 42' in added.text

    image = await manager.call_tool("mcp__demo__image", {})
    assert "image/png" in image.text
    assert image.content_parts is not None
    assert image.content_parts[0] == {"type": "text", "text": image.text}
    url = image.content_parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG_1X1

    embedded = await manager.call_tool("mcp__demo__embedded", {})
    assert "docs://inline" in embedded.text and "inline body" in embedded.text

    failed = await manager.call_tool("mcp__demo__fail", {})
    assert failed.is_error
    assert "fail" in failed.text

    bad_args = await manager.call_tool("mcp__demo__add", {"a": "not a number"})
    assert bad_args.is_error

    unknown = await manager.call_tool("mcp__demo__nope", {})
    assert unknown.is_error and "has no tool named 'nope'" in unknown.text
    other = await manager.call_tool("mcp__ghost__x", {})
    assert other.is_error and "no MCP server provides tool 'mcp__ghost__x'" in other.text
    # The server is still fine after all the errors.
    assert (await manager.call_tool("mcp__demo__echo", {"text": "again"})).text == "echo: again"


async def test_resources_and_prompts(make_manager) -> None:
    manager = make_manager([stdio_server("demo")])
    await manager.start()
    await manager.wait_ready(20)
    status = manager.statuses()[0]
    uris = {r.uri: r for r in status.resources}
    assert set(uris) == {"docs://readme", "docs://logo.png", "notes://{topic}"}
    assert uris["notes://{topic}"].template
    assert [p.qualified_name for p in status.prompts] == ["mcp__demo__greet", "mcp__demo__review"]

    readme = await manager.read_resource("docs://readme")
    assert readme.text == "# demo\nThe demo readme."
    logo = await manager.read_resource("docs://logo.png")
    assert "image/png" in logo.text
    assert base64.b64encode(PNG_1X1).decode() in logo.text
    assert logo.content_parts is not None
    note = await manager.read_resource("notes://gardening")
    assert note.text == "note about gardening"
    # Not listed, one server with resources: it is asked, and its answer is passed on.
    missing = await manager.read_resource("nowhere://x")
    assert missing.is_error and "Unknown resource: nowhere://x" in missing.text

    greet = await manager.get_prompt("mcp__demo__greet", {"name": "Ada"})
    assert greet.text == "[user]: Please greet Ada warmly."
    review = await manager.get_prompt("mcp__demo__review", {"code": "x = 1"})
    assert review.text == "[user]: Review this code:\nx = 1\n\n[assistant]: I will review it."
    needs_arg = await manager.get_prompt("mcp__demo__greet", {})
    assert needs_arg.is_error and "name" in needs_arg.text

    catalog = manager.system_catalog()
    assert catalog.startswith(  # the server's instructions come first, then the catalogue
        '<mcp-server-instructions>\n<server name="demo">\ndemo server for turnstone-tui tests\n</server>\n'
        "</mcp-server-instructions>\n\n<mcp-resources>\n  docs://readme  Project readme\n"
    )
    assert "</mcp-resources>\nUse read_resource(uri='...')" in catalog
    assert "<mcp-prompts>\n  mcp__demo__greet(name)  Greet someone by name.\n" in catalog
    assert "</mcp-prompts>" in catalog


async def test_unlisted_resource_with_two_servers(make_manager) -> None:
    manager = make_manager([stdio_server("a"), stdio_server("b")])
    await manager.start()
    await manager.wait_ready(20)
    missing = await manager.read_resource("nowhere://x")
    assert missing.is_error and missing.text == "no MCP server provides resource 'nowhere://x'"


async def test_catalog_empty_without_servers(make_manager) -> None:
    manager = make_manager([])
    await manager.start()
    await manager.wait_ready(1)
    assert manager.system_catalog() == ""
    assert manager.tool_schemas() == []
    assert await manager.refresh() == "MCP refresh: no MCP servers configured."


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_tool_added_at_run_time_is_seen(make_manager, protocol: str) -> None:
    """list_changed (2026 subscriptions/listen, or the handshake-era notification) -> refreshed tools."""
    manager = make_manager([stdio_server("demo", protocol=protocol)])
    events: list[McpEvent] = []
    remove = manager.add_listener(events.append)
    await manager.start()
    await manager.wait_ready(20)
    before = manager.tool_schemas()
    assert not manager.has_tool("mcp__demo__late_tool")

    result = await manager.call_tool("mcp__demo__add_tool", {"tool_name": "late_tool"})
    assert result.text == "added late_tool"
    await wait_for(lambda: manager.has_tool("mcp__demo__late_tool"))

    tool_events = [e for e in events if e.kind == "tools"]
    assert tool_events and tool_events[-1].added == ("mcp__demo__late_tool",)
    assert tool_events[-1].server == "demo"
    assert "mcp__demo__late_tool" not in [t["function"]["name"] for t in before]  # copy-on-write
    assert "mcp__demo__late_tool" in [t["function"]["name"] for t in manager.tool_schemas()]
    late = await manager.call_tool("mcp__demo__late_tool", {"text": "yo"})
    assert late.text == "late_tool says yo"

    remove()
    count = len(events)
    await manager.call_tool("mcp__demo__add_tool", {"tool_name": "later_tool"})
    await wait_for(lambda: manager.has_tool("mcp__demo__later_tool"))
    assert len(events) == count  # the removed listener heard nothing


async def test_server_killed_mid_call(make_manager) -> None:
    manager = make_manager([stdio_server("victim"), stdio_server("bystander")])
    events: list[McpEvent] = []
    manager.add_listener(events.append)
    await manager.start()
    await manager.wait_ready(20)

    crashed = await manager.call_tool("mcp__victim__crash", {})
    assert crashed.is_error
    assert "victim" in crashed.text and "exited" in crashed.text
    assert "crashing on purpose" in crashed.text  # the server's own last words (stderr)
    victim = manager.status("victim")
    assert victim is not None and victim.state is ServerState.FAILED
    assert victim.error and "exited" in victim.error
    assert any(
        e.kind == "state" and e.server == "victim" and e.status.state is ServerState.FAILED for e in events
    )

    # Its tools leave the model's list; a later call says clearly what is wrong.
    names = [t["function"]["name"] for t in manager.tool_schemas()]
    assert "mcp__victim__echo" not in names and "mcp__bystander__echo" in names
    later = await manager.call_tool("mcp__victim__echo", {"text": "x"})
    assert later.is_error and "failed" in later.text and "/mcp refresh victim" in later.text

    # The other server goes on.
    assert (await manager.call_tool("mcp__bystander__echo", {"text": "ok"})).text == "echo: ok"

    report = await manager.refresh("victim")
    assert report == "MCP refresh complete:\n  victim: reconnected"
    assert manager.status("victim").state is ServerState.CONNECTED  # type: ignore[union-attr]
    assert (await manager.call_tool("mcp__victim__echo", {"text": "back"})).text == "echo: back"


async def test_server_that_never_answers_initialize(make_manager) -> None:
    manager = make_manager([stdio_server("mute", "--mode", "hang"), stdio_server("fine")], connect_timeout=6)
    started = time.monotonic()
    await manager.start()
    await manager.wait_ready(30)
    assert time.monotonic() - started < 20  # the handshake timeout, not the 30 s wait, ended it
    mute = manager.status("mute")
    assert mute is not None and mute.state is ServerState.FAILED
    assert mute.error == "no answer to the MCP handshake within 6s"
    assert manager.status("fine").state is ServerState.CONNECTED  # type: ignore[union-attr]
    result = await manager.call_tool("mcp__mute__echo", {})
    assert result.is_error and "mute" in result.text and "handshake" in result.text


async def test_server_that_sends_garbage_or_exits(make_manager) -> None:
    manager = make_manager(
        [
            stdio_server("noise", "--mode", "garbage"),
            stdio_server("quitter", "--mode", "exit"),
            stdio_server("fine"),
        ]
    )
    await manager.start()
    await manager.wait_ready(20)
    noise = manager.status("noise")
    quitter = manager.status("quitter")
    assert noise is not None and noise.state is ServerState.FAILED
    # only noise and never an answer: the handshake times out, naming what it wrote
    assert noise.error is not None and "handshake" in noise.error and "this is not json at all" in noise.error
    assert quitter is not None and quitter.state is ServerState.FAILED
    assert quitter.error is not None and "refusing to start (bad setup)" in quitter.error
    assert manager.status("fine").state is ServerState.CONNECTED  # type: ignore[union-attr]
    report = await manager.refresh()
    assert "  fine: no changes" in report
    assert "  noise: failed - no answer to the MCP handshake" in report


async def test_a_stdio_server_that_prints_a_banner_still_serves(make_manager) -> None:
    # one stray stdout line before serving used to mark the server failed ("invalid output")
    manager = make_manager([stdio_server("chatty", "--mode", "chatty")])
    await manager.start()
    await manager.wait_ready(20)
    status = manager.status("chatty")
    assert status is not None and status.state is ServerState.CONNECTED, status
    result = await manager.call_tool("mcp__chatty__echo", {"text": "still here"})
    assert not result.is_error and "still here" in result.text
    logged = [entry.text for entry in manager.logs("chatty")]
    assert any("demo server starting up" in text for text in logged), logged


async def test_missing_command(make_manager) -> None:
    from turnstone_tui.mcp.config import ServerConfig

    manager = make_manager([ServerConfig("ghost", "stdio", command="/nonexistent/mcp-server")])
    await manager.start()
    await manager.wait_ready(10)
    status = manager.status("ghost")
    assert status is not None and status.state is ServerState.FAILED
    assert status.error == "command not found: /nonexistent/mcp-server"


async def test_slow_call_times_out_but_server_stays(make_manager) -> None:
    manager = make_manager([stdio_server("demo")], call_timeout=1.0)
    await manager.start()
    await manager.wait_ready(20)
    slow = await manager.call_tool("mcp__demo__slow", {"seconds": 5})
    assert slow.is_error and "timed out after 1s" in slow.text
    assert manager.status("demo").state is ServerState.CONNECTED  # type: ignore[union-attr]
    assert (await manager.call_tool("mcp__demo__echo", {"text": "still here"})).text == "echo: still here"


async def test_five_hundred_tools(make_manager) -> None:
    manager = make_manager([stdio_server("big", "--extra-tools", "500")])
    await manager.start()
    await manager.wait_ready(30)
    names = [t["function"]["name"] for t in manager.tool_schemas()]
    assert len(names) == 510
    assert "mcp__big__tool_000" in names and "mcp__big__tool_499" in names
    assert len(manager.statuses()[0].tools) == 510
    result = await manager.call_tool("mcp__big__tool_321", {"query": "q"})
    assert result.text == "extra 321: q"


async def test_aclose_stops_processes(make_manager) -> None:
    import psutil

    manager = make_manager([stdio_server("demo")])
    me = psutil.Process()
    await manager.start()
    await manager.wait_ready(20)
    children = [p for p in me.children(recursive=True) if "demo_server.py" in " ".join(p.cmdline())]
    assert children
    await manager.aclose()
    assert manager.statuses()[0].state is ServerState.DISCONNECTED
    await asyncio.sleep(0.1)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in children)


async def test_refresh_unknown_server(make_manager) -> None:
    manager = make_manager([stdio_server("demo")])
    await manager.start()
    await manager.wait_ready(20)
    assert await manager.refresh("nope") == "MCP refresh: no MCP server named 'nope' (configured: demo)"
    assert await manager.refresh("demo") == "MCP refresh complete:\n  demo: no changes"


async def test_servers_without_push_are_polled(make_manager) -> None:
    """A handshake-era MCPServer declares no listChanged: its lists are polled every refresh_interval."""
    manager = make_manager([stdio_server("quiet", protocol="legacy")], refresh_interval=0.3)
    events: list[McpEvent] = []
    manager.add_listener(events.append)
    await manager.start()
    await manager.wait_ready(20)
    assert manager.status("quiet").push == frozenset()  # type: ignore[union-attr]
    await manager.call_tool("mcp__quiet__add_tool", {"tool_name": "polled", "notify": False})
    await wait_for(lambda: manager.has_tool("mcp__quiet__polled"))
    assert any(e.kind == "tools" and e.added == ("mcp__quiet__polled",) for e in events)


async def test_manual_refresh_reports_changes(make_manager) -> None:
    manager = make_manager([stdio_server("demo", protocol="auto"), stdio_server("other")])
    await manager.start()
    await manager.wait_ready(20)
    assert manager.status("demo").push == frozenset({"tools", "resources", "prompts"})  # type: ignore[union-attr]
    # Added without a notification: only an explicit refresh sees it.
    await manager.call_tool("mcp__demo__add_tool", {"tool_name": "create_pr", "notify": False})
    await asyncio.sleep(0.3)
    assert not manager.has_tool("mcp__demo__create_pr")
    report = await manager.refresh()
    assert report == (
        "MCP refresh complete:\n  demo: +1 added\n    + mcp__demo__create_pr\n  other: no changes"
    )
    assert manager.has_tool("mcp__demo__create_pr")


async def test_prompt_added_at_run_time(make_manager) -> None:
    manager = make_manager([stdio_server("demo")])
    events: list[McpEvent] = []
    manager.add_listener(events.append)
    await manager.start()
    await manager.wait_ready(20)
    await manager.call_tool("mcp__demo__add_prompt", {"prompt_name": "haiku"})
    await wait_for(lambda: any(e.kind == "prompts" for e in events))
    event = next(e for e in events if e.kind == "prompts")
    assert event.added == ("mcp__demo__haiku",)
    assert "mcp__demo__haiku(topic)" in manager.system_catalog()
    result = await manager.get_prompt("mcp__demo__haiku", {"topic": "rain"})
    assert result.text == "[user]: haiku about rain"


async def test_cancelled_call_leaves_server_usable(make_manager) -> None:
    manager = make_manager([stdio_server("demo")])
    await manager.start()
    await manager.wait_ready(20)
    call = asyncio.create_task(manager.call_tool("mcp__demo__slow", {"seconds": 30}))
    await asyncio.sleep(0.3)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert manager.status("demo").state is ServerState.CONNECTED  # type: ignore[union-attr]
    assert (await manager.call_tool("mcp__demo__echo", {"text": "after"})).text == "echo: after"


async def test_the_catalogue_lists_the_first_50_resources_and_30_prompts(make_manager) -> None:
    manager = make_manager([stdio_server("big", "--extra-resources", "60", "--extra-prompts", "40")])
    await manager.start()
    await manager.wait_ready(60)
    status = manager.status("big")
    assert status is not None and len(status.resources) > 60 and len(status.prompts) > 40
    catalog = manager.system_catalog()
    resources = catalog.split("<mcp-resources>\n")[1].split("</mcp-resources>")[0].splitlines()
    prompts = catalog.split("<mcp-prompts>\n")[1].split("</mcp-prompts>")[0].splitlines()
    assert len(resources) == 51 and resources[-1] == f"  ({len(status.resources) - 50} more not listed)"
    assert len(prompts) == 31 and prompts[-1] == f"  ({len(status.prompts) - 30} more not listed)"


TOOLS_ONLY = Path(__file__).resolve().parents[1] / "helpers" / "mcp_servers" / "tools_only_server.py"


async def test_a_server_without_resources_or_prompts_is_not_asked_for_them(make_manager) -> None:
    """Capability guards: a server that declares tools only (the SDK's low-level Server answers any
    other list with 'method not found', which would fail the connection) contributes no resources
    or prompts, and its tools work."""
    manager = make_manager([ServerConfig("bare", "stdio", command=sys.executable, args=(str(TOOLS_ONLY),))])
    await manager.start()
    await manager.wait_ready(60)
    status = manager.status("bare")
    assert status is not None and status.state is ServerState.CONNECTED, status
    assert status.resources == [] and status.prompts == []
    assert [t.qualified_name for t in status.tools] == ["mcp__bare__ping"]
    assert (await manager.call_tool("mcp__bare__ping", {})).text == "pong"
    assert manager.system_catalog() == ""
