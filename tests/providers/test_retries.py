"""Retries, clear errors and cut streams, on both wire protocols (``any_provider`` runs each twice)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.core.provider import ContentDelta, ModelRequest, Provider, ProviderError
from turnstone_tui.providers.anthropic_provider import AnthropicProvider
from turnstone_tui.providers.openai_provider import OpenAIProvider
from turnstone_tui.providers.retry import RetryPolicy


async def test_500_then_success_is_retried(
    model_server: ScriptedModelServer, any_provider: Provider, run_stream
) -> None:
    model_server.script([Reply.error(500, "temporary glitch"), Reply.text("Recovered fine")])
    got = await run_stream(any_provider)
    assert got.text == "Recovered fine"
    assert len(got.done) == 1
    assert len(model_server.model_requests()) == 2


async def test_429_retry_after_is_honoured(
    model_server: ScriptedModelServer, any_provider: Provider, run_stream
) -> None:
    model_server.script([Reply.error(429, "slow down", retry_after_ms=400), Reply.text("ok")])
    start = time.monotonic()
    got = await run_stream(any_provider)
    elapsed = time.monotonic() - start
    assert got.text == "ok"
    assert elapsed >= 0.38  # the policy's own delay is 0.01 s
    assert len(model_server.model_requests()) == 2


async def test_retry_after_seconds_header(
    model_server: ScriptedModelServer, any_provider: Provider, run_stream
) -> None:
    model_server.script([Reply.error(503, "busy", retry_after=0.3), Reply.text("ok")])
    start = time.monotonic()
    assert (await run_stream(any_provider)).text == "ok"
    assert time.monotonic() - start >= 0.28


async def test_exhausted_retries_give_one_clear_error(
    model_server: ScriptedModelServer, any_provider: Provider, stream_until_error
) -> None:
    model_server.script([Reply.error(503, "upstream overloaded")] * 3 + [Reply.text("never reached")])
    collected, error = await stream_until_error(any_provider)
    message = str(error)
    assert "503" in message and "upstream overloaded" in message
    assert "gave up after 3 attempts" in message
    assert "\n" not in message
    assert error.status == 503
    assert collected.events == []
    assert len(model_server.model_requests()) == 3  # 1 + retries=2
    assert model_server.remaining == 1


@pytest.mark.parametrize(
    ("status", "text"), [(401, "invalid api key"), (404, "model 'nope' not found"), (400, "bad")]
)
async def test_client_errors_are_not_retried(
    model_server: ScriptedModelServer, any_provider: Provider, status: int, text: str, stream_until_error
) -> None:
    model_server.script([Reply.error(status, text), Reply.text("never reached")])
    _, error = await stream_until_error(any_provider)
    assert error.status == status
    assert str(error).endswith(f"API error {status}: {text}")
    assert not error.retryable
    assert len(model_server.model_requests()) == 1


async def test_cut_mid_stream_is_an_error_not_a_truncated_answer(
    model_server: ScriptedModelServer, any_provider: Provider, stream_until_error
) -> None:
    model_server.script([Reply.cut_after(6, "one two three four five six seven eight nine"), Reply.text("x")])
    collected, error = await stream_until_error(any_provider)
    assert str(error).startswith("stream ended early")
    assert collected.text  # some content had already arrived…
    assert not collected.done  # …but the stream never claimed to be complete
    assert len(model_server.model_requests()) == 1  # output already shown: no silent retry


async def test_error_event_inside_the_stream_is_reported_with_its_message(
    model_server: ScriptedModelServer, any_provider: Provider, stream_until_error
) -> None:
    model_server.script(
        [Reply.error_in_stream(6, "the model crashed", "one two three four five six seven", status=500)]
    )
    collected, error = await stream_until_error(any_provider)
    assert "the model crashed" in str(error)
    assert collected.text and not collected.done
    assert len(model_server.model_requests()) == 1


async def test_clean_close_without_terminator_is_an_error(
    model_server: ScriptedModelServer, any_provider: Provider, stream_until_error
) -> None:
    model_server.script([Reply.cut_after(6, "one two three four five six seven", clean=True)])
    collected, error = await stream_until_error(any_provider)
    assert str(error).startswith("stream ended early")
    assert collected.text and not collected.done


@pytest.mark.parametrize("clean", [False, True])
async def test_cut_before_any_output_is_retried(
    model_server: ScriptedModelServer, any_provider: Provider, run_stream, clean: bool
) -> None:
    model_server.script([Reply.cut_after(1, clean=clean), Reply.text("second try")])
    got = await run_stream(any_provider)
    assert got.text == "second try"
    assert len(model_server.model_requests()) == 2


async def test_script_exhausted_error_reaches_the_user(
    model_server: ScriptedModelServer, any_provider: Provider, stream_until_error
) -> None:
    _, error = await stream_until_error(any_provider)
    assert "script exhausted" in str(error) and "500" in str(error)


@pytest.mark.parametrize("cls", [OpenAIProvider, AnthropicProvider])
async def test_connection_refused_is_retried_then_reported(cls: type) -> None:
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = cls(f"http://127.0.0.1:{port}", "k", "m", retry=RetryPolicy(retries=2, base_delay=0.05))
    start = time.monotonic()
    with pytest.raises(ProviderError) as info:
        async for _ in provider.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}])):
            pass
    await provider.aclose()
    assert time.monotonic() - start >= 0.14  # 0.05 + 0.1 of backoff
    assert "connection failed" in str(info.value) and "gave up after 3 attempts" in str(info.value)
    assert f"127.0.0.1:{port}" in str(info.value)


async def test_slow_stream_can_be_cancelled(
    model_server: ScriptedModelServer, openai_provider: OpenAIProvider
) -> None:
    model_server.script([Reply.text("a b c d e f g h i j k l", chunk_size=2, delay=0.3)])
    seen: list[str] = []

    async def consume() -> None:
        async for event in openai_provider.stream(ModelRequest(messages=[{"role": "user", "content": "x"}])):
            if isinstance(event, ContentDelta):
                seen.append(event.text)

    task = asyncio.create_task(consume())
    for _ in range(200):
        await asyncio.sleep(0.1)
        if seen:
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 1 <= len(seen) < 6
