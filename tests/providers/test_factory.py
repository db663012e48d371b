"""Choosing the provider from config, model aliases, and vision support."""

from __future__ import annotations

import sys

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.config import Config, ConfigError, parse_config
from turnstone_tui.core.provider import ProviderError
from turnstone_tui.providers.anthropic_provider import AnthropicProvider
from turnstone_tui.providers.factory import (
    GENERIC_LOCAL_HINT,
    create_provider,
    provider_name,
    resolve_model_alias,
    supports_vision,
)
from turnstone_tui.providers.openai_provider import OpenAIProvider


def _config(**sections: dict) -> Config:
    return parse_config(sections)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, "local"),
        ({"model": {"name": "gpt-4o"}}, "local"),  # no key and no URL: nothing remote to talk to
        ({"api": {"api_key": "sk"}, "model": {"name": "gpt-4o"}}, "openai"),
        ({"api": {"base_url": "http://127.0.0.1:8000/v1"}, "model": {"name": "qwen3"}}, "openai"),
        ({"api": {"api_key": "sk"}, "model": {"name": "claude-sonnet-4"}}, "anthropic"),
        ({"api": {"api_key": "sk"}, "model": {"name": "claude-x", "provider": "openai"}}, "openai"),
        ({"model": {"provider": "anthropic"}}, "anthropic"),
        ({"model": {"provider": "local", "name": "x"}, "api": {"api_key": "sk"}}, "local"),
    ],
)
def test_provider_name(data: dict, expected: str) -> None:
    assert provider_name(parse_config(data)) == expected


async def test_created_providers_carry_the_config() -> None:
    cfg = parse_config(
        {
            "api": {"api_key": "sk-x", "base_url": "http://127.0.0.1:9/v1"},
            "model": {
                "name": "qwen3",
                "temperature": 0.1,
                "max_tokens": 99,
                "retries": 5,
                "retry_base_delay": 0.2,
            },
        }
    )
    provider = create_provider(cfg)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.model, provider.base_url) == ("openai", "qwen3", "http://127.0.0.1:9/v1")
    assert (provider.temperature, provider.max_tokens) == (0.1, 99)
    assert (provider.retry.retries, provider.retry.base_delay) == (5, 0.2)
    await provider.aclose()
    cfg.model.name = "claude-opus-4"
    anthropic_provider = create_provider(cfg)
    assert isinstance(anthropic_provider, AnthropicProvider)
    assert anthropic_provider.base_url == "http://127.0.0.1:9"  # /v1 is added by the SDK
    await anthropic_provider.aclose()


async def test_created_provider_talks_to_the_configured_server(
    model_server: ScriptedModelServer, run_stream
) -> None:
    cfg = parse_config({"api": {"base_url": model_server.openai_base_url}, "model": {"name": "served"}})
    provider = create_provider(cfg)
    model_server.script([Reply.text("hi from the server")])
    assert (await run_stream(provider)).text == "hi from the server"
    await provider.aclose()
    assert model_server.requests[0].body["model"] == "served"


def test_missing_local_backend_is_a_clear_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import turnstone_tui.providers as providers_pkg

    monkeypatch.setitem(sys.modules, "turnstone_tui.providers.local_provider", None)  # import fails
    monkeypatch.delattr(providers_pkg, "local_provider", raising=False)  # set if imported earlier
    with pytest.raises(ProviderError) as info:
        create_provider(Config())
    assert GENERIC_LOCAL_HINT in str(info.value)


def test_resolve_model_alias_applies_entry_to_a_copy() -> None:
    cfg = parse_config(
        {
            "api": {"api_key": "sk-main", "base_url": "https://api.openai.com/v1"},
            "model": {"name": "gpt-4o", "context_window": 128000},
            "models": {
                "fast": {"name": "qwen3-4b", "base_url": "http://127.0.0.1:8080/v1", "context_window": 8192},
                "opus": {"name": "claude-opus-4", "provider": "anthropic", "api_key": "sk-ant"},
                "vis": {"capabilities": {"supports_vision": True}, "base_url": "http://127.0.0.1:1/v1"},
            },
        }
    )
    fast = resolve_model_alias(cfg, "fast")
    assert (fast.model.name, fast.api.base_url, fast.model.context_window) == (
        "qwen3-4b",
        "http://127.0.0.1:8080/v1",
        8192,
    )
    assert fast.api.api_key == "sk-main"
    assert provider_name(fast) == "openai"
    assert supports_vision(fast) is False
    opus = resolve_model_alias(cfg, "opus")
    assert (opus.model.name, opus.api.api_key, provider_name(opus)) == (
        "claude-opus-4",
        "sk-ant",
        "anthropic",
    )
    vis = resolve_model_alias(cfg, "vis")
    assert vis.model.name == "vis" and supports_vision(vis) is True
    assert (cfg.model.name, cfg.api.base_url, cfg.model.context_window) == (
        "gpt-4o",
        "https://api.openai.com/v1",
        128000,
    )
    with pytest.raises(ConfigError, match=r"unknown model alias 'nope' \(known: fast, opus, vis\)"):
        resolve_model_alias(cfg, "nope")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"api": {"api_key": "sk"}, "model": {"name": "gpt-4o"}}, True),
        ({"api": {"api_key": "sk", "base_url": "https://api.openai.com/v1"}}, True),
        (
            {
                "api": {"api_key": "sk", "base_url": "https://api.anthropic.com"},
                "model": {"provider": "anthropic"},
            },
            True,
        ),
        ({"api": {"base_url": "http://127.0.0.1:8000/v1"}}, False),
        ({"api": {"base_url": "http://127.0.0.1:8000/v1"}, "model": {"supports_vision": True}}, True),
        ({"api": {"api_key": "sk"}, "model": {"supports_vision": False}}, False),
        ({}, False),  # local
    ],
)
def test_supports_vision(data: dict, expected: bool) -> None:
    assert supports_vision(parse_config(data)) is expected
