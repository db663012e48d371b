"""The scripted model server itself: non-streaming answers, the script file format, standalone mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anthropic
import openai

from tests.helpers.model_server import (
    ModelServerProcess,
    Reply,
    ScriptedModelServer,
    load_script,
    write_script,
)
from turnstone_tui.core.provider import ContentDelta, ModelRequest
from turnstone_tui.providers.openai_provider import OpenAIProvider


async def test_non_streaming_openai_answer(model_server: ScriptedModelServer) -> None:
    model_server.script(
        [
            Reply.text("plain answer", reasoning="hm"),
            Reply.tools([("bash", {"command": "ls"}), ("read_file", "a")]),
        ]
    )
    client = openai.AsyncOpenAI(base_url=model_server.openai_base_url, api_key="k", max_retries=0)
    first = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    assert first.choices[0].message.content == "plain answer"
    assert first.choices[0].message.model_extra["reasoning_content"] == "hm"
    second = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    calls = second.choices[0].message.tool_calls
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        ("bash", '{"command": "ls"}'),
        ("read_file", "a"),
    ]
    assert second.choices[0].finish_reason == "tool_calls"
    await client.close()


async def test_non_streaming_anthropic_answer(model_server: ScriptedModelServer) -> None:
    model_server.script([Reply.tools([("bash", {"command": "ls"})], text="Running it.")])
    client = anthropic.AsyncAnthropic(base_url=model_server.anthropic_base_url, api_key="k", max_retries=0)
    message = await client.messages.create(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "q"}]
    )
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Running it."
    assert message.content[1].input == {"command": "ls"}
    assert message.stop_reason == "tool_use"
    await client.close()


def test_script_round_trips_through_json(tmp_path: Path) -> None:
    replies = [
        Reply.text("hi", reasoning="r", think_tags=True, chunk_size=2, delay=0.01, usage=(3, 4)),
        Reply.tools([("bash", {"command": "ls"}, "call_x"), ("read_file", "raw")]),
        Reply.error(429, "slow", retry_after=1),
        Reply.cut_after(3, clean=True),
    ]
    assert load_script(write_script(tmp_path / "s.json", replies)) == replies


def test_standalone_server_serves_a_script_and_records_requests(tmp_path: Path) -> None:
    server = ModelServerProcess([Reply.text("from a subprocess")], tmp_path / "server")
    with server:

        async def ask() -> str:
            provider = OpenAIProvider(server.openai_base_url, "", "m")
            text = ""
            async for event in provider.stream(ModelRequest(messages=[{"role": "user", "content": "ping"}])):
                if isinstance(event, ContentDelta):
                    text += event.text
            await provider.aclose()
            return text

        assert asyncio.run(asyncio.wait_for(ask(), 20)) == "from a subprocess"
        [record] = server.requests()
        assert record["path"] == "/v1/chat/completions"
        assert record["body"]["messages"] == [{"role": "user", "content": "ping"}]
        assert json.loads(json.dumps(record))  # plain JSON
        assert server.stop() == 0  # SIGTERM shuts it down cleanly


async def test_server_configs_reach_the_server(
    model_server: ScriptedModelServer, tmp_path: Path, run_stream
) -> None:
    from turnstone_tui.config import load_config
    from turnstone_tui.providers.factory import create_provider

    model_server.script([Reply.text("via openai"), Reply.text("via anthropic")])
    for protocol, expected in (("openai", "via openai"), ("anthropic", "via anthropic")):
        cfg = load_config(model_server.write_config(tmp_path / f"{protocol}.toml", protocol))
        assert cfg.model.provider == protocol and cfg.model == model_server.config(protocol).model
        provider = create_provider(cfg)
        assert (await run_stream(provider)).text == expected
        await provider.aclose()
    assert [r.path for r in model_server.requests] == ["/v1/chat/completions", "/v1/messages"]
