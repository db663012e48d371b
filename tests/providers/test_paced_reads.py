"""The model SDKs' clients read a stream through providers.paced_reads: after a read that drained
the socket the next waits until READ_PACE has passed; after a full read it does not."""

from __future__ import annotations

from typing import Any

import httpcore2
import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.providers import paced_reads
from turnstone_tui.providers.anthropic_provider import AnthropicProvider
from turnstone_tui.providers.openai_provider import OpenAIProvider
from turnstone_tui.providers.paced_reads import READ_PACE, PacedStream


class ScriptedStream(httpcore2.AsyncNetworkStream):
    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return self.reads.pop(0)


class SleepLog(httpcore2.AsyncNetworkBackend):
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


async def test_a_read_after_a_short_read_waits_a_full_read_does_not() -> None:
    backend = SleepLog()
    stream = PacedStream(ScriptedStream([b"a" * 10, b"b" * 64, b"c" * 5, b""]), backend)
    assert await stream.read(64) == b"a" * 10  # the first read: nothing to wait for
    assert backend.sleeps == []
    assert await stream.read(64) == b"b" * 64  # after a short read: waits out the pace
    assert len(backend.sleeps) == 1 and 0 < backend.sleeps[0] <= READ_PACE
    assert await stream.read(64) == b"c" * 5  # after a full read (more is waiting): at once
    assert len(backend.sleeps) == 1
    assert await stream.read(64) == b""
    assert len(backend.sleeps) == 2


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_providers_stream_through_paced_reads(
    model_server: ScriptedModelServer, run_stream, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    reads: list[int] = []
    original = PacedStream.read

    async def counted(self: PacedStream, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        data = await original(self, max_bytes, timeout)
        reads.append(len(data))
        return data

    monkeypatch.setattr(paced_reads.PacedStream, "read", counted)
    text = "".join(f"word{i} " for i in range(200))
    model_server.script([Reply.text(text, chunk_size=6, delay=0.0005)])
    provider: Any = (
        OpenAIProvider(model_server.openai_base_url, "sk-test", "gpt-test")
        if kind == "openai"
        else AnthropicProvider(model_server.anthropic_base_url, "sk-ant-test", "claude-test")
    )
    try:
        got = await run_stream(provider)
    finally:
        await provider.aclose()
    assert got.text == text
    assert len(got.done) == 1
    assert reads and sum(reads) > len(text)  # the whole response came through paced reads
