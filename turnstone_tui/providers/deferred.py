"""The configured provider, built in a thread while the app becomes usable.

Importing a model SDK costs a second or more of CPU (``openai`` defines its whole API as
pydantic models on import). The app's session does not need the SDK to start: it needs the
provider's name, model and tool-search capability, which the config and the capability table
give. ``DeferredProvider`` answers those at once and builds the real provider (SDK import and
``from_config``) in a worker thread; the first request waits for the build, and a build that
fails becomes that request's ProviderError (also reported through ``failure``).

Only the API providers are deferred: the local provider loads a model file and shows a banner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..core.provider import ModelRequest, Provider, ProviderError, StreamEvent
from .capabilities import anthropic_native_tool_search, openai_hosted_tool_search

if TYPE_CHECKING:
    from ..config import Config

IMPORT_LOCK = threading.Lock()
"""Held by a thread importing a large part of the dependencies (the provider's build, the app's
import warm-up, a -p run's early SDK import, the MCP manager's import): they reach httpx/httpx2,
and two threads importing one package with import cycles at once can hand one of them the package
half-initialised ("partially initialized module 'httpx' has no attribute 'URL'"), which failed the
build and so every request of the session."""


def _build_alone(config: Config, preload: tuple[str, ...] = ()) -> Provider:
    import importlib

    from . import tls
    from .factory import create_provider

    with IMPORT_LOCK:
        tls.prepare()  # read while the SDK imports (a no-op when the -p run's SDK import did it)
        provider = create_provider(config)
        for name in preload:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        return provider


DEFERRABLE = {"openai": openai_hosted_tool_search, "anthropic": anthropic_native_tool_search}


class DeferredProvider:
    """A Provider whose SDK loads in the background; see the module docstring."""

    def __init__(
        self, config: Config, name: str, *, start: bool = True, preload: tuple[str, ...] = ()
    ) -> None:
        """``preload``: modules imported with the SDK, before the build is done (and so before
        any request; see ``Runtime``'s use)."""
        self._preload = preload
        self.name = name
        self.model = config.model.name
        self.native_tool_search: bool | None = DEFERRABLE[name](self.model)
        self._config = config
        self._build: concurrent.futures.Future[Provider] | None = None
        if start:
            self.begin()

    def begin(self) -> concurrent.futures.Future[Provider]:
        """Start the build unless it started (``start=False`` leaves that to the front end, or to
        the first request); the build's future."""
        if self._build is None:
            # a plain thread (not the loop's executor): it must not wait behind other blocking work
            pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="provider-build")
            self._build = pool.submit(_build_alone, self._config, self._preload)
            pool.shutdown(wait=False)
        return self._build

    @property
    def started(self) -> bool:
        return self._build is not None

    @property
    def built(self) -> Provider | None:
        """The real provider once it is built (None before, or when the build failed)."""
        build = self._build
        if build is not None and build.done() and build.exception() is None:
            return build.result()
        return None

    async def ready(self) -> Provider:
        """The real provider (starts the build if needed, and waits for it); ProviderError when it
        could not be built."""
        real = self.built
        if real is not None:
            # No await once built: asyncio.wrap_future hands over a finished future a loop turn
            # later, and a frame due meanwhile was drawn before every request went out.
            return real
        try:
            return await asyncio.wrap_future(self.begin())
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(f"the {self.name} provider could not be set up: {exc}") from exc

    @property
    def context_window(self) -> int | None:
        real = self.built
        return real.context_window if real is not None else None

    def banner(self) -> str | None:
        real = self.built
        return real.banner() if real is not None else None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        real = await self.ready()
        async for event in real.stream(request):
            yield event

    async def aclose(self) -> None:
        if self._build is None:  # never started: nothing to close
            return
        try:
            real = await asyncio.wrap_future(self._build)
        except Exception:  # never built: nothing to close
            return
        await real.aclose()

    def __getattr__(self, attribute: str) -> Any:
        # provider-specific settings (e.g. Anthropic's native_web_search) once the real one exists
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        real = self.built
        if real is None:
            raise AttributeError(attribute)
        return getattr(real, attribute)


def deferred_provider(
    config: Config, name: str, *, start: bool = True, preload: tuple[str, ...] = ()
) -> Provider | None:
    """A DeferredProvider for ``name`` when it is one of the API providers, else None; with
    ``start=False`` its build waits for ``begin()`` or the first request."""
    if name not in DEFERRABLE:
        return None
    return DeferredProvider(config, name, start=start, preload=preload)
