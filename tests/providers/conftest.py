"""Fixtures for provider tests: real SDK clients pointed at the scripted model server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from tests.helpers.model_server import ScriptedModelServer
from turnstone_tui.core.provider import (
    ContentDelta,
    ModelRequest,
    Provider,
    ProviderError,
    ReasoningDelta,
    StreamDone,
    StreamEvent,
    ToolCallDelta,
    UsageUpdate,
)
from turnstone_tui.providers.anthropic_provider import AnthropicProvider
from turnstone_tui.providers.openai_provider import OpenAIProvider
from turnstone_tui.providers.retry import RetryPolicy

STREAM_TIMEOUT = 20.0


@dataclass
class Collected:
    events: list[StreamEvent] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ContentDelta))

    @property
    def reasoning(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ReasoningDelta))

    @property
    def tool_calls(self) -> list[dict[str, str]]:
        """Assembled by index, the way the session engine does it."""
        calls: dict[int, dict[str, str]] = {}
        for e in self.events:
            if isinstance(e, ToolCallDelta):
                call = calls.setdefault(e.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = e.id or call["id"]
                call["name"] = e.name or call["name"]
                call["arguments"] += e.arguments
        return [calls[i] for i in sorted(calls)]

    @property
    def usage(self) -> UsageUpdate | None:
        updates = [e for e in self.events if isinstance(e, UsageUpdate)]
        return updates[-1] if updates else None

    @property
    def done(self) -> list[StreamDone]:
        return [e for e in self.events if isinstance(e, StreamDone)]


RunStream = Callable[..., Awaitable[Collected]]


async def _run(provider: Provider, request: ModelRequest | None = None, **kwargs: object) -> Collected:
    request = request or ModelRequest(messages=[{"role": "user", "content": "hi"}], **kwargs)  # type: ignore[arg-type]
    collected = Collected()

    async def consume() -> None:
        async for event in provider.stream(request):
            collected.events.append(event)

    await asyncio.wait_for(consume(), STREAM_TIMEOUT)
    return collected


@pytest.fixture
def run_stream() -> RunStream:
    """``await run_stream(provider, request)`` -> Collected (events, text, reasoning, tool_calls…)."""
    return _run


async def _run_until_error(
    provider: Provider, request: ModelRequest | None = None
) -> tuple[Collected, ProviderError]:
    request = request or ModelRequest(messages=[{"role": "user", "content": "hi"}])
    collected = Collected()

    async def consume() -> None:
        async for event in provider.stream(request):
            collected.events.append(event)

    with pytest.raises(ProviderError) as info:
        await asyncio.wait_for(consume(), STREAM_TIMEOUT)
    return collected, info.value


@pytest.fixture
def stream_until_error() -> Callable[..., Awaitable[tuple[Collected, ProviderError]]]:
    """``await stream_until_error(provider)`` -> (events before the error, the ProviderError)."""
    return _run_until_error


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return RetryPolicy(retries=2, base_delay=0.01)


@pytest.fixture
async def openai_provider(
    model_server: ScriptedModelServer, fast_retry: RetryPolicy
) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(model_server.openai_base_url, "sk-test", "gpt-test", retry=fast_retry)
    yield provider
    await provider.aclose()


@pytest.fixture
async def anthropic_provider(
    model_server: ScriptedModelServer, fast_retry: RetryPolicy
) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(
        model_server.anthropic_base_url, "sk-ant-test", "claude-test", retry=fast_retry
    )
    yield provider
    await provider.aclose()


@pytest.fixture(params=["openai", "anthropic"])
def any_provider(request: pytest.FixtureRequest) -> Provider:
    """Each test using this runs once per wire protocol."""
    return request.getfixturevalue(f"{request.param}_provider")
