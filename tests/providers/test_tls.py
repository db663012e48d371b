"""The SDK client's TLS context is built while the SDK is imported (providers.tls), and the
client made with it is the one the SDK would have made: same context source, same requests."""

from __future__ import annotations

import ssl
import threading

import httpcore2
import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.core.provider import ContentDelta, ModelRequest
from turnstone_tui.providers import tls
from turnstone_tui.providers.anthropic_provider import AnthropicProvider
from turnstone_tui.providers.openai_provider import OpenAIProvider


@pytest.fixture
def counted_contexts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ssl.SSLContext]]:
    """Every default context httpx2 / providers.tls build: (thread name, context)."""
    built: list[tuple[str, ssl.SSLContext]] = []
    real = httpcore2.default_ssl_context

    def default_ssl_context(**kwargs: object) -> ssl.SSLContext:
        context = real(**kwargs)
        built.append((threading.current_thread().name, context))
        return context

    monkeypatch.setattr(httpcore2, "default_ssl_context", default_ssl_context)
    tls.take()  # nothing left over from another test
    return built


def client_context(provider: OpenAIProvider | AnthropicProvider) -> ssl.SSLContext:
    return provider._client._client._transport._pool._ssl_context  # noqa: SLF001


@pytest.mark.parametrize("make", [OpenAIProvider, AnthropicProvider])
def test_a_prepared_context_is_built_in_its_own_thread_and_used_by_the_next_client(
    counted_contexts: list[tuple[str, ssl.SSLContext]], make: type
) -> None:
    tls.prepare()
    tls.prepare()  # once until taken
    provider = make(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    assert [name for name, _ in counted_contexts] == ["tls-context"]
    assert client_context(provider) is counted_contexts[0][1]
    assert (
        client_context(provider).verify_mode == ssl.CERT_REQUIRED and client_context(provider).check_hostname
    )
    other = make(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")  # taken: the SDK's own
    assert len(counted_contexts) == 2 and client_context(other) is counted_contexts[1][1]


def test_without_a_prepared_context_the_sdk_builds_its_client(
    counted_contexts: list[tuple[str, ssl.SSLContext]],
) -> None:
    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    assert [name for name, _ in counted_contexts] == [threading.current_thread().name]
    assert client_context(provider) is counted_contexts[0][1]


async def test_a_client_with_the_prepared_context_streams_as_the_sdks_own(
    model_server: ScriptedModelServer, counted_contexts: list[tuple[str, ssl.SSLContext]]
) -> None:
    model_server.script([Reply.text("Same answer.")])
    tls.prepare()
    provider = OpenAIProvider(base_url=model_server.openai_base_url, api_key="k", model="m")
    try:
        events = [
            e async for e in provider.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        ]
    finally:
        await provider.aclose()
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "Same answer."
    request = model_server.model_requests()[-1]
    assert request.headers.get("authorization") == "Bearer k"
