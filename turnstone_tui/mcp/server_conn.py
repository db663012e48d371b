"""One MCP server: connect, list, serve calls, follow changes, notice failure.

Each connection attempt is one asyncio task that enters the SDK ``Client`` (anyio task groups must
be entered and left in the same task) and stays inside it until the connection is closed or breaks.
Calls come from other tasks and use the live client; they are bounded by ``call_timeout``.

Failure is noticed without a pending call: the transport's read stream is watched for end of
stream (process exit, connection drop) and transport-level garbage arrives via the message handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp_types as mt
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..core.mcp_bridge import (
    EventKind,
    ProgressFn,
    ProgressInfo,
    PromptInfo,
    ResourceInfo,
    ServerState,
    ServerStatus,
    ToolInfo,
)
from . import convert
from .auth.store import TokenStore
from .client_side import ClientSide
from .config import ServerConfig
from .transports import TRANSPORTS

log = logging.getLogger(__name__)

LIST_KINDS: tuple[EventKind, ...] = ("tools", "resources", "prompts")
_MAX_PAGES = 100  # a paginator that never ends cannot hang a listing
_HEALTH_TIMEOUT = 5.0  # after a call timed out: does the server still answer at all?
_COALESCE = 0.05  # seconds: bursts of list_changed notifications become one refresh
# How long past the handshake limit a waiter gives a connection to settle (fail or connect): the
# failure itself (killing the process tree, closing the SDK contexts) takes seconds on a busy machine.
# Waits end as soon as the connection settles, so the margin costs nothing when all is well.
SETTLE_MARGIN = 10.0

UpdateFn = Callable[["ServerConnection", EventKind, tuple[str, ...], tuple[str, ...]], None]
ResourceUpdatedFn = Callable[["ServerConnection", str], None]
MAX_SUBSCRIPTIONS = 32  # resources one server keeps subscribed for the model (the first ones read)


class McpCallError(Exception):
    """A call could not be completed; the message is meant for the model and the user."""


def describe_error(exc: BaseException) -> str:
    """A short, human description of why something failed."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [e for e in exc.exceptions]
        return describe_error(leaves[0]) if leaves else "unknown error"
    if isinstance(exc, MCPError):
        return f"{exc.message} (code {exc.code})" if exc.code != mt.CONNECTION_CLOSED else "connection closed"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}" if str(exc) else "cannot connect"
    if isinstance(exc, httpx2.HTTPError):
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, ValidationError):
        return f"invalid message from the server ({exc.error_count()} validation errors)"
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def describe_garbage(exc: Exception) -> str:
    """What was wrong with a message the transport could not parse."""
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        bad = errors[0].get("input") if errors else None
        if isinstance(bad, (str, bytes)):
            text = bad.decode(errors="replace") if isinstance(bad, bytes) else bad
            return f"not JSON-RPC: {text[:80]!r}"
        return "not JSON-RPC"
    return describe_error(exc)


class _WatchedReadStream:
    """Wraps a transport's read stream: tells the connection when it ends."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:  # last_context and friends
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._inner.aclose()


class ServerConnection:
    def __init__(
        self,
        config: ServerConfig,
        *,
        connect_timeout: float,
        call_timeout: float,
        refresh_interval: float,
        on_state: Callable[[ServerConnection], None],
        on_update: UpdateFn,
        client_side: ClientSide | None = None,
        log_level: str = "",
        on_resource_updated: ResourceUpdatedFn | None = None,
        auth_dir: Path | None = None,
    ) -> None:
        self.config = config
        self._auth_dir = auth_dir
        self._on_resource_updated = on_resource_updated
        # Resources the model read, subscribed for notifications/resources/updated (kept across
        # reconnects: subscribed again on each connection).
        self.subscriptions: set[str] = set()
        self.can_subscribe = False
        self._subscriptions_changed = asyncio.Event()
        self._connect_deadline = 0.0  # loop time by which the current attempt must be connected
        self.client_side = client_side or ClientSide()
        self._log_level = config.log_level or log_level
        self.instructions = ""
        self._progress: dict[str, ProgressInfo] = {}
        self.auth_problem: tuple[int, str] | None = None  # (401|403, WWW-Authenticate) last seen
        self._auth_refusals = 0  # 401/403 answers seen: did this call's request get one?
        self.name = config.name
        self._connect_timeout = connect_timeout
        self._call_timeout = call_timeout
        self._refresh_interval = refresh_interval
        self._on_state = on_state
        self._on_update = on_update

        self.state = ServerState.DISCONNECTED
        self.error: str | None = None
        self.tools: list[ToolInfo] = []
        self.resources: list[ResourceInfo] = []
        self.prompts: list[PromptInfo] = []
        self.protocol_version: str | None = None
        self.server_name: str | None = None
        self.server_version: str | None = None
        self.push: frozenset[str] = frozenset()
        self.connected_at: float | None = None
        self.last_refresh: float | None = None
        self._last_noise = ""  # the last non-JSON line a stdio server wrote (named if the handshake fails)

        self._client: Client | None = None
        # Each connection attempt has a number; callbacks from an older attempt (still shutting down
        # its process) must not touch the state of the current one.
        self._attempt = 0
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._closing = False
        self._broken: str | None = None
        self._settled = asyncio.Event()
        self._stderr: IO[str] | None = None
        self._refresh_wanted = asyncio.Event()
        self._pending_kinds: set[EventKind] = set()
        self._capable: set[EventKind] = set()
        self._list_lock = asyncio.Lock()
        self._connect_scope: anyio.CancelScope | None = None  # cancelled to abandon a connect attempt
        self._stderr_mark = 0  # stderr offset after the last good answer: older lines are not news

    # --- state -------------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            state=self.state,
            error=self.error,
            tools=list(self.tools),
            resources=list(self.resources),
            prompts=list(self.prompts),
            transport=self.config.transport,
            target=self.config.target,
            protocol_version=self.protocol_version,
            server_name=self.server_name,
            server_version=self.server_version,
            push=self.push,
            connected_at=self.connected_at,
            last_refresh=self.last_refresh,
            progress=tuple(self._progress.values()),
            log_count=len(self.client_side.logs.get(self.name, ())),
            needs_login=self.state is ServerState.FAILED and self.auth_problem is not None,
            instructions=self.instructions,
        )

    async def _on_http_response(self, response: Any) -> None:
        """The SDK turns a 401/403 into a bare JSON-RPC error: keep the status and the challenge."""
        if response.status_code in (401, 403):
            challenge = response.headers.get("www-authenticate", "")
            self.auth_problem = (response.status_code, challenge)
            self._auth_refusals += 1
        elif response.status_code < 300 and str(response.request.url) == self.config.url:
            self.auth_problem = None  # the server took the token after all (refreshed, logged in)

    def token_store(self) -> TokenStore:
        """Where this server's OAuth tokens live (HTTP servers)."""
        return TokenStore(self.name, self.config.url, self._auth_dir)

    def _auth(self) -> Any:
        """The OAuth of this connection: stored tokens and refresh, never a browser (None: no OAuth)."""
        if not self.config.uses_oauth:
            return None
        store = self.token_store()
        if self.config.oauth.grant != "client_credentials" and not store.has_tokens():
            # Never logged in: nothing to add to a request (a 401 says "needs login"), and a server
            # that wants no OAuth is not sent through the SDK provider's per-request lock.
            return None
        from .auth.provider import connection_auth

        return connection_auth(self.config.url, self.config.oauth, store)

    def _describe_failure(self, reason: str) -> str:
        problem = self.auth_problem
        if problem is None:
            return reason
        status, challenge = problem
        what = "401 Unauthorized" if status == 401 else "403 Forbidden"
        hint = f" (WWW-Authenticate: {challenge})" if challenge else ""
        if not self.config.uses_oauth:
            return f"needs login: the server answered {what}{hint}; check the token in this server's headers"
        return (
            f"needs login: the server answered {what}{hint}; log in with /mcp login {self.name} "
            f"(l in the MCP panel; from a shell: turnstone-tui mcp login {self.name})"
        )

    def note_progress(self, tool: str, value: float, total: float | None, message: str | None) -> None:
        self._progress[tool] = ProgressInfo(tool, value, total, message or "")

    def clear_progress(self, tool: str) -> bool:
        return self._progress.pop(tool, None) is not None

    @property
    def settled(self) -> bool:
        return self.state is not ServerState.CONNECTING

    def _set_state(self, state: ServerState, error: str | None = None) -> None:
        if state is self.state and error == self.error:
            return
        self.state = state
        self.error = error
        if state is ServerState.CONNECTING:
            self._settled.clear()
        else:
            self._settled.set()
        self._on_state(self)

    def _fail(self, reason: str) -> None:
        """Report FAILED with the reason (and the server's last stderr lines); the first reason wins."""
        if self._closing or self.state is ServerState.FAILED:
            return
        reason = self._describe_failure(reason)
        tail = self._stderr_tail()
        if tail and tail not in reason:
            reason = f"{reason}; stderr: {tail}"
        self._set_state(ServerState.FAILED, reason)

    def _stderr_tail(self, max_lines: int = 3) -> str:
        """The last lines the server wrote to stderr (where crash reasons usually are)."""
        f = self._stderr
        if f is None or f.closed:
            return ""
        try:
            f.flush()
            size = f.seek(0, os.SEEK_END)
            f.seek(max(self._stderr_mark, size - 4000))
            data = f.read()
        except (OSError, ValueError):
            return ""
        lines = [
            ln.strip() for ln in data.splitlines() if ln.strip() and not set(ln.strip()) <= set("─│╭╮╰╯ ")
        ]
        return " | ".join(lines[-max_lines:])

    def _mark_stderr(self) -> None:
        f = self._stderr
        if f is not None and not f.closed:
            with contextlib.suppress(OSError, ValueError):
                self._stderr_mark = f.seek(0, os.SEEK_END)

    def _mark_broken(self, reason: str, attempt: int | None = None) -> None:
        """The connection is unusable: record why, report FAILED now, let the runner clean up."""
        if attempt is not None and attempt != self._attempt:
            return
        if self._closing or self._broken is not None:
            return
        self._broken = reason
        self._fail(reason)
        self._stop.set()
        self._abort_connect()

    def _abort_connect(self) -> None:
        scope = self._connect_scope
        if scope is not None and self._client is None:
            scope.cancel()

    def _on_stream_end(self, attempt: int) -> None:
        if not self._closing:
            self._mark_broken(TRANSPORTS[self.config.transport].closed_reason, attempt)

    # --- lifecycle ---------------------------------------------------------------------------

    def connect(self) -> None:
        """Start connecting unless already connecting or connected. Returns at once."""
        if self.state in (ServerState.CONNECTING, ServerState.CONNECTED):
            return
        if self.config.invalid:
            self._set_state(ServerState.FAILED, f"disabled: {self.config.invalid}")
            return
        previous = self._task
        self._closing = False
        self._broken = None
        self._last_noise = ""
        self.auth_problem = None
        self._stop = asyncio.Event()
        self._attempt += 1
        self._pending_kinds.clear()
        self._refresh_wanted = asyncio.Event()
        self._set_state(ServerState.CONNECTING)
        # The handshake is bounded from now, not from when the last attempt finished stopping its
        # process: a refresh that waits connect_timeout (+1 s) sees the outcome.
        self._connect_deadline = asyncio.get_running_loop().time() + self._connect_timeout
        self._task = asyncio.create_task(self._run(previous, self._attempt), name=f"mcp-{self.name}")

    async def wait_settled(self, within: float | None = None) -> bool:
        """Wait until connected or failed; False when ``within`` seconds pass first."""
        if self.settled:
            return True
        try:
            async with asyncio.timeout(within):
                await self._settled.wait()
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """Close the session and stop the server process; state becomes DISCONNECTED."""
        self._closing = True
        self._stop.set()
        self._abort_connect()
        task = self._task
        if task is not None and not task.done():
            # The runner exits its SDK contexts (closes stdin, then terminates the process tree).
            try:
                async with asyncio.timeout(self._connect_timeout + 10):
                    await asyncio.shield(task)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            except BaseException:
                pass
        self._set_state(ServerState.DISCONNECTED, None)

    def _transport(self, attempt: int) -> contextlib.AbstractAsyncContextManager[Any]:
        config = self.config

        def on_end() -> None:
            self._on_stream_end(attempt)

        @contextlib.asynccontextmanager
        async def watched() -> AsyncIterator[tuple[Any, Any]]:
            async with TRANSPORTS[config.transport].open(
                config, errlog=self._stderr, on_http_response=self._on_http_response, auth=self._auth()
            ) as (read, write):
                yield _WatchedReadStream(read, on_end), write

        return watched()

    async def _on_message(self, message: Any, attempt: int) -> None:
        if attempt != self._attempt:
            return
        if isinstance(message, Exception):
            what = describe_garbage(message)
            if self.config.transport == "stdio":
                # A stdio server's stray print (a banner, a log line) is noise, not a broken server:
                # kept in its log (the MCP panel's v) and named if the handshake never completes.
                self._last_noise = what
                self.client_side.add_log(
                    self.name,
                    mt.LoggingMessageNotificationParams(
                        level="warning", logger="stdout", data=f"ignored {what}"
                    ),
                )
            else:
                self._mark_broken(f"the server wrote invalid output ({what})", attempt)
        elif isinstance(message, mt.ToolListChangedNotification):
            self.request_refresh(("tools",))
        elif isinstance(message, mt.ResourceListChangedNotification):
            self.request_refresh(("resources",))
        elif isinstance(message, mt.PromptListChangedNotification):
            self.request_refresh(("prompts",))
        elif isinstance(message, mt.ResourceUpdatedNotification):
            self._resource_updated(message.params.uri)

    def _resource_updated(self, uri: str) -> None:
        if uri in self.subscriptions and self._on_resource_updated is not None:
            self._on_resource_updated(self, uri)

    async def _run(self, previous: asyncio.Task[None] | None, attempt: int) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])  # the last attempt is still stopping its process
        self._stderr = (
            tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            if TRANSPORTS[self.config.transport].keeps_stderr
            else None
        )
        loop = asyncio.get_running_loop()
        connect_scope = self._connect_scope = anyio.CancelScope()
        self._stderr_mark = 0

        async def on_message(message: Any) -> None:
            await self._on_message(message, attempt)

        def connect_timed_out() -> None:
            if attempt == self._attempt and self.state is ServerState.CONNECTING:
                noise = f"; it wrote only {self._last_noise}" if self._last_noise else ""
                self._fail(f"no answer to the MCP handshake within {self._connect_timeout:g}s{noise}")
                connect_scope.cancel()

        timer = loop.call_later(max(0.0, self._connect_deadline - loop.time()), connect_timed_out)
        try:
            # The connect scope encloses the whole session: anyio scopes must nest, and the SDK's
            # task groups are entered inside it.
            with connect_scope:
                async with contextlib.AsyncExitStack() as stack:
                    client = Client(
                        self._transport(attempt),
                        mode=self.config.protocol,
                        cache=None,
                        message_handler=on_message,
                        client_info=mt.Implementation(name="turnstone-tui", version="0.1.0"),
                        log_level=self._log_level or None,  # type: ignore[arg-type]
                        **self.client_side.callbacks(self.name),
                    )
                    await stack.enter_async_context(client)
                    self._read_server_info(client)
                    await self._set_log_level(client)
                    await self._fetch(client, LIST_KINDS, initial=True)
                    timer.cancel()
                    if self._stop.is_set():
                        return
                    self._mark_stderr()
                    self._client = client
                    self.connected_at = time.time()
                    self._set_state(ServerState.CONNECTED, None)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._refresh_worker, client, attempt)
                        if self.protocol_version in MODERN_PROTOCOL_VERSIONS and self.push:
                            tg.start_soon(self._listen_worker, client)
                        if self._capable - self.push and self._refresh_interval > 0:
                            tg.start_soon(self._poll_worker)
                        if self.can_subscribe:
                            tg.start_soon(self._subscription_worker, client)
                        await self._stop.wait()
                        tg.cancel_scope.cancel()
                    self._client = None
        except Exception as exc:  # the SDK raises many kinds; all of them mean "this server failed"
            log.debug("MCP server %s: runner ended with %r", self.name, exc)
            if attempt != self._attempt:
                pass
            elif self._broken is not None:
                self._fail(self._broken)
            elif self.state in (ServerState.CONNECTING, ServerState.CONNECTED):
                self._fail(describe_error(exc))
        finally:
            timer.cancel()
            self._client = None
            self._connect_scope = None
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None
        if attempt != self._attempt:
            return
        if self._broken is not None:
            self._fail(self._broken)
        elif self.state in (ServerState.CONNECTING, ServerState.CONNECTED) and not self._closing:
            self._fail("the connection ended")

    async def _set_log_level(self, client: Client) -> None:
        """``logging/setLevel`` from the config, for handshake-era servers that log."""
        level = self._log_level
        if not level or client.server_capabilities.logging is None:
            return
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return  # 2026-07-28: the level rides on every request (Client(log_level=...))
        try:
            with anyio.fail_after(self._connect_timeout), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.set_logging_level(level)  # type: ignore[arg-type]
        except (MCPError, TimeoutError) as exc:
            log.info("MCP server %s: logging/setLevel %s refused: %r", self.name, level, exc)

    def _read_server_info(self, client: Client) -> None:
        self.protocol_version = client.protocol_version
        self.instructions = (client.instructions or "").strip()
        info = client.server_info
        self.server_name = info.name if info else None
        self.server_version = info.version if info else None
        caps = client.server_capabilities
        capable: set[EventKind] = set()
        push: set[str] = set()
        for kind, cap in (("tools", caps.tools), ("resources", caps.resources), ("prompts", caps.prompts)):
            if cap is not None:
                capable.add(kind)  # type: ignore[arg-type]
                if getattr(cap, "list_changed", False):
                    push.add(kind)
        self._capable = capable
        self.push = frozenset(push)
        self.can_subscribe = bool(caps.resources is not None and caps.resources.subscribe)

    # --- lists -------------------------------------------------------------------------------

    async def _paginate(self, fetch: Callable[[str | None], Any], attr: str) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await fetch(cursor)
            items.extend(getattr(page, attr))
            cursor = page.next_cursor
            if not cursor:
                break
        return items

    async def _fetch(self, client: Client, kinds: Iterable[EventKind], *, initial: bool = False) -> None:
        """Re-read the given lists (each bounded by the connect timeout) and report changes."""
        async with self._list_lock:
            for kind in kinds:
                if kind not in self._capable:
                    continue
                with anyio.fail_after(self._connect_timeout):
                    if kind == "tools":
                        raw = await self._paginate(lambda c: client.list_tools(cursor=c), "tools")
                        new_tools = [convert.tool_info(self.name, t) for t in raw]
                        old = [t.qualified_name for t in self.tools]
                        changed = new_tools != self.tools
                        self.tools = new_tools
                        new = [t.qualified_name for t in new_tools]
                    elif kind == "resources":
                        raw = await self._paginate(lambda c: client.list_resources(cursor=c), "resources")
                        try:
                            templates = await self._paginate(
                                lambda c: client.list_resource_templates(cursor=c), "resource_templates"
                            )
                        except MCPError:
                            templates = []
                        items = [convert.resource_info(r) for r in raw] + [
                            convert.template_info(t) for t in templates
                        ]
                        old = [r.uri for r in self.resources]
                        changed = items != self.resources
                        self.resources = items
                        new = [r.uri for r in items]
                    else:
                        raw = await self._paginate(lambda c: client.list_prompts(cursor=c), "prompts")
                        items_p = [convert.prompt_info(self.name, p) for p in raw]
                        old = [p.qualified_name for p in self.prompts]
                        changed = items_p != self.prompts
                        self.prompts = items_p
                        new = [p.qualified_name for p in items_p]
                if not initial and (changed or old != new):
                    added = tuple(n for n in new if n not in set(old))
                    removed = tuple(n for n in old if n not in set(new))
                    self._on_update(self, kind, added, removed)
            self.last_refresh = time.time()

    def request_refresh(self, kinds: Iterable[EventKind] = LIST_KINDS) -> None:
        """Ask the background worker to re-read these lists soon (coalesced)."""
        self._pending_kinds.update(kinds)
        self._refresh_wanted.set()

    async def _refresh_worker(self, client: Client, attempt: int) -> None:
        while True:
            await self._refresh_wanted.wait()
            await asyncio.sleep(_COALESCE)
            self._refresh_wanted.clear()
            kinds = [k for k in LIST_KINDS if k in self._pending_kinds]
            self._pending_kinds.clear()
            try:
                await self._fetch(client, kinds)
            except Exception as exc:
                self._mark_broken(f"refreshing the lists failed: {describe_error(exc)}", attempt)
                return

    async def _listen_worker(self, client: Client) -> None:
        """2026-07-28 servers deliver list changes only on a subscriptions/listen stream."""
        try:
            async with client.listen(
                tools_list_changed="tools" in self.push,
                resources_list_changed="resources" in self.push,
                prompts_list_changed="prompts" in self.push,
            ) as sub:
                async for event in sub:
                    kind = type(event).__name__
                    if kind.startswith("Tools"):
                        self.request_refresh(("tools",))
                    elif kind.startswith("Resources"):
                        self.request_refresh(("resources",))
                    elif kind.startswith("Prompts"):
                        self.request_refresh(("prompts",))
        except Exception as exc:
            log.debug("MCP server %s: listen stream failed: %r", self.name, exc)
        # The stream ended (or never opened): fall back to polling everything.
        polled_before = bool(self._capable - self.push)
        self.push = frozenset()
        if not polled_before and self._refresh_interval > 0:
            await self._poll_worker()

    async def _subscription_worker(self, client: Client) -> None:
        """Keep the subscribed resources subscribed on this connection: ``resources/subscribe``
        for handshake-era servers, a ``subscriptions/listen`` stream (reopened when the set
        changes) for 2026-07-28 servers. A failure is logged; the resource simply is not followed."""
        modern = self.protocol_version in MODERN_PROTOCOL_VERSIONS
        done: set[str] = set()
        while True:
            self._subscriptions_changed.clear()
            wanted = set(self.subscriptions)
            try:
                if not modern:
                    for uri in sorted(wanted - done):
                        with anyio.fail_after(self._call_timeout), warnings.catch_warnings():
                            warnings.simplefilter("ignore", MCPDeprecationWarning)
                            await client.subscribe_resource(uri)
                        done.add(uri)
                elif wanted:
                    await self._listen_to_resources(client, tuple(sorted(wanted)))
                    continue
            except Exception as exc:
                log.info("MCP server %s: subscribing to resources failed: %r", self.name, exc)
                self.subscriptions -= wanted - done
            await self._subscriptions_changed.wait()

    async def _listen_to_resources(self, client: Client, uris: tuple[str, ...]) -> None:
        """One listen stream for these URIs, until the set changes (or the stream ends)."""
        async with anyio.create_task_group() as tg:

            async def stop_when_changed() -> None:
                await self._subscriptions_changed.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(stop_when_changed)
            async with client.listen(resource_subscriptions=uris) as sub:
                async for event in sub:
                    uri = getattr(event, "uri", None)
                    if isinstance(uri, str):
                        self._resource_updated(uri)
            await self._subscriptions_changed.wait()  # the stream ended: wait for a new set
            tg.cancel_scope.cancel()

    def subscribe(self, uri: str) -> bool:
        """Follow this resource's changes (when the server offers subscriptions); bounded."""
        if (
            not self.can_subscribe
            or uri in self.subscriptions
            or len(self.subscriptions) >= MAX_SUBSCRIPTIONS
        ):
            return uri in self.subscriptions
        self.subscriptions.add(uri)
        self._subscriptions_changed.set()
        return True

    async def _poll_worker(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_interval)
            self.request_refresh([k for k in LIST_KINDS if k in self._capable and k not in self.push])

    async def refresh(self) -> None:
        """Re-read every list now; a failed or disconnected server is reconnected instead."""
        if self.state is ServerState.CONNECTING:
            await self.wait_settled(self._connect_timeout + SETTLE_MARGIN)
            return
        client = self._client
        if self.state is not ServerState.CONNECTED or client is None:
            self.connect()
            await self.wait_settled(self._connect_timeout + SETTLE_MARGIN)
            return
        try:
            await self._fetch(client, LIST_KINDS)
        except Exception as exc:
            self._mark_broken(f"refreshing the lists failed: {describe_error(exc)}")

    # --- calls -------------------------------------------------------------------------------

    async def _live_client(self) -> Client:
        if self.state is ServerState.CONNECTING:
            await self.wait_settled(self._connect_timeout + SETTLE_MARGIN)
        client = self._client
        if self.state is not ServerState.CONNECTED or client is None:
            why = f": {self.error}" if self.error else ""
            raise McpCallError(
                f"MCP server '{self.name}' is {self.state.value}{why}. Use /mcp refresh {self.name} to reconnect."
            )
        return client

    async def _still_alive(self, client: Client) -> bool:
        try:
            with anyio.fail_after(min(_HEALTH_TIMEOUT, self._connect_timeout)):
                await client.list_tools() if "tools" in self._capable else await client.list_prompts()
        except MCPError as exc:
            return exc.code != mt.CONNECTION_CLOSED
        except Exception:
            return False
        return True

    def _refusal(self, what: str) -> str | None:
        """What to say when the server refused a call with 401/403 (the SDK says only -32603)."""
        problem = self.auth_problem
        if problem is None:
            return None
        status, challenge = problem
        how = f"/mcp login {self.name} (l in the MCP panel)"
        if status == 403 and 'error="insufficient_scope"' in challenge.replace(" ", ""):
            scope = re.search(r'scope="([^"]*)"', challenge)
            needs = f" (scope {scope.group(1)!r})" if scope else ""
            return (
                f"MCP server '{self.name}' refused {what}: it needs more permission{needs}; "
                f"the user can grant it by logging in again: {how}"
            )
        if status == 403:
            return f"MCP server '{self.name}' refused {what}: 403 Forbidden"
        return (
            f"MCP server '{self.name}' refused {what}: the login expired or was revoked; log in again: {how}"
        )

    async def _request(self, what: str, run: Callable[[Client], Any]) -> Any:
        client = await self._live_client()
        refusals = self._auth_refusals
        try:
            with anyio.fail_after(self._call_timeout):
                result = await run(client)
            self._mark_stderr()
            return result
        except TimeoutError:
            if self._broken is None and not await self._still_alive(client):
                self._mark_broken(f"stopped responding ({what} timed out after {self._call_timeout:g}s)")
                raise McpCallError(
                    f"MCP server '{self.name}' stopped responding: {what} timed out after "
                    f"{self._call_timeout:g}s; the server is marked failed"
                ) from None
            raise McpCallError(
                f"MCP server '{self.name}': {what} timed out after {self._call_timeout:g}s"
            ) from None
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED or self._broken is not None:
                self._mark_broken(self._broken or "the connection closed")
                raise McpCallError(
                    f"MCP server '{self.name}' failed during {what}: {self.error or 'connection closed'}"
                ) from None
            refused = self._refusal(what) if self._auth_refusals != refusals else None
            if refused is not None:
                if self.auth_problem is not None and self.auth_problem[0] == 401:
                    # No token the server takes, and no refresh helped: the panel says "needs login"
                    self._mark_broken("the server refused the token")
                raise McpCallError(refused) from None
            raise McpCallError(f"MCP server '{self.name}' rejected {what}: {describe_error(exc)}") from None
        except ValidationError as exc:
            self._mark_broken(f"sent an invalid reply to {what}")
            raise McpCallError(
                f"MCP server '{self.name}' sent an invalid reply to {what}: {describe_error(exc)}"
            ) from None
        except McpCallError:
            raise
        except RuntimeError as exc:
            text = str(exc)
            if "structured content" in text or "output schema" in text or "Invalid schema for tool" in text:
                # The SDK checks structuredContent against the tool's outputSchema: the reply is
                # wrong, the connection is fine.
                raise McpCallError(
                    f"MCP server '{self.name}': {what} returned a result that does not match its "
                    f"outputSchema ({text})"
                ) from None
            if self._broken is None:
                self._mark_broken(f"{what} failed: {describe_error(exc)}")
            raise McpCallError(f"MCP server '{self.name}' failed during {what}: {self.error}") from None
        except Exception as exc:
            if self._broken is None:
                self._mark_broken(f"{what} failed: {describe_error(exc)}")
            raise McpCallError(f"MCP server '{self.name}' failed during {what}: {self.error}") from None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], on_progress: ProgressFn | None = None
    ) -> mt.CallToolResult:
        """Call a tool; ``on_progress(progress, total, message)`` gets the server's progress (a
        progressToken is sent only when it is given)."""
        if on_progress is None:
            return await self._request(f"tool '{name}'", lambda c: c.call_tool(name, arguments))

        async def progress(value: float, total: float | None, message: str | None) -> None:
            try:
                on_progress(value, total, message)
            except Exception:
                log.exception("MCP progress listener failed")

        return await self._request(
            f"tool '{name}'", lambda c: c.call_tool(name, arguments, progress_callback=progress)
        )

    async def roots_changed(self) -> None:
        """Tell the server its roots changed (handshake-era servers that asked for roots)."""
        client = self._client
        if client is None or self.state is not ServerState.CONNECTED:
            return
        if self.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return  # 2026-07-28 has no client notifications; roots are sent with each request
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots is still current at 2025-11-25
            with anyio.fail_after(self._connect_timeout):
                await client.send_roots_list_changed()

    async def read_resource(self, uri: str) -> mt.ReadResourceResult:
        return await self._request(f"reading resource '{uri}'", lambda c: c.read_resource(uri))

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> mt.GetPromptResult:
        return await self._request(f"prompt '{name}'", lambda c: c.get_prompt(name, arguments or None))

    @property
    def can_complete(self) -> bool:
        client = self._client
        return client is not None and client.server_capabilities.completions is not None

    async def complete_prompt_argument(
        self, prompt: str, argument: str, value: str, context: dict[str, str]
    ) -> list[str]:
        """``completion/complete`` for one argument of one of this server's prompts."""
        ref = mt.PromptReference(type="ref/prompt", name=prompt)
        result = await self._request(
            f"completing '{prompt}'",
            lambda c: c.complete(ref, {"name": argument, "value": value}, context or None),
        )
        return [str(v) for v in result.completion.values]
