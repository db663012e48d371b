"""AnthropicProvider through the real anthropic SDK against the scripted server's /v1/messages."""

from __future__ import annotations

import json

from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.config import Config
from turnstone_tui.core.provider import ModelRequest, StreamDone, ToolCallDelta, UsageUpdate
from turnstone_tui.providers.anthropic_provider import DEFAULT_MAX_TOKENS, AnthropicProvider

BASH_SCHEMA = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}


async def test_text_thinking_and_usage(
    model_server: ScriptedModelServer, anthropic_provider: AnthropicProvider, run_stream
) -> None:
    model_server.script(
        [Reply.text("Paris is the capital.", reasoning="France... capital...", usage=(120, 9))]
    )
    got = await run_stream(anthropic_provider)
    assert got.reasoning == "France... capital..."
    assert got.text == "Paris is the capital."
    assert got.usage == UsageUpdate(prompt_tokens=120, completion_tokens=9)
    assert isinstance(got.events[-1], StreamDone) and got.events[-1].finish_reason == "stop"
    assert len(got.done) == 1


async def test_two_tool_uses_with_split_input_json(
    model_server: ScriptedModelServer, anthropic_provider: AnthropicProvider, run_stream
) -> None:
    model_server.script(
        [
            Reply.tools(
                [("bash", {"command": "echo hi"}), ("read_file", {"path": "x"})],
                text="Checking.",
                chunk_size=3,
            )
        ]
    )
    got = await run_stream(anthropic_provider)
    assert got.text == "Checking."
    pieces = [e for e in got.events if isinstance(e, ToolCallDelta) and e.arguments]
    assert len(pieces) > 4  # input_json_delta arrived in several pieces and each was passed on
    calls = got.tool_calls
    assert [(c["id"], c["name"]) for c in calls] == [("toolu_1_0", "bash"), ("toolu_1_1", "read_file")]
    assert json.loads(calls[0]["arguments"]) == {"command": "echo hi"}
    assert json.loads(calls[1]["arguments"]) == {"path": "x"}
    assert got.done[0].finish_reason == "tool_calls"


async def test_raw_argument_string_is_passed_through(
    model_server: ScriptedModelServer, anthropic_provider: AnthropicProvider, run_stream
) -> None:
    model_server.script([Reply.tools([("bash", "ls -la")])])
    got = await run_stream(anthropic_provider)
    assert got.tool_calls == [{"id": "toolu_1_0", "name": "bash", "arguments": "ls -la"}]


async def test_conversion_of_what_is_sent(
    model_server: ScriptedModelServer, anthropic_provider: AnthropicProvider, run_stream
) -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this"},
                {"type": "image_url", "image_url": {"url": png}},
            ],
        },
        {"role": "user", "content": "and run ls"},
        {
            "role": "assistant",
            "content": "Sure.",
            "tool_calls": [
                {
                    "id": "toolu_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                },
                {"id": "toolu_b", "type": "function", "function": {"name": "bash", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_a", "content": "a.txt\nb.txt"},
        {"role": "tool", "tool_call_id": "toolu_b", "content": "invalid arguments", "is_error": True},
        {"role": "user", "content": "thanks"},
    ]
    model_server.script([Reply.text("ok")])
    await run_stream(anthropic_provider, ModelRequest(messages=messages, tools=[BASH_SCHEMA]))
    [req] = model_server.requests
    assert req.path == "/v1/messages"
    body = req.body
    assert body["stream"] is True
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert body["system"] == "You are helpful.\n\nBe brief."
    assert body["tools"] == [
        {
            "name": "bash",
            "description": "Run a shell command",
            "input_schema": BASH_SCHEMA["function"]["parameters"],
        }
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
                {"type": "text", "text": "and run ls"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_b", "name": "bash", "input": {"raw_arguments": "not json"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": [{"type": "text", "text": "a.txt\nb.txt"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": [{"type": "text", "text": "invalid arguments"}],
                    "is_error": True,
                },
                {"type": "text", "text": "thanks"},
            ],
        },
    ]


async def test_base_url_with_v1_suffix_and_config_limits(
    model_server: ScriptedModelServer, run_stream
) -> None:
    provider = AnthropicProvider(model_server.url + "/v1/", "k", "claude-x", temperature=0.2, max_tokens=1000)
    model_server.script([Reply.text("ok")])
    got = await run_stream(provider)
    await provider.aclose()
    assert got.text == "ok"
    [req] = model_server.requests
    assert req.path == "/v1/messages"
    assert req.body["max_tokens"] == 1000
    assert "temperature" not in req.body  # the current Messages API has no temperature
    assert "system" not in req.body and "tools" not in req.body


async def test_thinking_blocks_are_sent_back_with_their_tool_use(
    model_server: ScriptedModelServer, run_stream
) -> None:
    provider = AnthropicProvider(model_server.url, "k", "claude-x", reasoning_effort="low", temperature=0.5)
    model_server.script(
        [
            Reply.tools([("bash", {"command": "pwd"})], reasoning="I should check the directory"),
            Reply.text("/tmp"),
        ]
    )
    first = await run_stream(provider)
    call = first.tool_calls[0]
    messages = [
        {"role": "user", "content": "where am I"},
        {
            "role": "assistant",
            "content": first.text,
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": "/tmp"},
    ]
    await run_stream(provider, ModelRequest(messages=messages))
    await provider.aclose()
    first_body, second_body = (r.body for r in model_server.requests)
    assert first_body["thinking"]["type"] == "enabled"
    assert first_body["max_tokens"] > first_body["thinking"]["budget_tokens"]
    assistant = second_body["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should check the directory",
        "signature": "sig-1",
    }
    assert assistant["content"][1]["type"] == "tool_use"


WEB_SEARCH_SCHEMA = {
    "type": "function",
    "function": {
        "name": "web_search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


async def test_native_web_search_runs_on_the_server_and_cites_its_sources(
    model_server: ScriptedModelServer, fast_retry, run_stream
) -> None:
    search = {
        "query": "textual markdown streaming",
        "results": [["Textual docs", "https://textual.textualize.io/"], ["Blog", "https://example.com/post"]],
    }
    model_server.script([Reply(kind="text", content="Textual streams Markdown.", web_search=search)])
    provider = AnthropicProvider(
        model_server.anthropic_base_url, "k", "claude-test", retry=fast_retry, native_web_search="on"
    )
    request = ModelRequest(
        messages=[{"role": "user", "content": "q"}], tools=[BASH_SCHEMA, WEB_SEARCH_SCHEMA]
    )
    try:
        got = await run_stream(provider, request)
    finally:
        await provider.aclose()
    # The client-side web_search became Anthropic's server tool; other tools are untouched.
    tools = model_server.model_requests()[0].body["tools"]
    assert [tool["name"] for tool in tools] == ["bash", "web_search"]
    assert tools[1] == {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    # The search ran on the server: nothing for the engine to execute, but the user sees it.
    assert got.tool_calls == []
    assert got.reasoning == "Searching the web: textual markdown streaming\n"
    assert got.text == (
        "Textual streams Markdown.\n\nSources:\n\n"
        "- [Textual docs](https://textual.textualize.io/)\n- [Blog](https://example.com/post)\n"
    )
    assert got.done[0].finish_reason == "stop"


async def test_web_search_stays_a_client_tool_off_anthropics_hosted_api(
    model_server: ScriptedModelServer, anthropic_provider: AnthropicProvider, run_stream
) -> None:
    # "auto" (the default) against a local server: Tavily's web_search, as a normal tool.
    assert not anthropic_provider.native_web_search
    model_server.script([Reply.text("ok")])
    request = ModelRequest(messages=[{"role": "user", "content": "q"}], tools=[WEB_SEARCH_SCHEMA])
    await run_stream(anthropic_provider, request)
    [tool] = model_server.model_requests()[0].body["tools"]
    assert tool["name"] == "web_search" and "input_schema" in tool and "type" not in tool
    assert AnthropicProvider("", "k", "m").native_web_search  # the hosted API
    assert not AnthropicProvider("", "k", "m", native_web_search="off").native_web_search
    config = Config()
    config.tools.native_web_search = "off"
    assert not AnthropicProvider.from_config(config).native_web_search  # [tools] native_web_search
