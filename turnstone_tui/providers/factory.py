"""Pick and build the provider a Config asks for; model aliases; vision support."""

from __future__ import annotations

import contextlib
import copy
import importlib

from ..config import Config, ConfigError
from ..core.provider import Provider, ProviderError
from .registry import GENERIC_LOCAL_HINT, HOSTED_HOSTS, PROVIDER_NAMES, PROVIDERS

__all__ = [
    "GENERIC_LOCAL_HINT",
    "create_provider",
    "import_provider_module",
    "provider_name",
    "resolve_model_alias",
    "supports_vision",
]


def provider_name(config: Config) -> str:
    """``openai`` | ``anthropic`` | ``local``: the configured provider, or the one the settings imply."""
    explicit = config.model.provider
    if explicit:
        return explicit
    if not config.api.api_key and not config.api.base_url:
        return "local"
    if config.model.name.lower().startswith("claude"):
        return "anthropic"
    return "openai"


def import_provider_module(config: Config) -> None:
    """Import the module (and SDK) of the provider ``config`` selects. Slow and blocking: call it
    in a thread (``asyncio.to_thread``); ``create_provider`` then finds it imported. An import
    failure is left for ``create_provider`` to report."""
    entry = PROVIDERS.get(provider_name(config))
    if entry is not None:
        with contextlib.suppress(ImportError):
            importlib.import_module(entry.module_path)


def create_provider(config: Config) -> Provider:
    """Build the provider for ``config``. Raises ProviderError when it cannot be built."""
    name = provider_name(config)
    entry = PROVIDERS.get(name)
    if entry is None:
        raise ProviderError(f"unknown provider {name!r} (expected {', '.join(PROVIDER_NAMES)})")
    return entry.load().from_config(config)


def resolve_model_alias(config: Config, alias: str) -> Config:
    """A copy of ``config`` with the ``[models.<alias>]`` entry applied. ConfigError if unknown."""
    entry = config.models.get(alias)
    if entry is None:
        known = ", ".join(sorted(config.models)) or "none configured"
        raise ConfigError(f"unknown model alias {alias!r} (known: {known})")
    resolved = copy.deepcopy(config)
    resolved.model.name = entry.name or alias
    resolved.model.provider = entry.provider
    if entry.base_url:
        resolved.api.base_url = entry.base_url
    if entry.api_key:
        resolved.api.api_key = entry.api_key
    if entry.context_window is not None:
        resolved.model.context_window = entry.context_window
    if entry.supports_vision is not None:
        resolved.model.supports_vision = entry.supports_vision
    resolved.model.tool_search = entry.tool_search
    return resolved


def supports_vision(config: Config) -> bool:
    """Whether images may be sent: the config's override, else True only for the hosted APIs."""
    if config.model.supports_vision is not None:
        return config.model.supports_vision
    entry = PROVIDERS.get(provider_name(config))
    if entry is not None and not entry.images:
        return False
    base_url = config.api.base_url
    return not base_url or any(host in base_url for host in HOSTED_HOSTS)
