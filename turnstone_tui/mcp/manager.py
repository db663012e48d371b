"""McpManager: every configured MCP server, seen as one tool/resource/prompt provider.

It implements ``core.mcp_bridge.McpBridge`` for the tool executors, and offers the UI a snapshot
(``statuses()``) plus change events (``add_listener``). Lists are rebuilt copy-on-write: a list
returned by ``tool_schemas()`` is never mutated afterwards, so a session may keep it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from ..config import Config
from ..core.mcp_bridge import (
    EventKind,
    McpEvent,
    McpListener,
    McpPromptRef,
    ProgressFn,
    PromptInfo,
    ResourceInfo,
    ResourceUpdate,
    ServerState,
    ServerStatus,
    ToolInfo,
)
from ..core.types import ToolResult
from . import convert
from .asks import ServerAsks
from .client_side import ClientSide, LogEntry, Sampler
from .config import ServerConfig, load_server_configs
from .server_conn import SETTLE_MARGIN, McpCallError, ServerConnection

__all__ = ["McpManager", "McpEvent", "ServerState", "ServerStatus"]

log = logging.getLogger(__name__)
# The SDK logs transport problems; without a handler Python would print them over the TUI.
logging.getLogger("mcp").addHandler(logging.NullHandler())


class _NoParseTracebacks(logging.Filter):
    """The stdio transport logs every line it cannot parse with a traceback (at ERROR, which the
    CLI's stderr handler would print raw); the connection keeps those lines in the server's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to parse JSONRPC message")


logging.getLogger("mcp.client.stdio").addFilter(_NoParseTracebacks())

CATALOG_MAX_RESOURCES = 50
CATALOG_MAX_PROMPTS = 30
INSTRUCTIONS_MAX_PER_SERVER = 2000  # characters of one server's instructions in the system prompt
INSTRUCTIONS_MAX_TOTAL = 6000
MAX_PENDING_UPDATES = 16  # changed resources waiting for the next message (the latest kept)

Listener = McpListener


class McpManager:
    def __init__(
        self,
        servers: dict[str, ServerConfig],
        *,
        connect_timeout: float = 30.0,
        call_timeout: float = 120.0,
        refresh_interval: float = 14400.0,
        client_side: ClientSide | None = None,
        log_level: str = "",
        auth_dir: Path | None = None,
    ) -> None:
        self.client_side = client_side or ClientSide()
        self.client_side.on_log = self._on_log
        self._conns: dict[str, ServerConnection] = {
            name: ServerConnection(
                config,
                connect_timeout=connect_timeout,
                call_timeout=call_timeout,
                refresh_interval=refresh_interval,
                on_state=self._on_state,
                on_update=self._on_update,
                client_side=self.client_side,
                log_level=log_level,
                on_resource_updated=self._on_resource_updated,
                auth_dir=auth_dir,
            )
            for name, config in servers.items()
        }
        self._resource_updates: dict[str, ResourceUpdate] = {}  # uri -> the latest re-read
        self._rereads: set[asyncio.Task[None]] = set()
        self._connect_timeout = connect_timeout
        self._listeners: tuple[Listener, ...] = ()
        # Copy-on-write views, replaced as a whole on every change.
        self._tool_schemas: list[dict[str, Any]] = []
        self._tools: dict[
            str, tuple[str, ToolInfo, dict[str, Any]]
        ] = {}  # qualified -> (server, info, schema)
        self._prompts: dict[str, tuple[str, PromptInfo]] = {}

    @classmethod
    def from_config(
        cls, cfg: Config, mcp_config_path: str | None = None, *, cwd: Path | None = None
    ) -> McpManager:
        """Build from ``[mcp]`` settings (roots: ``cwd`` and ``[mcp] roots``); a bad server entry
        disables that server, an unreadable ``--mcp-config`` file raises ConfigError."""
        return cls(
            load_server_configs(cfg, mcp_config_path),
            connect_timeout=cfg.mcp.connect_timeout,
            call_timeout=cfg.mcp.call_timeout,
            refresh_interval=cfg.mcp.refresh_interval,
            client_side=ClientSide(roots=[cwd or Path.cwd(), *(Path(r).expanduser() for r in cfg.mcp.roots)]),
            log_level=cfg.mcp.log_level,
        )

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def server_names(self) -> list[str]:
        return list(self._conns)

    async def start(self) -> None:
        """Begin connecting every server concurrently; returns at once."""
        for conn in self._conns.values():
            conn.connect()

    async def wait_ready(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 - public API
        """Wait until every server is connected or failed (or ``timeout`` passes)."""
        if not self._conns:
            return
        waits = [conn.wait_settled() for conn in self._conns.values()]
        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(*waits)
        except TimeoutError:
            return

    async def aclose(self) -> None:
        """Close every session and stop every stdio server process."""
        for task in list(self._rereads):
            task.cancel()
        await asyncio.gather(*(conn.close() for conn in self._conns.values()), return_exceptions=True)

    # --- OAuth ---------------------------------------------------------------------------------

    def _login_target(self, server: str) -> ServerConnection:
        from .auth.login import LoginError

        conn = self._conns.get(server)
        if conn is None:
            known = ", ".join(self._conns) or "none"
            raise LoginError(f"no MCP server named '{server}' (configured: {known})")
        if conn.config.transport != "http":
            raise LoginError(f"MCP server '{server}' is {conn.config.transport}: only HTTP servers log in")
        if not conn.config.uses_oauth:
            raise LoginError(
                f"MCP server '{server}' does not use OAuth (oauth = false, or an Authorization header is set)"
            )
        return conn

    async def login(self, server: str, show_url: Callable[[str], Any]) -> str:
        """Log in to an HTTP server in the browser (``show_url`` gets the authorization URL), then
        reconnect it with the new token. Returns a report; LoginError (auth.login) when it fails."""
        from .auth.login import login

        conn = self._login_target(server)
        config = conn.config
        message = await login(
            server, config.url, config.oauth, conn.token_store(), show_url, headers=dict(config.headers)
        )
        await conn.close()
        conn.connect()
        await conn.wait_settled(self._connect_timeout + SETTLE_MARGIN)
        if conn.state is ServerState.CONNECTED:
            return f"{message}\nMCP server '{server}' connected: {len(conn.tools)} tools"
        return f"{message}\nMCP server '{server}' is {conn.state.value}: {conn.error or ''}".rstrip(": ")

    async def logout(self, server: str) -> str:
        """Forget the server's tokens and reconnect it (it then needs a login again)."""
        from .auth.login import logout

        conn = self._login_target(server)
        message = logout(server, conn.token_store())
        await conn.close()
        conn.connect()
        await conn.wait_settled(self._connect_timeout + SETTLE_MARGIN)
        return message

    # --- the client's side: what servers may ask, roots, logs --------------------------------

    def set_asks(self, asks: ServerAsks) -> None:
        """Who answers elicitation and sampling requests (the app's modal screens; headless declines)."""
        self.client_side.asks = asks

    def set_sampler(self, sampler: Sampler | None) -> None:
        """What runs an approved sampling request (the user's current model)."""
        self.client_side.sampler = sampler

    @property
    def roots(self) -> tuple[Path, ...]:
        return self.client_side.roots

    async def set_roots(self, roots: list[Path]) -> None:
        """Replace the roots offered to servers and tell the connected ones (roots/list_changed)."""
        if self.client_side.set_roots(roots):
            await asyncio.gather(*(c.roots_changed() for c in self._conns.values()), return_exceptions=True)

    def logs(self, server: str) -> list[LogEntry]:
        """The server's recent log messages (notifications/message), oldest first; bounded."""
        return list(self.client_side.logs.get(server, ()))

    def _on_log(self, server: str, entry: LogEntry) -> None:
        conn = self._conns.get(server)
        if conn is not None:
            self._emit(McpEvent("log", server, conn.status(), log=entry))

    # --- observation -------------------------------------------------------------------------

    def statuses(self) -> list[ServerStatus]:
        return [conn.status() for conn in self._conns.values()]

    def status(self, server: str) -> ServerStatus | None:
        conn = self._conns.get(server)
        return conn.status() if conn else None

    def connected_count(self) -> tuple[int, int]:
        """(connected servers, configured servers), for a status bar."""
        states = [c.state for c in self._conns.values()]
        return sum(1 for s in states if s is ServerState.CONNECTED), len(states)

    def add_listener(self, cb: Listener) -> Callable[[], None]:
        """Call ``cb(event)`` on every state or list change; returns a function that removes it.

        Callbacks run synchronously on the event loop: keep them cheap, do not block.
        """
        self._listeners = (*self._listeners, cb)

        def remove() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not cb)

        return remove

    def _emit(self, event: McpEvent) -> None:
        for cb in self._listeners:
            try:
                cb(event)
            except Exception:
                log.exception("MCP listener %r failed", cb)

    def _on_state(self, conn: ServerConnection) -> None:
        self._rebuild()
        self._emit(McpEvent("state", conn.name, conn.status()))

    def _on_update(
        self, conn: ServerConnection, kind: EventKind, added: tuple[str, ...], removed: tuple[str, ...]
    ) -> None:
        self._rebuild()
        self._emit(McpEvent(kind, conn.name, conn.status(), added, removed))

    def _rebuild(self) -> None:
        tools: dict[str, tuple[str, ToolInfo, dict[str, Any]]] = {}
        schemas: list[dict[str, Any]] = []
        prompts: dict[str, tuple[str, PromptInfo]] = {}
        for name, conn in self._conns.items():
            for info in conn.tools:
                if info.qualified_name in tools:
                    log.warning("MCP tool name clash: %s (server %s) ignored", info.qualified_name, name)
                    continue
                schema = convert.tool_schema(info, name)
                tools[info.qualified_name] = (name, info, schema)
                if conn.state is ServerState.CONNECTED:
                    schemas.append(schema)
            for prompt in conn.prompts:
                prompts.setdefault(prompt.qualified_name, (name, prompt))
        self._tools = tools
        self._tool_schemas = schemas
        self._prompts = prompts

    # --- McpBridge ---------------------------------------------------------------------------

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the connected servers' tools (do not mutate)."""
        return self._tool_schemas

    def has_tool(self, qualified_name: str) -> bool:
        return qualified_name in self._tools

    def tool_schema(self, qualified_name: str) -> dict[str, Any] | None:
        entry = self._tools.get(qualified_name)
        return entry[2] if entry else None

    def tool_server(self, qualified_name: str) -> tuple[str, str] | None:
        """(server, the server's own tool name) for a qualified tool name."""
        entry = self._tools.get(qualified_name)
        return (entry[0], entry[1].name) if entry else None

    def tool_info(self, qualified_name: str) -> ToolInfo | None:
        """The listed tool (with the server's read-only/destructive hints)."""
        entry = self._tools.get(qualified_name)
        return entry[1] if entry else None

    def has_prompt(self, qualified_name: str) -> bool:
        return qualified_name in self._prompts

    def skill_prompts(self) -> list[McpPromptRef]:
        """The connected servers' prompts that need no arguments, offered as skills (read from the
        live prompt lists, so they appear on connect and list_changed and go with the server).
        Two servers with a prompt of the same name: the first server's wins."""
        refs: list[McpPromptRef] = []
        seen: dict[str, str] = {}
        for name, conn in self._conns.items():
            if conn.state is not ServerState.CONNECTED:
                continue
            for prompt in conn.prompts:
                if any(argument.required for argument in prompt.arguments):
                    continue
                key = prompt.name.lower()
                if key in seen:
                    log.warning(
                        "MCP prompt %s of %s shadowed by %s's as a skill", prompt.name, name, seen[key]
                    )
                    continue
                seen[key] = name
                refs.append(McpPromptRef(prompt.name, prompt.qualified_name, name, prompt.description))
        return refs

    def resource_server(self, uri: str) -> str | None:
        """Which server serves this URI: a listed resource first, then a matching template."""
        connected = [c for c in self._conns.values() if c.state is ServerState.CONNECTED]
        for conn in connected:
            if any(not r.template and r.uri == uri for r in conn.resources):
                return conn.name
        for conn in connected:
            for r in conn.resources:
                if r.template and _template_matches(r.uri, uri):
                    return conn.name
        with_resources = [c for c in connected if c.resources]
        if len(with_resources) == 1:
            return with_resources[0].name
        return None

    def _unknown(self, what: str, qualified_name: str) -> ToolResult:
        parsed = convert.split_qualified(qualified_name)
        if parsed and parsed[0] in self._conns:
            conn = self._conns[parsed[0]]
            if conn.state is not ServerState.CONNECTED:
                why = f": {conn.error}" if conn.error else ""
                return ToolResult(
                    f"MCP server '{conn.name}' is {conn.state.value}{why}. "
                    f"Use /mcp refresh {conn.name} to reconnect.",
                    is_error=True,
                )
            return ToolResult(f"MCP server '{conn.name}' has no {what} named '{parsed[1]}'", is_error=True)
        return ToolResult(f"no MCP server provides {what} '{qualified_name}'", is_error=True)

    async def call_tool(
        self, qualified_name: str, arguments: dict[str, Any], on_progress: ProgressFn | None = None
    ) -> ToolResult:
        entry = self._tools.get(qualified_name)
        if entry is None:
            return self._unknown("tool", qualified_name)
        server, info, _ = entry
        conn = self._conns[server]

        def progress(value: float, total: float | None, message: str | None) -> None:
            conn.note_progress(info.name, value, total, message)
            self._emit(McpEvent("progress", server, conn.status()))
            if on_progress is not None:
                on_progress(value, total, message)

        try:
            result = await conn.call_tool(info.name, arguments, on_progress=progress)
        except McpCallError as exc:
            return ToolResult(str(exc), is_error=True)
        finally:
            if conn.clear_progress(info.name):
                self._emit(McpEvent("progress", server, conn.status()))
        return convert.call_result(result)

    async def read_resource(self, uri: str) -> ToolResult:
        server = self.resource_server(uri)
        if server is None:
            return ToolResult(f"no MCP server provides resource '{uri}'", is_error=True)
        conn = self._conns[server]
        try:
            result = await conn.read_resource(uri)
        except McpCallError as exc:
            return ToolResult(str(exc), is_error=True)
        conn.subscribe(uri)  # the model read it: follow its changes (when the server offers that)
        return convert.resource_result(uri, result)

    # --- resource subscriptions ----------------------------------------------------------------

    def _on_resource_updated(self, conn: ServerConnection, uri: str) -> None:
        """notifications/resources/updated for a resource the model read: read it again."""
        task = asyncio.get_running_loop().create_task(self._reread(conn, uri), name=f"mcp-reread-{uri}")
        self._rereads.add(task)
        task.add_done_callback(self._rereads.discard)

    async def _reread(self, conn: ServerConnection, uri: str) -> None:
        try:
            result = convert.resource_result(uri, await conn.read_resource(uri))
        except McpCallError as exc:
            result = ToolResult(str(exc), is_error=True)
        self._resource_updates.pop(uri, None)
        self._resource_updates[uri] = ResourceUpdate(uri, conn.name, result.text, result.is_error)
        while len(self._resource_updates) > MAX_PENDING_UPDATES:
            self._resource_updates.pop(next(iter(self._resource_updates)))
        self._emit(McpEvent("resource", conn.name, conn.status(), added=(uri,)))

    def take_resource_updates(self) -> list[ResourceUpdate]:
        """The resources that changed since the model read them (re-read), oldest first; cleared."""
        updates = list(self._resource_updates.values())
        self._resource_updates.clear()
        return updates

    def subscribed_resources(self, server: str) -> list[str]:
        conn = self._conns.get(server)
        return sorted(conn.subscriptions) if conn is not None else []

    # --- prompt argument completion --------------------------------------------------------------

    def prompts(self) -> list[PromptInfo]:
        """Every connected server's prompts."""
        return [info for _, info in self._prompts.values()]

    async def complete_prompt_argument(
        self, qualified_name: str, argument: str, value: str, context: dict[str, str] | None = None
    ) -> list[str]:
        """The server's suggestions (``completion/complete``) for one argument of a prompt; [] when
        the server offers no completions or the request fails."""
        entry = self._prompts.get(qualified_name)
        if entry is None:
            return []
        server, info = entry
        conn = self._conns[server]
        if not conn.can_complete:
            return []
        try:
            values = await conn.complete_prompt_argument(info.name, argument, value, dict(context or {}))
        except McpCallError as exc:
            log.info("MCP completion failed: %s", exc)
            return []
        return values[:100]

    async def get_prompt(self, qualified_name: str, arguments: dict[str, str]) -> ToolResult:
        entry = self._prompts.get(qualified_name)
        if entry is None:
            return self._unknown("prompt", qualified_name)
        server, info = entry
        args = {str(k): v if isinstance(v, str) else str(v) for k, v in (arguments or {}).items()}
        missing = [a.name for a in info.arguments if a.required and a.name not in args]
        if missing:
            return ToolResult(
                f"prompt '{qualified_name}' needs the argument(s): {', '.join(missing)}", is_error=True
            )
        try:
            result = await self._conns[server].get_prompt(info.name, args)
        except McpCallError as exc:
            return ToolResult(str(exc), is_error=True)
        return convert.prompt_result(result)

    # --- text for the model and the user -----------------------------------------------------

    def system_catalog(self) -> str:
        """The resource and prompt catalogue for the system message ('' when there is none)."""
        resources: list[ResourceInfo] = []
        prompts: list[PromptInfo] = []
        for conn in self._conns.values():
            if conn.state is ServerState.CONNECTED:
                resources.extend(conn.resources)
                prompts.extend(conn.prompts)
        parts: list[str] = []
        instructions = self._instructions_block()
        if instructions:
            parts.append(instructions)
        if resources:
            lines = ["<mcp-resources>"]
            for r in resources[:CATALOG_MAX_RESOURCES]:
                label = r.description or r.name
                lines.append(f"  {r.uri}  {label}".rstrip())
            if len(resources) > CATALOG_MAX_RESOURCES:
                lines.append(f"  ({len(resources) - CATALOG_MAX_RESOURCES} more not listed)")
            lines.append("</mcp-resources>")
            lines.append(
                "Use read_resource(uri='...') to access the resources listed above "
                "(fill in {placeholders} of URI templates)."
            )
            parts.append("\n".join(lines))
        if prompts:
            lines = ["<mcp-prompts>"]
            for p in prompts[:CATALOG_MAX_PROMPTS]:
                args = ", ".join(a.name + ("" if a.required else "?") for a in p.arguments)
                lines.append(f"  {p.qualified_name}({args})  {p.description}".rstrip())
            if len(prompts) > CATALOG_MAX_PROMPTS:
                lines.append(f"  ({len(prompts) - CATALOG_MAX_PROMPTS} more not listed)")
            lines.append("</mcp-prompts>")
            lines.append("Use use_prompt(name='...', arguments={...}) to expand a prompt listed above.")
            parts.append("\n".join(lines))
        return "\n\n".join(parts)

    def _instructions_block(self) -> str:
        """What connected servers said about using them (``instructions`` at initialize), bounded."""
        lines: list[str] = []
        budget = INSTRUCTIONS_MAX_TOTAL
        for conn in self._conns.values():
            text = conn.instructions.strip() if conn.state is ServerState.CONNECTED else ""
            if not text or budget <= 0:
                continue
            text = text[: min(INSTRUCTIONS_MAX_PER_SERVER, budget)]
            budget -= len(text)
            lines.append(f'<server name="{conn.name}">\n{text}\n</server>')
        if not lines:
            return ""
        return "<mcp-server-instructions>\n" + "\n".join(lines) + "\n</mcp-server-instructions>"

    def describe_tools(self) -> str:
        """The ``/mcp`` listing: every connected MCP tool with its server and description."""
        entries = [
            (q, s, i) for q, (s, i, _) in self._tools.items() if self._conns[s].state is ServerState.CONNECTED
        ]
        if not entries:
            return "No MCP tools connected."
        width = max(len(q) for q, _, _ in entries)
        lines = [f"MCP tools ({len(entries)}):"]
        for q, server, info in entries:
            lines.append(f"  {q.ljust(width)}  [MCP: {server}] {info.description}".rstrip())
        return "\n".join(lines)

    async def refresh(self, server: str | None = None) -> str:
        """Re-read every list now; failed or disconnected servers are reconnected. Returns a report."""
        if not self._conns:
            return "MCP refresh: no MCP servers configured."
        if server is not None and server not in self._conns:
            return f"MCP refresh: no MCP server named '{server}' (configured: {', '.join(self._conns)})"
        targets = [self._conns[server]] if server else list(self._conns.values())
        before = {c.name: _snapshot(c) for c in targets}
        await asyncio.gather(*(c.refresh() for c in targets), return_exceptions=True)
        lines = ["MCP refresh complete:"]
        for conn in targets:
            lines.extend(_report(conn, before[conn.name]))
        return "\n".join(lines)


def _template_matches(template: str, uri: str) -> bool:
    try:
        return UriTemplate.parse(template).match(uri) is not None
    except (InvalidUriTemplate, ValueError):
        return False


def _snapshot(conn: ServerConnection) -> tuple[ServerState, list[str], list[str], list[str]]:
    return (
        conn.state,
        [t.qualified_name for t in conn.tools],
        [r.uri for r in conn.resources],
        [p.qualified_name for p in conn.prompts],
    )


def _report(conn: ServerConnection, before: tuple[ServerState, list[str], list[str], list[str]]) -> list[str]:
    state, tools, resources, prompts = before
    if conn.state is not ServerState.CONNECTED:
        return [f"  {conn.name}: {conn.state.value}" + (f" - {conn.error}" if conn.error else "")]
    added = [t for t in (x.qualified_name for x in conn.tools) if t not in set(tools)]
    removed = [t for t in tools if t not in {x.qualified_name for x in conn.tools}]
    summary: list[str] = []
    if state is not ServerState.CONNECTED:
        summary.append("reconnected")
    if added:
        summary.append(f"+{len(added)} added")
    if removed:
        summary.append(f"-{len(removed)} removed")
    for label, old, new in (
        ("resources", resources, [r.uri for r in conn.resources]),
        ("prompts", prompts, [p.qualified_name for p in conn.prompts]),
    ):
        plus = len([x for x in new if x not in set(old)])
        minus = len([x for x in old if x not in set(new)])
        if plus or minus:
            summary.append(f"{label} +{plus}/-{minus}")
    out = [f"  {conn.name}: {', '.join(summary) if summary else 'no changes'}"]
    out.extend(f"    + {t}" for t in added)
    out.extend(f"    - {t}" for t in removed)
    return out
