"""What every tool family gets from the session, and the shape of a family's prepare function.

A family module (``executors/bash.py``, ``executors/files.py`` ...) exposes
``PREPARERS: dict[str, Preparer]``. A preparer is pure (no side effects): it validates the
arguments and returns a PreparedItem whose ``execute`` does the work after approval.
Errors are values: a preparer returns ``PreparedItem(error=...)``; an executor returns
``ToolResult(text, is_error=True)``. Neither raises for bad input.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.types import PreparedItem, ToolResult
from ..sandbox import SandboxPolicy, child_env

if TYPE_CHECKING:
    from ..config import Config
    from ..core.protocol import SessionUI
    from ..core.registry import ToolRegistry
    from ..providers.base import Provider
    from ..storage.db import Storage


Preparer = Callable[["ToolContext", str, dict[str, Any]], Awaitable[PreparedItem]]


@dataclass(slots=True)
class FileStamp:
    mtime_ns: int
    size: int


class ReadTracker:
    """Remembers which files were read (read_file / diff_file) and their state at that moment.

    edit_file refuses a path that was never read, or whose mtime/size changed since the read.
    """

    def __init__(self) -> None:
        self._stamps: dict[Path, FileStamp] = {}

    @staticmethod
    def _stat(path: Path) -> FileStamp | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return FileStamp(st.st_mtime_ns, st.st_size)

    def record(self, path: Path) -> None:
        stamp = self._stat(path)
        if stamp is not None:
            self._stamps[path.resolve()] = stamp

    def check(self, path: Path) -> str | None:
        """None when the path may be edited, else the reason it may not."""
        resolved = path.resolve()
        seen = self._stamps.get(resolved)
        if seen is None:
            return f"{path} has not been read in this session: call read_file (or diff_file) on it first"
        now = self._stat(resolved)
        if now is None:
            return f"{path} no longer exists"
        if now != seen:
            return (
                f"{path} changed on disk since it was last read (stale edit refused): "
                "read it again before editing"
            )
        return None

    def forget(self, path: Path) -> None:
        self._stamps.pop(path.resolve(), None)


@dataclass(frozen=True, slots=True)
class McpPromptRef:
    """An MCP prompt that needs no arguments, which the skill tool offers as a skill."""

    name: str  # the server's own prompt name: the skill's name
    qualified_name: str  # mcp__<server>__<prompt>, what get_prompt takes
    server: str
    description: str


class McpBridge(Protocol):
    """What executors need from the MCP client (implemented by turnstone_tui.mcp)."""

    async def call_tool(self, qualified_name: str, arguments: dict[str, Any]) -> ToolResult: ...
    async def read_resource(self, uri: str) -> ToolResult: ...
    async def get_prompt(self, qualified_name: str, arguments: dict[str, str]) -> ToolResult: ...
    def has_tool(self, qualified_name: str) -> bool: ...
    def tool_schema(self, qualified_name: str) -> dict[str, Any] | None: ...
    def skill_prompts(self) -> list[McpPromptRef]: ...


# Agent kinds for ToolContext.run_subagent
SubagentRunner = Callable[[str, str], Awaitable[ToolResult]]  # (kind "task"|"plan", prompt) -> result


@dataclass
class ToolContext:
    config: Config
    registry: ToolRegistry
    cwd: Path
    session_id: str
    ui: SessionUI
    storage: Storage | None = None
    provider: Provider | None = None
    mcp: McpBridge | None = None
    read_tracker: ReadTracker = field(default_factory=ReadTracker)
    supports_vision: bool = False
    # "main" for the top-level session, "task" / "plan" inside a sub-agent.
    agent_kind: str = "main"
    run_subagent: SubagentRunner | None = None
    # Per-turn counters and session state that tools may read or change.
    notify_sent_this_turn: int = 0
    active_skill: str | None = None
    on_skill_loaded: Callable[[str, str], None] | None = None  # (name, content)
    # Extra state a tool family wants to keep per session (keyed by family name).
    state: dict[str, Any] = field(default_factory=dict)

    def resolve(self, path: str) -> Path:
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.cwd / p)


# --- helpers every family uses -----------------------------------------------------------

_SECRET_NAME = re.compile(
    r"(_KEY|_SECRET|_TOKEN|_PASSWORD|_PASSWD|_CREDENTIALS?)$|^(API_KEY|TOKEN|SECRET|PASSWORD)$", re.I
)


def is_secret_env_name(name: str) -> bool:
    """A name that looks like a secret (used to redact; subprocess environments use an allowlist)."""
    return bool(_SECRET_NAME.search(name))


def scrubbed_env(extra: dict[str, str] | None = None, passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The environment for every subprocess a tool starts: an allowlist (PATH, HOME, LANG, ...) plus
    ``passthrough`` names (``[env] pass``) plus ``extra``; never the agent's secrets."""
    return child_env(extra, passthrough)


def sandbox_policy(config: Config) -> SandboxPolicy:
    sb = config.sandbox
    return SandboxPolicy(sb.mode, sb.network == "on", tuple(sb.writable), sb.auto_approve)


def error_item(call_id: str, func_name: str, args: dict[str, Any], message: str) -> PreparedItem:
    return PreparedItem(
        call_id=call_id,
        func_name=func_name,
        args=args,
        header=f"{func_name}: error",
        preview=message,
        needs_approval=False,
        error=message,
    )


def require_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and value != "" else None
