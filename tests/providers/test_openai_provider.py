"""OpenAIProvider through the real openai SDK against the scripted server's /v1/chat/completions."""

from __future__ import annotations

import json

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.core.provider import (
    ContentDelta,
    ModelRequest,
    ReasoningDelta,
    StreamDone,
    ToolCallDelta,
    UsageUpdate,
)
from turnstone_tui.providers.openai_provider import OpenAIProvider

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


async def test_text_streams_in_pieces_and_ends_with_one_stream_done(
    model_server: ScriptedModelServer, openai_provider: OpenAIProvider, run_stream
) -> None:
    model_server.script([Reply.text("Hello, world! How are you today?", chunk_size=5, usage=(42, 7))])
    got = await run_stream(openai_provider)
    assert got.text == "Hello, world! How are you today?"
    assert len([e for e in got.events if isinstance(e, ContentDelta)]) == 7
    assert isinstance(got.events[-1], StreamDone) and got.events[-1].finish_reason == "stop"
    assert len(got.done) == 1
    assert got.usage == UsageUpdate(prompt_tokens=42, completion_tokens=7)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_become_reasoning_events(
    model_server: ScriptedModelServer, openai_provider: OpenAIProvider, run_stream, field: str
) -> None:
    model_server.script([Reply.text("It is 4.", reasoning="2 plus 2 makes 4", reasoning_field=field)])
    got = await run_stream(openai_provider)
    assert got.reasoning == "2 plus 2 makes 4"
    assert got.text == "It is 4."
    kinds = [type(e) for e in got.events if isinstance(e, (ContentDelta, ReasoningDelta))]
    assert kinds.index(ContentDelta) > kinds.index(ReasoningDelta)  # thinking shown before the answer


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5])
async def test_think_tags_split_across_chunks(
    model_server: ScriptedModelServer, openai_provider: OpenAIProvider, run_stream, chunk_size: int
) -> None:
    model_server.script(
        [Reply.text("The answer is 4.", reasoning="2+2 is 4", think_tags=True, chunk_size=chunk_size)]
    )
    got = await run_stream(openai_provider)
    assert got.reasoning == "2+2 is 4"
    assert got.text == "The answer is 4."
    assert "think>" not in got.text


async def test_two_parallel_tool_calls_keep_their_index_even_interleaved(
    model_server: ScriptedModelServer, openai_provider: OpenAIProvider, run_stream
) -> None:
    model_server.script(
        [
            Reply.tools(
                [("bash", {"command": "echo hi"}), ("read_file", {"path": "notes/x.txt"})],
                text="Let me look.",
                interleave_tools=True,
                chunk_size=3,
            )
        ]
    )
    got = await run_stream(openai_provider)
    assert got.text == "Let me look."
    deltas = [e for e in got.events if isinstance(e, ToolCallDelta)]
    assert {d.index for d in deltas} == {0, 1}
    assert [d.index for d in deltas[:4]] == [0, 1, 0, 1]  # interleaved on the wire, passed through as-is
    calls = got.tool_calls
    assert [c["name"] for c in calls] == ["bash", "read_file"]
    assert [c["id"] for c in calls] == ["call_1_0", "call_1_1"]
    assert json.loads(calls[0]["arguments"]) == {"command": "echo hi"}
    assert json.loads(calls[1]["arguments"]) == {"path": "notes/x.txt"}
    assert got.done[0].finish_reason == "tool_calls"


async def test_raw_argument_string_is_passed_through(
    model_server: ScriptedModelServer, openai_provider: OpenAIProvider, run_stream
) -> None:
    model_server.script([Reply.tools([("bash", "ls -la")])])
    got = await run_stream(openai_provider)
    assert got.tool_calls == [{"id": "call_1_0", "name": "bash", "arguments": "ls -la"}]


async def test_what_is_sent(model_server: ScriptedModelServer, run_stream) -> None:
    provider = OpenAIProvider(
        model_server.openai_base_url,
        "sk-secret",
        "qwen3",
        temperature=0.3,
        max_tokens=512,
        reasoning_effort="low",
    )
    model_server.script([Reply.text("done")])
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": None,
            "reasoning": "engine-only field",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "boom", "is_error": True},
    ]
    got = await run_stream(provider, ModelRequest(messages=messages, tools=[BASH_SCHEMA]))
    await provider.aclose()
    assert got.text == "done"
    [req] = model_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-secret"
    body = req.body
    assert body["model"] == "qwen3"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 512  # custom endpoint: the widely supported name
    assert body["reasoning_effort"] == "low"
    assert body["tools"] == [BASH_SCHEMA]
    assert body["messages"] == [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "boom"},
    ]


async def test_empty_api_key_sends_placeholder_and_no_tools_key(
    model_server: ScriptedModelServer, run_stream
) -> None:
    provider = OpenAIProvider(model_server.openai_base_url, "", "local-model")
    model_server.script([Reply.text("ok")])
    await run_stream(provider)
    await provider.aclose()
    [req] = model_server.requests
    assert req.headers["authorization"] == "Bearer not-needed"
    assert "tools" not in req.body and "temperature" not in req.body and "reasoning_effort" not in req.body


async def test_images_in_tool_results_move_to_a_user_message(
    model_server: ScriptedModelServer, openai_provider: OpenAIProvider, run_stream
) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages = [
        {"role": "user", "content": "look"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "an image"}, image]},
    ]
    model_server.script([Reply.text("I see a cat")])
    await run_stream(openai_provider, ModelRequest(messages=messages))
    sent = model_server.requests[0].body["messages"]
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "text": "an image"}],
    }
    assert sent[3]["role"] == "user" and sent[3]["content"][1] == image


def test_hosted_openai_uses_max_completion_tokens() -> None:
    provider = OpenAIProvider("", "sk", "gpt-5", max_tokens=100)
    params = provider.build_params(ModelRequest(messages=[{"role": "user", "content": "x"}]))
    assert params["max_completion_tokens"] == 100 and "max_tokens" not in params


async def test_a_search_model_gets_web_search_options_and_its_citations_are_listed(
    model_server: ScriptedModelServer, fast_retry, run_stream
) -> None:
    provider = OpenAIProvider(
        model_server.openai_base_url, "k", "gpt-5-search-api", retry=fast_retry, temperature=0.3
    )
    web_search = {"type": "function", "function": {"name": "web_search", "parameters": {"type": "object"}}}
    bash = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    results = [["Textual docs", "https://textual.textualize.io/"]]
    model_server.script(
        [
            Reply(
                kind="text", content="Textual streams Markdown.", web_search={"query": "", "results": results}
            )
        ]
    )
    try:
        got = await run_stream(
            provider, ModelRequest(messages=[{"role": "user", "content": "q"}], tools=[bash, web_search])
        )
    finally:
        await provider.aclose()
    body = model_server.model_requests()[0].body
    assert body["web_search_options"] == {}
    assert [tool["function"]["name"] for tool in body["tools"]] == ["bash"]
    assert "temperature" not in body
    assert (
        got.text
        == "Textual streams Markdown.\n\nSources:\n\n- [Textual docs](https://textual.textualize.io/)\n"
    )


def test_only_search_models_get_web_search_options() -> None:
    web_search = {"type": "function", "function": {"name": "web_search", "parameters": {"type": "object"}}}
    request = ModelRequest(messages=[{"role": "user", "content": "q"}], tools=[web_search])
    params = OpenAIProvider("", "k", "gpt-4.1").build_params(request)
    assert "web_search_options" not in params and params["tools"] == [web_search]
    assert "web_search_options" in OpenAIProvider("", "k", "gpt-4o-search-preview").build_params(request)
