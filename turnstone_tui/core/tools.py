"""The tool contract: what every tool family gets from the session, and what it hands back.

A family module (``executors/bash.py``, ``executors/files.py`` ...) exposes
``PREPARERS: dict[str, Preparer]``. A preparer is pure (no side effects): it validates the
arguments and returns a PreparedItem whose ``execute`` does the work after approval.
Errors are values: a preparer returns ``error_item(...)``; an executor returns
``ToolResult(text, is_error=True)``. Neither raises for bad input.

The engine owns this contract; ``turnstone_tui.executors`` implements it and ``runtime.py``
hands the session its ``ToolTable``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .types import PreparedItem, ToolResult

if TYPE_CHECKING:
    from ..config import Config
    from ..storage.db import Storage
    from .checkpoints import FileCheckpoints
    from .mcp_bridge import McpBridge
    from .permissions import Verdict
    from .protocol import SessionUI
    from .provider import Provider
    from .registry import ToolRegistry
    from .tool_search import ToolSearchManager


Preparer = Callable[["ToolContext", str, dict[str, Any]], Awaitable[PreparedItem]]
# Prepares any ``mcp__<server>__<tool>`` call: (ctx, call_id, qualified name, args).
McpPreparer = Callable[["ToolContext", str, str, dict[str, Any]], Awaitable[PreparedItem]]
# Runs a sub-agent: (kind "task"|"plan", prompt) -> its answer.
SubagentRunner = Callable[[str, str], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class ToolTable:
    """The built-in tools a session offers: their definitions and the functions that prepare them."""

    registry: ToolRegistry
    preparers: Mapping[str, Preparer]
    mcp_preparer: McpPreparer | None = None


class WatchScheduler(Protocol):
    """The watch runner as the watch tool sees it: poll again now (a watch was added)."""

    def wake(self) -> None: ...


class MemorySource(Protocol):
    """The saved memories a main session puts in its system prompt."""

    async def prompt_section(self, session_id: str) -> str: ...


@dataclass(slots=True)
class FileStamp:
    mtime_ns: int
    size: int


class ReadTracker:
    """Remembers which files were read (read_file / diff_file) and their state at that moment.

    edit_file refuses a path that was never read, or whose mtime/size changed since the read.
    A read_file prepared earlier in the same batch counts (``expect``): calls are prepared in order
    before any runs, so ``read_file x`` + ``edit_file x`` in one batch would otherwise always refuse.
    """

    def __init__(self) -> None:
        self._stamps: dict[Path, FileStamp] = {}

    def expect(self, path: Path) -> None:
        """A read of ``path`` is about to run in this batch: an edit prepared after it may proceed."""
        self.record(path)

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
    checkpoints: FileCheckpoints | None = (
        None  # what /undo restores (a main session's, shared with its sub-agents)
    )
    supports_vision: bool = False
    # "main" for the top-level session, "task" / "plan" inside a sub-agent.
    agent_kind: str = "main"
    run_subagent: SubagentRunner | None = None
    # Per-turn counters and session state that tools read or change.
    notify_sent_this_turn: int = 0
    notify_in_flight: int = 0  # notify calls of the running batch still delivering
    active_skill: str | None = None
    plan_version: int = 0  # the plan file's version (1 = first written); 0 until plan_agent writes it here
    plan_session: str = ""  # whose plan this context reads: a sub-agent's is its parent's ("": session_id)
    on_skill_loaded: Callable[[str, str], None] | None = None  # (name, content)
    tool_search: ToolSearchManager | None = None  # set by a main session
    watches: WatchScheduler | None = None  # the runtime's watch runner
    # The session's permission verdict for a call (its rules and mode, as the pipeline judges):
    # a tool that reaches further while running (web_fetch following a redirect) asks it again.
    judge: Callable[[PreparedItem], Verdict] | None = None
    # Settings no config option sets (tests point them at local servers and scratch dirs).
    web_allow_hosts: frozenset[str] = frozenset()  # exact "host:port"s the SSRF guard lets through
    web_fetch_timeout: float | None = None  # seconds; None: web.FETCH_TIMEOUT
    tavily_base_url: str | None = None  # None: web.TAVILY_URL
    skills_dir: Path | None = None  # None: <config dir>/skills
    notify_retry_delays: tuple[float, ...] | None = None  # None: notify.RETRY_DELAYS

    def resolve(self, path: str) -> Path:
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.cwd / p)

    def plan_path(self) -> Path:
        """Where this session's plan lives: ``<plans dir>/<session_id>.md`` in the app's data dir
        (``Config.plans_dir``), so plans never litter the project."""
        return self.config.plans_dir() / f"{self.plan_session or self.session_id}.md"


def error_item(call_id: str, func_name: str, args: dict[str, Any], message: str) -> PreparedItem:
    return PreparedItem(
        call_id, func_name, args, f"{func_name}: error", preview=message, needs_approval=False, error=message
    )


def require_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and value != "" else None
