"""Native tool search (the spec's tier 1) against the scripted server speaking Anthropic's protocol,
with a real MCP server: deferred tools, the server blocks kept byte for byte, expansion, fallback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mcp_servers import stdio_server
from tests.helpers.model_server import Reply, ScriptedModelServer, anthropic_tool_search_blocks
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config, ModelAlias
from turnstone_tui.core.session import ChatSession
from turnstone_tui.core.tool_search import decide_tier, tier_override
from turnstone_tui.mcp.manager import McpManager
from turnstone_tui.providers.capabilities import anthropic_native_tool_search, openai_hosted_tool_search
from turnstone_tui.providers.factory import create_provider, resolve_model_alias
from turnstone_tui.runtime import build_session, builtin_tools
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(120)

SEARCH_TOOL = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}


@pytest.fixture
async def demo_mcp() -> AsyncIterator[McpManager]:
    manager = McpManager({"demo": stdio_server("demo")}, connect_timeout=60, call_timeout=30)
    await manager.start()
    await manager.wait_ready(90)
    try:
        yield manager
    finally:
        await manager.aclose()


def anthropic_config(server: ScriptedModelServer, model: str = "claude-sonnet-4-5") -> Config:
    cfg = server.config("anthropic")
    cfg.model.name = model
    cfg.tools.search = "on"
    cfg.tools.skip_permissions = True
    return cfg


async def session_for(
    cfg: Config, mcp: McpManager, tmp_path: Path, storage: Storage | None = None
) -> tuple[ChatSession, RecordingUI]:
    ui = RecordingUI()
    session = build_session(cfg, create_provider(cfg), ui, storage=storage, mcp=mcp, cwd=tmp_path)
    await session.start()
    return session, ui


def tools_by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in body["tools"]}


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


async def test_deferred_tools_search_round_trip_and_expansion(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    search = {"query": "echo some text", "found": ["mcp__demo__echo"]}
    found_echo = Reply.tools([("mcp__demo__echo", {"text": "hi"})], text="Found it.", tool_search=search)
    model_server.script([found_echo, Reply.text("It said hi."), Reply.text("Again.")])
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session, ui = await session_for(anthropic_config(model_server), demo_mcp, tmp_path, storage)
        assert session.tool_search_tier == "native"
        await session.send("echo hi through the demo server")
        assert not ui.errors, ui.errors
        first, second = (r.body for r in model_server.model_requests())

        # The request: the BM25 search tool, every MCP tool deferred, built-ins loaded, no client tool.
        tools = tools_by_name(first)
        assert SEARCH_TOOL in first["tools"]
        mcp_tools = {n: t for n, t in tools.items() if n.startswith("mcp__demo__")}
        assert mcp_tools and all(t.get("defer_loading") is True for t in mcp_tools.values())
        assert "bash" in tools and "defer_loading" not in tools["bash"]
        assert "tool_search" not in tools
        assert "anthropic-beta" not in model_server.model_requests()[0].headers  # GA: no beta needed

        # The server blocks went back exactly as they came, in their place before the text.
        streamed = [
            {**block, "input": json.loads(text)} if text else block
            for block, text in anthropic_tool_search_blocks(found_echo, 1)
        ]
        turn = assistant_turns(second)[0]
        assert turn[:2] == streamed
        assert json.dumps(turn[0], sort_keys=True) == json.dumps(streamed[0], sort_keys=True)
        assert turn[0]["caller"] == {"type": "direct"}  # a field this client does not know is kept
        assert [b["type"] for b in turn[2:]] == ["text", "tool_use"]
        assert turn[3]["name"] == "mcp__demo__echo" and turn[3]["input"] == {"text": "hi"}

        # The referenced tool ran and is loaded from now on; the others stay deferred.
        results = [b for m in second["messages"] if m["role"] == "user" for b in m["content"]]
        assert any(b.get("type") == "tool_result" and "echo: hi" in json.dumps(b) for b in results)
        after = tools_by_name(second)
        assert "defer_loading" not in after["mcp__demo__echo"]
        assert after["mcp__demo__add"]["defer_loading"] is True

        # The user saw a compact card for the search.
        card = next(item for item in ui.prepared if item.func_name == "tool_search")
        assert card.header == "searched tools: echo some text → 1 found"
        assert ui.results[card.call_id][1].text == "mcp__demo__echo"

        # Stored and resumed: the blocks still go back unchanged.
        cfg = anthropic_config(model_server)
        resumed = build_session(
            cfg, create_provider(cfg), RecordingUI(), storage=storage, mcp=demo_mcp, cwd=tmp_path,
            session_id=session.session_id,
        )  # fmt: skip
        await resumed.start()
        await resumed.send("again")
        third = model_server.model_requests()[2].body
        assert assistant_turns(third)[0][:2] == streamed
    finally:
        await storage.close()


async def test_a_search_error_is_shown_and_expands_nothing(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    failed = {"query": "weather", "error_code": "unavailable"}
    model_server.script([Reply.text("No luck.", tool_search=failed), Reply.text("ok")])
    session, ui = await session_for(anthropic_config(model_server), demo_mcp, tmp_path)
    await session.send("weather?")
    card = next(item for item in ui.prepared if item.func_name == "tool_search")
    assert card.header == "searched tools: weather → failed: unavailable"
    assert ui.results[card.call_id][1].is_error
    await session.send("again")
    tools = tools_by_name(model_server.model_requests()[1].body)
    assert all(t.get("defer_loading") for n, t in tools.items() if n.startswith("mcp__"))


async def test_a_400_naming_the_tool_type_falls_back_to_the_client_tier_once(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    rejected = Reply.error(
        400, "tools.19: Input tag 'tool_search_tool_bm25_20251119' found using 'type' does not match"
    )
    model_server.script([rejected, Reply.text("Fine."), Reply.text("Still fine.")])
    session, ui = await session_for(anthropic_config(model_server), demo_mcp, tmp_path)
    await session.send("hello")
    assert not ui.errors and ui.text == "Fine."
    assert any("rejected native tool search" in info for info in ui.infos)
    assert session.tool_search_tier == "client"
    await session.send("and again")  # remembered for the session: no second native attempt
    bodies = [r.body for r in model_server.model_requests()]
    assert len(bodies) == 3
    for body in bodies[1:]:
        tools = tools_by_name(body)
        assert "tool_search" in tools and SEARCH_TOOL not in body["tools"]
        assert not any(t.get("defer_loading") for t in body["tools"])
        assert not any(n.startswith("mcp__") for n in tools)


async def test_other_400s_are_errors_not_fallbacks(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    model_server.script([Reply.error(400, "messages: text content blocks must be non-empty")])
    session, ui = await session_for(anthropic_config(model_server), demo_mcp, tmp_path)
    await session.send("hello")
    assert ui.errors and "non-empty" in ui.errors[-1]
    assert session.tool_search_tier == "native"


async def test_tier_by_model_and_config_override(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    # An older Claude model gets the client-side function.
    old, _ = await session_for(anthropic_config(model_server, "claude-3-7-sonnet-latest"), demo_mcp, tmp_path)
    assert old.tool_search_tier == "client"
    # [models.NAME] tool_search = "native" forces it (a proxy's own model name, say).
    cfg = anthropic_config(model_server, "my-proxy-claude")
    cfg.models["my-proxy-claude"] = ModelAlias(tool_search="native")
    forced, _ = await session_for(cfg, demo_mcp, tmp_path)
    assert forced.tool_search_tier == "native"
    # ... and "off" sends every tool, through an alias too.
    cfg = anthropic_config(model_server)
    cfg.models["plain"] = ModelAlias(name="claude-sonnet-4-5", provider="anthropic", tool_search="off")
    off, _ = await session_for(resolve_model_alias(cfg, "plain"), demo_mcp, tmp_path)
    assert off.tool_search_tier == "off" and off.deferred_tool_schemas() == []
    assert any(s["function"]["name"] == "mcp__demo__echo" for s in off.visible_tool_schemas())
    # An OpenAI model not in the table (a proxy's name): "native" turns on hosted tool search.
    openai_cfg = model_server.config("openai")
    openai_cfg.tools.search = "on"
    assert (await session_for(openai_cfg, demo_mcp, tmp_path))[0].tool_search_tier == "client"
    openai_cfg.model.tool_search = "native"
    ui = RecordingUI()
    session = build_session(openai_cfg, create_provider(openai_cfg), ui, mcp=demo_mcp, cwd=tmp_path)
    await session.start()
    assert session.tool_search_tier == "native" and not ui.infos


async def test_sub_agents_do_not_use_tool_search(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    cfg = anthropic_config(model_server)
    task = ChatSession(
        cfg,
        create_provider(cfg),
        RecordingUI(),
        tools=builtin_tools(),
        mcp=demo_mcp,
        cwd=tmp_path,
        agent_kind="task",
    )
    await task.start()
    assert task.tool_search_tier == "" and task.deferred_tool_schemas() == []
    names = {s["function"]["name"] for s in task.visible_tool_schemas()}
    assert "mcp__demo__echo" in names and "tool_search" not in names


def test_capability_table() -> None:
    supported = ["claude-sonnet-4-5-20250929", "claude-opus-4-6", "claude-haiku-4-5", "claude-opus-5"]
    unsupported = ["claude-sonnet-4-20250514", "claude-opus-4-1", "claude-3-5-haiku-latest", "claude-test"]
    assert all(anthropic_native_tool_search(m) for m in supported)
    assert not any(anthropic_native_tool_search(m) for m in unsupported)
    assert openai_hosted_tool_search("gpt-5.4") and openai_hosted_tool_search("gpt-5.5-mini")
    assert not openai_hosted_tool_search("gpt-5") and not openai_hosted_tool_search("gpt-4o")
    assert decide_tier("", True) == ("native", None)
    assert decide_tier("", False) == ("client", None)
    assert decide_tier("client", True) == ("client", None)
    assert decide_tier("native", None)[0] == "client"
    cfg = Config()
    cfg.models["fast"] = ModelAlias(name="claude-haiku-4-5", tool_search="client")
    assert tier_override(cfg, "claude-haiku-4-5") == "client" and tier_override(cfg, "other") == ""
