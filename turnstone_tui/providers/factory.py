"""Pick and build the provider a Config asks for; model aliases; vision support."""

from __future__ import annotations

import contextlib
import copy
import importlib

from ..config import Config, ConfigError
from .base import Provider, ProviderError

PROVIDER_MODULES = {
    "openai": f"{__package__}.openai_provider",
    "anthropic": f"{__package__}.anthropic_provider",
    "local": f"{__package__}.local_provider",
}
"""The module of each provider. Each imports its SDK (seconds of CPU for ``anthropic``), so only the
selected one is ever imported, and the app imports it in a thread after its first frame."""

HOSTED_HOSTS = ("api.openai.com", "api.anthropic.com")
GENERIC_LOCAL_HINT = (
    "the local model needs the optional llama.cpp backend: pip install 'turnstone-tui[local]'"
)


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
    module = PROVIDER_MODULES.get(provider_name(config))
    if module is not None:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def _local_provider(config: Config) -> Provider:
    try:
        from .local_provider import LocalProvider
    except ImportError as exc:
        hint = GENERIC_LOCAL_HINT
        try:
            from . import local_provider

            hint = str(getattr(local_provider, "INSTALL_HINT", hint))
        except ImportError:
            pass
        raise ProviderError(f"{hint} ({exc})") from exc
    return LocalProvider.from_config(config)


def create_provider(config: Config) -> Provider:
    """Build the provider for ``config``. Raises ProviderError when it cannot be built."""
    name = provider_name(config)
    if name == "anthropic":
        from .anthropic_provider import AnthropicProvider

        return AnthropicProvider.from_config(config)
    if name == "local":
        return _local_provider(config)
    if name == "openai":
        from .openai_provider import OpenAIProvider

        return OpenAIProvider.from_config(config)
    raise ProviderError(f"unknown provider {name!r} (expected openai, anthropic or local)")


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
    if provider_name(config) == "local":
        return False
    base_url = config.api.base_url
    return not base_url or any(host in base_url for host in HOSTED_HOSTS)
