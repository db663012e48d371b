"""The MCP contract: what the engine, the tools and the UI can see of and ask from MCP servers.

``turnstone_tui.mcp.manager.McpManager`` implements ``McpBridge``; the session, the tool
executors and the MCP panel are typed against this module only (no probing with hasattr).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .types import ToolResult


class ServerState(enum.StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    FAILED = "failed"
    DISCONNECTED = "disconnected"


@dataclass(frozen=True, slots=True)
class ToolInfo:
    qualified_name: str  # mcp__<server>__<tool> (what the model calls)
    name: str  # the server's own tool name
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)
    # The server's hints (ToolAnnotations); untrusted: shown to the user, used only on opt-in.
    read_only: bool | None = None
    destructive: bool | None = None

    def hint_label(self) -> str:
        """``read-only`` / ``destructive`` / ``""``: what the server claims the tool does."""
        if self.read_only:
            return "read-only"
        if self.destructive or (self.read_only is False and self.destructive is None):
            return "destructive"
        return ""


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    uri: str  # a fixed URI, or a URI template such as notes://{topic}
    name: str
    description: str
    mime_type: str | None = None
    template: bool = False


@dataclass(frozen=True, slots=True)
class PromptArgumentInfo:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptInfo:
    qualified_name: str  # mcp__<server>__<prompt> (what use_prompt takes)
    name: str
    description: str
    arguments: tuple[PromptArgumentInfo, ...] = ()


@dataclass(slots=True)
class ServerStatus:
    """A snapshot of one server for the UI panel and ``mcp list``."""

    name: str
    state: ServerState
    error: str | None
    tools: list[ToolInfo]
    resources: list[ResourceInfo]
    prompts: list[PromptInfo]
    transport: str  # "stdio" | "http"
    target: str  # the command line or URL
    protocol_version: str | None = None
    server_name: str | None = None  # what the server calls itself
    server_version: str | None = None
    # List kinds the server pushes changes for (others are polled): subset of {"tools","resources","prompts"}.
    push: frozenset[str] = frozenset()
    connected_at: float | None = None  # time.time()
    last_refresh: float | None = None
    # Tool calls in flight that reported progress: (tool, progress, total, message).
    progress: tuple[ProgressInfo, ...] = ()
    log_count: int = 0  # log messages kept for the panel's log view
    instructions: str = ""  # what the server said about itself at initialize
    needs_login: bool = False  # failed because the server answered 401/403 (see error)


@dataclass(frozen=True, slots=True)
class ProgressInfo:
    tool: str
    progress: float
    total: float | None = None
    message: str = ""

    @property
    def fraction(self) -> float | None:
        if self.total is None or self.total <= 0:
            return None
        return max(0.0, min(1.0, self.progress / self.total))

    def describe(self) -> str:
        """``40%  reading files`` / ``3  step 3`` (the number when there is no total)."""
        fraction = self.fraction
        amount = f"{fraction:.0%}" if fraction is not None else f"{self.progress:g}"
        return f"{amount}  {self.message}".rstrip()


EventKind = Literal["state", "tools", "resources", "prompts", "log", "progress", "resource"]


@dataclass(frozen=True, slots=True)
class ResourceUpdate:
    """A resource the model read changed (notifications/resources/updated) and was read again."""

    uri: str
    server: str
    text: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class McpEvent:
    """Sent to listeners when a server's state or one of its lists changes.

    ``added``/``removed`` name tools/prompts by qualified name and resources by URI; kind
    "resource": a subscribed resource changed (``added`` holds its URI).
    """

    kind: EventKind
    server: str
    status: ServerStatus
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    log: Any = None  # kind "log": the client_side.LogEntry


McpListener = Callable[[McpEvent], None]
# A running tool's progress: (progress, total or None, message or None); called on the event loop.
ProgressFn = Callable[[float, float | None, str | None], None]


@dataclass(frozen=True, slots=True)
class McpPromptRef:
    """An MCP prompt that needs no arguments, which the skill tool offers as a skill."""

    name: str  # the server's own prompt name: the skill's name
    qualified_name: str  # mcp__<server>__<prompt>, what get_prompt takes
    server: str
    description: str


class McpBridge(Protocol):
    """Every configured MCP server as one source of tools, resources and prompts."""

    # --- observation (sessions, status bar, MCP panel) ---
    def statuses(self) -> list[ServerStatus]: ...
    def status(self, server: str) -> ServerStatus | None: ...
    def connected_count(self) -> tuple[int, int]: ...
    def add_listener(self, cb: McpListener) -> Callable[[], None]: ...

    # --- what the model is offered ---
    def tool_schemas(self) -> list[dict[str, Any]]: ...
    def tool_schema(self, qualified_name: str) -> dict[str, Any] | None: ...
    def system_catalog(self) -> str: ...
    def describe_tools(self) -> str: ...

    # --- lookups for the tool executors ---
    def has_tool(self, qualified_name: str) -> bool: ...
    def tool_server(self, qualified_name: str) -> tuple[str, str] | None: ...
    def tool_info(self, qualified_name: str) -> ToolInfo | None: ...
    def has_prompt(self, qualified_name: str) -> bool: ...
    def resource_server(self, uri: str) -> str | None: ...
    def skill_prompts(self) -> list[McpPromptRef]: ...

    # --- calls ---
    async def call_tool(
        self, qualified_name: str, arguments: dict[str, Any], on_progress: ProgressFn | None = None
    ) -> ToolResult: ...
    async def read_resource(self, uri: str) -> ToolResult: ...
    async def get_prompt(self, qualified_name: str, arguments: dict[str, str]) -> ToolResult: ...

    # --- subscriptions and completion ---
    def take_resource_updates(self) -> list[ResourceUpdate]: ...
    def prompts(self) -> list[PromptInfo]: ...
    async def complete_prompt_argument(
        self, qualified_name: str, argument: str, value: str, context: dict[str, str] | None = None
    ) -> list[str]: ...

    # --- lifecycle ---
    async def refresh(self, server: str | None = None) -> str: ...
    async def aclose(self) -> None: ...
