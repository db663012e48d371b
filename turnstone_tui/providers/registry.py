"""The model providers by the name config, the CLI and the factory use: one entry per provider.

Adding a provider: a module here with a class that has ``from_config(config)`` and speaks the
``core.provider.Provider`` protocol, and one ``ProviderEntry`` below. The module is imported only
when that provider is built (the SDKs are slow to import).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..config import Config
    from ..core.provider import Provider

GENERIC_LOCAL_HINT = (
    "the local model needs the optional llama.cpp backend: pip install 'turnstone-tui[local]'"
)


class ProviderClass(Protocol):
    def from_config(self, config: Config) -> Provider: ...


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    name: str
    module: str  # below turnstone_tui.providers
    class_name: str
    hosted_host: str = ""  # the vendor's own API: its models take images unless the config says no
    images: bool = True  # False: never send images (unless the config says yes)
    install_hint: str = ""  # said when the module cannot be imported (an optional extra)
    sdk: str = ""  # the third-party package the module is built on (its import is the slow part)

    @property
    def module_path(self) -> str:
        return f"{__package__}.{self.module}"

    def load(self) -> ProviderClass:
        try:
            module = importlib.import_module(self.module_path)
        except ImportError as exc:
            if not self.install_hint:
                raise
            from ..core.provider import ProviderError

            raise ProviderError(f"{self.install_hint} ({exc})") from exc
        return getattr(module, self.class_name)


PROVIDERS: dict[str, ProviderEntry] = {
    entry.name: entry
    for entry in (
        ProviderEntry(
            "openai", "openai_provider", "OpenAIProvider", hosted_host="api.openai.com", sdk="openai"
        ),
        ProviderEntry(
            "anthropic",
            "anthropic_provider",
            "AnthropicProvider",
            hosted_host="api.anthropic.com",
            sdk="anthropic",
        ),
        ProviderEntry(
            "local", "local_provider", "LocalProvider", images=False, install_hint=GENERIC_LOCAL_HINT
        ),
    )
}
PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS)
HOSTED_HOSTS: tuple[str, ...] = tuple(e.hosted_host for e in PROVIDERS.values() if e.hosted_host)
