"""OpenAI's hosted tool search (the spec's tier 2) through the Responses API: the real openai SDK
against the scripted server speaking the Responses streaming wire format, with a real MCP server.
Deferred flags and the hosted search in the request, the search items kept byte for byte, the
found tool callable, the fallback to the client tier on a 400, Chat Completions unchanged."""

from __future__ import annotations

import json
import typing
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses import ResponseInputParam, ResponseStreamEvent, ToolParam
from pydantic import TypeAdapter

from tests.helpers.mcp_servers import stdio_server
from tests.helpers.model_server import (
    Reply,
    ScriptedModelServer,
    openai_responses_events,
    responses_output,
)
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.core.provider import (
    ContentDelta,
    ModelRequest,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    StreamDone,
    StreamEvent,
    ToolCallDelta,
    ToolSearchDone,
    UsageUpdate,
)
from turnstone_tui.core.session import ChatSession
from turnstone_tui.mcp.manager import McpManager
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.providers.openai_provider import OpenAIProvider
from turnstone_tui.runtime import build_session
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(120)

HOSTED_SEARCH = {"type": "tool_search"}
ECHO_SCHEMA = {
    "type": "function",
    "function": {
        "name": "mcp__demo__echo",
        "description": "Echo text",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
}


@pytest.fixture
async def demo_mcp() -> AsyncIterator[McpManager]:
    manager = McpManager({"demo": stdio_server("demo")}, connect_timeout=60, call_timeout=30)
    await manager.start()
    await manager.wait_ready(90)
    try:
        yield manager
    finally:
        await manager.aclose()


def openai_config(server: ScriptedModelServer, model: str = "gpt-5.4") -> Config:
    cfg = server.config("openai")
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
    return {tool["name"]: tool for tool in body["tools"] if "name" in tool}


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def assert_sdk_request_shapes(body: dict[str, Any]) -> None:
    """The request's input items and tools validate as the SDK's own parameter types."""
    TypeAdapter(ResponseInputParam).validate_python(body["input"], strict=True)
    TypeAdapter(list[ToolParam]).validate_python(body.get("tools", []), strict=True)


def test_the_scripted_stream_is_the_sdks_wire_format() -> None:
    """Every event the scripted server sends validates strictly as the SDK's own event type."""
    members = typing.get_args(typing.get_args(ResponseStreamEvent)[0])
    by_type = {typing.get_args(m.model_fields["type"].annotation)[0]: m for m in members}
    body = {"model": "gpt-5.4", "input": [], "tools": [HOSTED_SEARCH]}
    replies = [
        Reply.tools(
            [("mcp__demo__echo", {"text": "hi"})],
            text="Found it.",
            reasoning="thinking",
            tool_search={"query": "echo", "found": ["mcp__demo__echo"]},
        ),
        Reply.text("cut short", finish_reason="length", tool_search={"query": "x", "error_code": "e"}),
    ]
    seen: set[str] = set()
    for reply in replies:
        for frame in openai_responses_events(reply, body, 1):
            event_line, data_line = frame.strip().split("\n")
            data = json.loads(data_line.removeprefix("data: "))
            assert event_line == f"event: {data['type']}"
            by_type[data["type"]].model_validate(data, strict=True)
            seen.add(data["type"])
    assert {"response.completed", "response.incomplete", "response.function_call_arguments.delta"} <= seen


async def collect(provider: OpenAIProvider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


async def test_provider_streams_the_responses_api(model_server: ScriptedModelServer) -> None:
    reply = Reply.tools(
        [("mcp__demo__echo", {"text": "hi"})],
        text="Found it.",
        reasoning="let me look",
        tool_search={"query": "echo text", "found": ["mcp__demo__echo"]},
        usage=(120, 30),
    )
    model_server.script([reply])
    provider = OpenAIProvider(model_server.openai_base_url, "k", "gpt-5.4", max_tokens=500)
    assert provider.native_tool_search is True
    request = ModelRequest(
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "echo hi"}],
        tools=[],
        deferred_tools=[ECHO_SCHEMA],
    )
    events = await collect(provider, request)
    await provider.aclose()
    recorded = model_server.model_requests()[0]
    assert recorded.path == "/v1/responses"
    body = recorded.body
    assert_sdk_request_shapes(body)
    assert body["stream"] is True and body["store"] is False and body["max_output_tokens"] == 500
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "echo hi"},
    ]
    assert body["tools"] == [
        HOSTED_SEARCH,
        {
            "type": "function",
            "name": "mcp__demo__echo",
            "description": "Echo text",
            "parameters": ECHO_SCHEMA["function"]["parameters"],
            "strict": False,
            "defer_loading": True,
        },
    ]
    text = "".join(e.text for e in events if isinstance(e, ContentDelta))
    thinking = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert text == "Found it." and thinking == "let me look"
    assert calls[0].id == "call_1_0" and calls[0].name == "mcp__demo__echo"
    assert json.loads("".join(c.arguments for c in calls)) == {"text": "hi"}
    search = next(e for e in events if isinstance(e, ToolSearchDone))
    assert (search.query, search.tool_names, search.error) == ("echo text", ["mcp__demo__echo"], None)
    assert UsageUpdate(120, 30) in events
    kept = next(e for e in events if isinstance(e, ProviderContent))
    assert kept.provider == "openai-responses"
    assert canonical(kept.blocks) == canonical(responses_output(reply, body, 1))
    assert events[-1] == StreamDone("tool_calls")


async def test_history_from_chat_completions_shape_becomes_responses_input(
    model_server: ScriptedModelServer,
) -> None:
    """A conversation that started on Chat Completions (no kept items) is sent as Responses input:
    user images as input_image, the calls as function_call items, tool results (with images) as
    function_call_output; engine-only keys do not leak."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.png"}'},
    }
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]},
        {"role": "assistant", "content": "Let me look.", "reasoning": "hm", "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "read_file",
            "content": [{"type": "text", "text": "a.png"}, image],
            "is_error": False,
        },
        {"role": "tool", "tool_call_id": "c2", "name": "bash", "content": "", "is_error": True},
    ]
    model_server.script([Reply.text("A cat.")])
    provider = OpenAIProvider(model_server.openai_base_url, "k", "gpt-5.4")
    events = await collect(provider, ModelRequest(messages=messages, deferred_tools=[ECHO_SCHEMA]))
    await provider.aclose()
    assert events[-1] == StreamDone("stop")
    assert_sdk_request_shapes(model_server.model_requests()[0].body)
    png = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}
    assert model_server.model_requests()[0].body["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "what is this?"}, png]},
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": '{"path": "a.png"}'},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "a.png"}, png],
        },
        {"type": "function_call_output", "call_id": "c2", "output": "(no output)"},
    ]


async def test_provider_reports_errors_and_cut_streams(model_server: ScriptedModelServer) -> None:
    model_server.script(
        [
            Reply.error_in_stream(8, "the model crashed"),
            Reply.cut_after(6),
            Reply.text("long answer", finish_reason="length"),
        ]
    )
    provider = OpenAIProvider(model_server.openai_base_url, "k", "gpt-5.4")
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}], deferred_tools=[ECHO_SCHEMA])
    with pytest.raises(ProviderError, match="the model crashed"):
        await collect(provider, request)
    with pytest.raises(ProviderError, match="stream ended early"):
        await collect(provider, request)
    events = await collect(provider, request)
    await provider.aclose()
    assert events[-1] == StreamDone("length")
    assert all(r.path == "/v1/responses" for r in model_server.model_requests())


async def test_hosted_search_round_trip_and_expansion(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    search = {"query": "echo some text", "found": ["mcp__demo__echo"]}
    found_echo = Reply.tools(
        [("mcp__demo__echo", {"text": "hi"})], text="Found it.", reasoning="hmm", tool_search=search
    )
    model_server.script([found_echo, Reply.text("It said hi."), Reply.text("Again.")])
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session, ui = await session_for(openai_config(model_server), demo_mcp, tmp_path, storage)
        assert session.tool_search_tier == "native"
        await session.send("echo hi through the demo server")
        assert not ui.errors, ui.errors
        first_request, second_request = model_server.model_requests()
        assert first_request.path == second_request.path == "/v1/responses"
        first, second = first_request.body, second_request.body
        assert_sdk_request_shapes(first)
        assert_sdk_request_shapes(second)  # the kept items too

        # The request: the hosted search tool, every MCP tool deferred, built-ins loaded, no
        # client-side tool_search function.
        assert HOSTED_SEARCH in first["tools"]
        tools = tools_by_name(first)
        mcp_tools = {n: t for n, t in tools.items() if n.startswith("mcp__demo__")}
        assert mcp_tools and all(t.get("defer_loading") is True for t in mcp_tools.values())
        assert "bash" in tools and "defer_loading" not in tools["bash"]
        assert "tool_search" not in tools

        # The output items went back exactly as they came (reasoning with its encrypted content,
        # the search call and output, the message, the call), then the call's output.
        streamed = responses_output(found_echo, first, 1)
        assert [item["type"] for item in streamed] == [
            "reasoning",
            "tool_search_call",
            "tool_search_output",
            "message",
            "function_call",
        ]
        start = next(i for i, item in enumerate(second["input"]) if item.get("type") == "reasoning")
        sent_back = second["input"][start : start + len(streamed)]
        assert [canonical(item) for item in sent_back] == [canonical(item) for item in streamed]
        output = second["input"][start + len(streamed)]
        assert output["type"] == "function_call_output" and output["call_id"] == "call_1_0"
        assert "echo: hi" in output["output"]

        # The found tool is loaded from now on; the others stay deferred.
        after = tools_by_name(second)
        assert "defer_loading" not in after["mcp__demo__echo"]
        assert after["mcp__demo__add"]["defer_loading"] is True

        # The user saw the same compact card as for Anthropic's search.
        card = next(item for item in ui.prepared if item.func_name == "tool_search")
        assert card.header == "searched tools: echo some text → 1 found"
        assert ui.results[card.call_id][1].text == "mcp__demo__echo"
        assert ui.text == "Found it.It said hi."

        # Stored and resumed: the items still go back unchanged.
        cfg = openai_config(model_server)
        resumed = build_session(
            cfg, create_provider(cfg), RecordingUI(), storage=storage, mcp=demo_mcp, cwd=tmp_path,
            session_id=session.session_id,
        )  # fmt: skip
        await resumed.start()
        await resumed.send("again")
        third = model_server.model_requests()[2].body
        again = third["input"][start : start + len(streamed)]
        assert [canonical(item) for item in again] == [canonical(item) for item in streamed]
    finally:
        await storage.close()


async def test_a_failed_search_is_shown_and_expands_nothing(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    failed = {"query": "weather", "error_code": "unavailable"}
    model_server.script([Reply.text("No luck.", tool_search=failed), Reply.text("ok")])
    session, ui = await session_for(openai_config(model_server), demo_mcp, tmp_path)
    await session.send("weather?")
    card = next(item for item in ui.prepared if item.func_name == "tool_search")
    assert card.header == "searched tools: weather → failed: search incomplete"
    assert ui.results[card.call_id][1].is_error
    await session.send("again")
    tools = tools_by_name(model_server.model_requests()[1].body)
    assert all(t.get("defer_loading") for n, t in tools.items() if n.startswith("mcp__"))


async def test_a_400_naming_tool_search_falls_back_to_chat_completions_once(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    rejected = Reply.error(
        400, "Invalid value: 'tool_search'. Supported values are: 'function', 'file_search' and 'web_search'."
    )
    model_server.script([rejected])
    await assert_falls_back_once(model_server, demo_mcp, tmp_path, "rejected native tool search")


async def assert_falls_back_once(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path, notice: str
) -> None:
    """The first request (hosted search, /responses) fails; it is sent again as Chat Completions
    with the client-side tool_search, and so is the next turn's (remembered for the session)."""
    model_server.script([Reply.text("Fine."), Reply.text("Still fine.")])
    session, ui = await session_for(openai_config(model_server), demo_mcp, tmp_path)
    assert session.tool_search_tier == "native"
    await session.send("hello")
    assert not ui.errors and ui.text == "Fine."
    assert any(notice in info for info in ui.infos)
    assert session.tool_search_tier == "client"
    await session.send("and again")  # remembered for the session: no second hosted attempt
    requests = model_server.model_requests()
    assert [r.path for r in requests] == ["/v1/responses", "/v1/chat/completions", "/v1/chat/completions"]
    for request in requests[1:]:
        names = {t["function"]["name"] for t in request.body["tools"]}
        assert "tool_search" in names and not any(n.startswith("mcp__") for n in names)
        assert not any("defer_loading" in json.dumps(t) for t in request.body["tools"])


async def test_other_400s_are_errors_not_fallbacks(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    model_server.script([Reply.error(400, "input[1].content: must not be empty")])
    session, ui = await session_for(openai_config(model_server), demo_mcp, tmp_path)
    await session.send("hello")
    assert ui.errors and "must not be empty" in ui.errors[-1]
    assert session.tool_search_tier == "native"


async def test_older_models_keep_the_chat_completions_client_tier(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    model_server.script([Reply.text("Hi.")])
    session, ui = await session_for(openai_config(model_server, "gpt-5"), demo_mcp, tmp_path)
    assert session.tool_search_tier == "client"
    await session.send("hello")
    (request,) = model_server.model_requests()
    assert request.path == "/v1/chat/completions"
    names = [t["function"]["name"] for t in request.body["tools"]]
    assert "tool_search" in names and not any(n.startswith("mcp__") for n in names)
    assert "defer_loading" not in json.dumps(request.body)


@pytest.mark.parametrize("status", [404, 405])
async def test_a_proxy_without_the_responses_api_falls_back_to_chat_completions_once(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path, status: int
) -> None:
    """An OpenAI-compatible proxy that has /chat/completions but no /responses (it answers 404, or
    405) gets the client tier for the rest of the session, like a 400 naming tool search."""
    model_server.missing["/responses"] = status
    await assert_falls_back_once(
        model_server, demo_mcp, tmp_path, "does not offer the API native tool search needs"
    )


async def test_a_404_from_chat_completions_is_an_error_not_a_fallback(
    model_server: ScriptedModelServer, demo_mcp: McpManager, tmp_path: Path
) -> None:
    """Without deferred tools (the client tier already) a 404 is the model's error, told as such."""
    model_server.script([Reply.error(404, "The model `gpt-5.4` does not exist")])
    cfg = openai_config(model_server)
    cfg.tools.search = "off"
    session, ui = await session_for(cfg, demo_mcp, tmp_path)
    await session.send("hello")
    assert ui.errors and "does not exist" in ui.errors[-1]
    assert [r.path for r in model_server.model_requests()] == ["/v1/chat/completions"]
