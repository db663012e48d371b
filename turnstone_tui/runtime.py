"""The one place that builds the parts and connects them: config, storage, provider, tools, MCP, watches.

Both front ends (headless and the Textual app) build one Runtime and ask it for sessions; the
engine (``core``) never constructs an adapter itself, it is handed them here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config, config_dir
from .core.mcp_bridge import McpBridge
from .core.permission_store import PermissionStore, user_permissions_path
from .core.protocol import SessionUI
from .core.provider import Provider
from .core.registry import ToolRegistry, default_registry
from .core.session import ChatSession
from .core.tools import ToolTable, WatchScheduler
from .executors.catalog import builtin_preparers
from .executors.mcp_tools import prepare_mcp_tool
from .executors.memory import StoredMemories
from .providers.factory import create_provider, resolve_model_alias, supports_vision
from .storage.db import Storage

if TYPE_CHECKING:
    from .executors.watch_runner import WatchRunner
    from .mcp.manager import McpManager

log = logging.getLogger(__name__)


def builtin_tools(registry: ToolRegistry | None = None) -> ToolTable:
    """The built-in tools (``tools/*.json``) with their executors, and the MCP tool preparer."""
    return ToolTable(registry or default_registry(), builtin_preparers(), prepare_mcp_tool)


def build_session(
    config: Config,
    provider: Provider,
    ui: SessionUI,
    *,
    storage: Storage | None = None,
    mcp: McpBridge | None = None,
    registry: ToolRegistry | None = None,
    watches: WatchScheduler | None = None,
    session_id: str | None = None,
    cwd: Path | None = None,
    skip_permissions: bool | None = None,
    allow: set[str] | None = None,
    permissions: PermissionStore | None = None,
) -> ChatSession:
    """A main session with every part connected (not started: ``await session.start()``)."""
    session = ChatSession(
        config,
        provider,
        ui,
        tools=builtin_tools(registry),
        storage=storage,
        mcp=mcp,
        memories=StoredMemories(storage) if storage is not None else None,
        session_id=session_id,
        cwd=cwd,
        skip_permissions=skip_permissions,
        allow=allow,
        supports_vision=supports_vision(config),
        permissions=permissions,
        instructions_dir=config_dir(),
    )
    session.ctx.watches = watches
    return session


@dataclasses.dataclass
class RuntimeOptions:
    mcp_config_path: str | None = None
    skip_permissions: bool = False
    allow: tuple[str, ...] = ()
    cwd: Path | None = None
    start_mcp: bool = True
    start_watches: bool = True
    watch_host: bool = False
    """Also poll the watches of sessions no process has open (when this process is the database's
    watch host); their results wait in the inbox. The app is; a headless run polls only its own."""
    warm_imports: bool = False
    """Once the first session is ready, import in a thread what the first tool call would otherwise
    import on the event loop (the app; a headless run would only wait for it at exit)."""
    defer_provider: bool = False
    """Build an API provider (its SDK import) in a thread while storage opens and the session
    starts; the first request waits for it."""
    provider_build_on_request: bool = False
    """With ``defer_provider``: the build starts only when the front end calls the provider's
    ``begin()`` or a request needs it (the app: once its session is on the screen, so the SDK's
    import does not take half of the GIL from the start-up)."""


ANYIO_BACKEND = "anyio._backends._asyncio"
"""What anyio imports the first time it is used on an asyncio loop (by the model SDKs' clients)."""

WARM_MODULES = ("bashlex", "jsonschema")
"""Kept off the start-up path (bashlex builds parser tables on import), loaded after it, with the
tool families' modules (the lazy preparer table's)."""


def _import_alone(name: str) -> None:
    """Import ``name`` (in a worker thread) while no other thread imports a large part of the
    dependencies (``mcp`` and the model SDKs share httpx2; see ``providers.deferred.IMPORT_LOCK``)."""
    from .providers.deferred import IMPORT_LOCK

    with IMPORT_LOCK:
        importlib.import_module(name)


def _warm_imports() -> None:
    """Import the deferred modules (in a worker thread), never while the provider's build imports
    its SDK (see ``providers.deferred.IMPORT_LOCK``)."""
    from .executors.catalog import warm
    from .providers.deferred import IMPORT_LOCK

    with IMPORT_LOCK:
        for name in WARM_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        warm()


async def _choose_missing_model(config: Config) -> tuple[Config, str]:
    """No model configured: the one an OpenAI-compatible server offers when it serves exactly one
    (else how to pick); the config to use and the notice for the user."""
    from .providers.factory import provider_name

    name = provider_name(config)
    if name not in ("openai", "anthropic"):
        return config, ""
    from .providers.model_discovery import PICK_HINT, discover_model

    if name == "anthropic":
        return config, f"No model is set: {PICK_HINT}."

    choice = await discover_model(config.api.base_url, config.api.api_key)
    if choice.model:
        config = dataclasses.replace(config, model=dataclasses.replace(config.model, name=choice.model))
    return config, choice.notice


class Runtime:
    def __init__(
        self,
        config: Config,
        storage: Storage,
        provider: Provider,
        *,
        mcp: McpManager | None = None,
        registry: ToolRegistry | None = None,
        options: RuntimeOptions | None = None,
    ) -> None:
        self.config = config
        self.storage = storage
        self.provider = provider
        self.mcp = mcp
        self.registry = registry or default_registry()
        self.options = options or RuntimeOptions()
        self.sessions: dict[str, ChatSession] = {}
        # The user's and the project's permission rules, shared by every session (read at start).
        self.permissions = PermissionStore(
            user_permissions_path(config_dir()), Path(self.options.cwd or Path.cwd()).resolve()
        )
        self._watch_runner: WatchRunner | None = None
        self._provider_listeners: list[Callable[[Provider], None]] = []
        self._warm_timer: asyncio.TimerHandle | None = None
        self._inbox_listeners: list[Callable[[], None]] = []
        self.model_notice = ""
        """Said once at start when no model was configured (which one is used, or how to pick)."""

    @classmethod
    async def create(
        cls, config: Config, *, provider: Provider | None = None, options: RuntimeOptions | None = None
    ) -> Runtime:
        """Open storage, make the provider and start MCP (in the background) and the watch runner."""
        from .providers.deferred import deferred_provider
        from .providers.factory import import_provider_module, provider_name

        options = options or RuntimeOptions()
        registry = default_registry()  # raises ToolDefinitionError naming a bad file
        model_notice = ""
        if provider is None and not config.model.name:
            config, model_notice = await _choose_missing_model(config)
        if provider is None and options.defer_provider:  # first: it builds while storage opens
            start = not options.provider_build_on_request
            # With the warm-up (the app), the legacy httpx is imported in the build, before any
            # request: the openai SDK looks ``sys.modules["httpx"]`` up on every request and uses
            # it if present, and the warm-up importing it in its thread at that moment failed
            # the request ("partially initialized module 'httpx' has no attribute 'Timeout'").
            # anyio's asyncio backend is imported by the first request that uses the SDK's client
            # (httpx's pool asks anyio which event loop runs): 15-25 ms of imports on the event
            # loop in the first request of the session (96 ms seen under load), now in the build.
            preload = ("httpx", ANYIO_BACKEND) if options.warm_imports else ()
            provider = deferred_provider(config, provider_name(config), start=start, preload=preload)
        storage = await Storage.open(config.resolved_db_path())
        try:
            if provider is None:
                # Only the selected provider's SDK, imported in a thread: seconds of CPU that must
                # not hold the event loop (the app has drawn its first frame and takes keys).
                await asyncio.to_thread(import_provider_module, config)
                provider = create_provider(config)
        except Exception:
            await storage.close()
            raise
        mcp = None
        if options.start_mcp:
            mcp = await _start_mcp(config, options.mcp_config_path, options.cwd)
        runtime = cls(config, storage, provider, mcp=mcp, registry=registry, options=options)
        runtime.model_notice = model_notice
        if mcp is not None:
            mcp.set_sampler(runtime.sample_for_mcp)
        if options.start_watches:
            runtime._start_watch_runner()
        return runtime

    async def create_session(self, ui: SessionUI, session_id: str | None = None) -> ChatSession:
        session = build_session(
            self.config,
            self.provider,
            ui,
            storage=self.storage,
            mcp=self.mcp,
            registry=self.registry,
            watches=self._watch_runner,
            session_id=session_id,
            cwd=self.options.cwd,
            skip_permissions=self.options.skip_permissions or self.config.tools.skip_permissions,
            allow=set(self.options.allow) | set(await self.persisted_allow()),
            permissions=self.permissions,
        )
        await session.start()
        self.sessions[session.session_id] = session
        if self.options.warm_imports and self._warm_timer is None:
            loop = asyncio.get_running_loop()
            # A second later: the first screen of the session is drawn by then.
            self._warm_timer = loop.call_later(1.0, loop.run_in_executor, None, _warm_imports)
        return session

    async def close_session(self, session: ChatSession) -> None:
        self.sessions.pop(session.session_id, None)
        await session.aclose()

    async def list_sessions(self, limit: int = 50) -> list[dict[str, Any]]:
        return await self.storage.list_sessions(limit)

    async def search_history(self, query: str, limit: int = 30) -> list[dict[str, Any]]:
        return await self.storage.search_messages(query, limit)

    def model_aliases(self) -> list[str]:
        return sorted(self.config.models)

    async def switch_model(self, alias: str) -> Provider:
        """Use ``[models.<alias>]`` (or a plain model name) for every session from now on."""
        if alias in self.config.models:
            new_config = resolve_model_alias(self.config, alias)
        else:
            new_config = dataclasses.replace(
                self.config, model=dataclasses.replace(self.config.model, name=alias)
            )
        provider = create_provider(new_config)
        old = self.provider
        self.config, self.provider = new_config, provider
        vision = supports_vision(new_config)
        for session in self.sessions.values():
            session.use_provider(new_config, provider, supports_vision=vision)
        if old is not provider:
            with contextlib.suppress(Exception):
                await old.aclose()
        return provider

    async def sample_for_mcp(self, request: Any) -> Any:
        """Run an approved MCP ``sampling/createMessage`` on the current model (no tools)."""
        from .core.provider import ContentDelta, ModelRequest, StreamDone
        from .mcp.asks import SampleResult

        messages: list[dict[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        messages.extend({"role": m.role, "content": m.text} for m in request.messages)
        provider = self.provider
        pieces: list[str] = []
        finish = "stop"
        async for event in provider.stream(
            ModelRequest(
                messages=messages,
                model=provider.model,
                temperature=request.temperature,
                max_tokens=request.max_tokens,
            )
        ):
            if isinstance(event, ContentDelta):
                pieces.append(event.text)
            elif isinstance(event, StreamDone):
                finish = event.finish_reason
        stop = "maxTokens" if finish == "length" else "endTurn"
        return SampleResult("".join(pieces), provider.model or provider.name, stop)

    async def persist_allow(self, tool_names: set[str]) -> None:
        """Remember "always allow" answers across sessions (revocable with /permissions)."""
        current = set(await self.storage.get_setting("allow", []))
        await self.storage.set_setting("allow", sorted(current | tool_names))

    async def persisted_allow(self) -> list[str]:
        return list(await self.storage.get_setting("allow", []))

    async def revoke(self, tool_names: set[str]) -> None:
        """The one way to withdraw "always allow": from the saved list and from every open session."""
        saved = set(await self.storage.get_setting("allow", []))
        if saved & tool_names:
            await self.storage.set_setting("allow", sorted(saved - tool_names))
        for session in self.sessions.values():
            session.policy.revoke(tool_names)

    # --- watches --------------------------------------------------------------------------
    def _start_watch_runner(self) -> None:
        from .core.child_env import sandbox_policy
        from .executors.watch_runner import WatchRunner

        self._watch_runner = WatchRunner(
            self.storage,
            self._on_watch_result,
            sandbox=sandbox_policy(self.config),
            env_passthrough=tuple(self.config.env.passthrough),
            owns=self.sessions.__contains__,
            adopt_unowned=self.options.watch_host,
        )
        self._watch_runner.start()

    async def _on_watch_result(self, session_id: str, text: str) -> None:
        """A result was queued: the open session takes it at its next idle moment; one for a
        session that is not open waits in the inbox until it is resumed."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.schedule_watch_delivery()
            return
        log.info("watch result for session %s, which is not open: in the inbox", session_id)
        for listener in list(self._inbox_listeners):
            listener()

    def add_inbox_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """``listener()`` is called when a result for a session not open here is queued."""
        self._inbox_listeners.append(listener)
        return lambda: self._inbox_listeners.remove(listener) if listener in self._inbox_listeners else None

    async def inbox(self) -> list[dict[str, Any]]:
        """Undelivered watch results of the sessions that are open nowhere (oldest first): they are
        delivered when their session is resumed. Those of sessions open in another process are its
        to deliver, those of sessions open here are delivered by them."""
        rows = await self.storage.pending_watch_results()
        elsewhere: dict[str, bool] = {}
        waiting = []
        for row in rows:
            sid = row["session_id"]
            if sid in self.sessions:
                continue
            if sid not in elsewhere:
                try:
                    elsewhere[sid] = self.storage.held_elsewhere(sid)
                except OSError:
                    elsewhere[sid] = False
            if not elsewhere[sid]:
                waiting.append(row)
        return waiting

    async def aclose(self) -> None:
        if self._warm_timer is not None:
            self._warm_timer.cancel()
        for session in list(self.sessions.values()):
            await session.aclose()
        if self._watch_runner is not None:
            await self._watch_runner.aclose()
        if self.mcp is not None:
            with contextlib.suppress(Exception):
                await self.mcp.aclose()
        with contextlib.suppress(Exception):
            await self.provider.aclose()
        await self.storage.close()


async def _start_mcp(
    config: Config, mcp_config_path: str | None, cwd: Path | None = None
) -> McpManager | None:
    """The MCP manager, connecting in the background; None when no server is configured (then the
    ``mcp`` SDK is never imported: a second of CPU at start-up). ConfigError for an unreadable file."""
    path = mcp_config_path or config.mcp.config_path or None
    if not config.mcp.servers and not path:  # nothing configured: not even the config module
        return None
    from .mcp.config import load_server_configs

    if not load_server_configs(config, path):
        return None
    await asyncio.to_thread(_import_alone, f"{__package__}.mcp.manager")
    from .mcp.manager import McpManager

    manager = McpManager.from_config(config, path, cwd=cwd)
    await manager.start()
    return manager
