"""Plain data passed between the engine, the tools and the front ends.

Nothing here imports Textual; every front end and every executor shares these types.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

PLAN_REVIEW_KIND = "plan_review"
"""The ``kind`` of the stored [plan review] message (kept out of the prompt history)."""
PLAN_CARD_KEY = "plan_card"
"""On a [plan review] message after a refinement: the plan_agent call's latest result (the tool
message as stored), which its card shows; the model saw the earlier version in the tool result.
Here, not in the session: a resumed chat's replay reads it without importing the engine."""
RESOURCE_UPDATE_KIND = "mcp_resource_update"
"""The ``kind`` of the engine's message telling the model of changed MCP resources."""


class SessionState(enum.StrEnum):
    IDLE = "idle"
    THINKING = "thinking"
    RUNNING = "running"
    ATTENTION = "attention"
    ERROR = "error"


@dataclass(slots=True)
class ToolCall:
    """One tool call as the model sent it (arguments still raw JSON text)."""

    id: str
    name: str
    arguments: str
    # Why the engine refused the raw arguments at the model-output boundary (too large, too
    # deep, cut off); such a call is answered with this error and never prepared.
    refused: str | None = None


class ToolStatus(enum.StrEnum):
    """How a tool call ended. A denial is not a failure (``is_error`` stays False for it)."""

    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How a command a tool ran ended (bash): what the pane and the card show."""

    exit_code: int | None
    signal: str | None = None  # e.g. "SIGKILL" when a signal ended it
    timed_out: bool = False
    truncated: bool = False  # output was cut to the head and tail
    detached: bool = False  # background children kept the output open; reading stopped


@dataclass(slots=True)
class ToolResult:
    """What a tool returns: text the model reads, how the call ended, optional rich parts."""

    text: str
    is_error: bool = False
    # OpenAI-style content parts (e.g. {"type": "image_url", ...}) for images; None = text only.
    content_parts: list[dict[str, Any]] | None = None
    structured: Any = None
    # None: OK or ERROR, from is_error.
    status: ToolStatus | None = None
    process: ProcessOutcome | None = None
    # Seconds the call ran, measured by the engine around its execution (None: not executed).
    elapsed: float | None = None
    # A sandboxed run failed because of the sandbox: the output line that shows it ("...: Read-only
    # file system"). The engine then offers to run the call again outside the sandbox (never stored).
    sandbox_denial: str | None = None

    def __post_init__(self) -> None:
        if self.status is None:
            self.status = ToolStatus.ERROR if self.is_error else ToolStatus.OK


OutputStream = Literal["stdout", "stderr"]


@dataclass(slots=True)
class ExecContext:
    """Handed to a tool's execute callable: where to stream output while it runs.

    ``emit_lines(lines, stream)`` takes a batch of output lines (without their newlines): one
    call per chunk read, so a flood of output costs one call per 64 KiB, not one per line."""

    call_id: str
    emit_lines: Callable[[list[str], OutputStream], None]


ExecuteFn = Callable[[ExecContext], Awaitable[ToolResult]]


class Standby(Protocol):
    """A call's process started ahead, while the user reads the approval, that runs nothing of the
    call until the call's ``execute`` tells it to (bash: the sandbox, waiting for a word on a pipe).
    The pipeline starts it for a call it asks about and closes it when the call will not run (and
    every one once the batch is over; closing one that ran is a no-op)."""

    def start(self) -> None: ...

    def close(self) -> None: ...


PreviewKind = Literal["text", "bash", "diff", "json", "markdown"]


@dataclass(frozen=True, slots=True)
class CommandPart:
    """One simple command of a parsed command line, as permission rules see it.

    ``words``: each word's text after quote removal, None where it is only known at run time
    (``$X``, ``$(...)``, a glob). ``clean``: no environment prefix (``PAGER=x git log``) and no
    redirect that writes a file (``> /dev/null`` and ``2>&1`` are fine): only a clean part can be
    allowed by a rule with a specifier.
    """

    words: tuple[str | None, ...]
    clean: bool = True
    # The command a wrapper runs (``sudo -u x rm f`` -> ``rm f``), for deny and ask rules; () = words.
    unwrapped: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class Subject:
    """What a call touches, for permission rules (``core/permissions.py``); set by its preparer.

    ``commands``: the simple commands of a bash/watch command line, None when it could not be
    parsed; ``paths``: the real (resolved) paths a file tool reads or writes; ``domain``: the host a
    web_fetch asks; ``workspace_edit``: a file edit that stays inside the workspace.
    """

    commands: tuple[CommandPart, ...] | None = None
    paths: tuple[str, ...] = ()
    domain: str = ""
    workspace_edit: bool = False


@dataclass(slots=True)
class PreparedItem:
    """Phase 1 output: everything the UI needs to show and the engine needs to run a call."""

    call_id: str
    func_name: str
    args: dict[str, Any]
    header: str
    preview: str = ""
    needs_approval: bool = True
    execute: ExecuteFn | None = None
    error: str | None = None
    preview_kind: PreviewKind = "text"
    # The name "always" adds to the auto-approve set (per tool type; MCP tools use their full name).
    approval_label: str = ""
    # What permission rules match (see Subject); None: only tool-wide rules apply.
    subject: Subject | None = None
    # The tool only reads (runs in plan mode); set from the tool's definition or an MCP hint.
    read_only: bool = False
    # Code this call runs is confined by the OS sandbox; sandbox_note says how it runs, for the modal.
    sandboxed: bool = False
    sandbox_note: str = ""
    # The same call run outside the sandbox: offered to the user (never run unasked) when the sandboxed
    # run failed because of the sandbox (its result's ``sandbox_denial``). None: nothing to offer.
    unsandboxed: ExecuteFn | None = None
    # Its process started ahead while the user is asked (see Standby); None: started when it runs.
    standby: Standby | None = None

    def __post_init__(self) -> None:
        if not self.approval_label:
            self.approval_label = self.func_name


@dataclass(slots=True, frozen=True)
class ApprovalDecision:
    """The UI's answer for one batch of prepared items."""

    approved: bool
    feedback: str | None = None
    # Tool names (approval labels) to auto-approve for the rest of the session.
    always: frozenset[str] = frozenset()
    # Optional per-call override: call_id -> approved. Calls not listed follow ``approved``.
    per_call: dict[str, bool] = field(default_factory=dict)
    # Permission rules to add (core.permissions.Rule, scope "session", "project" or "user"), each with
    # the call it was offered for: granted only when that call was approved.
    rules: tuple[tuple[str, Any], ...] = ()

    def is_approved(self, call_id: str) -> bool:
        return self.per_call.get(call_id, self.approved)


@dataclass(slots=True, frozen=True)
class EscalationRequest:
    """A sandboxed call failed because of the sandbox: may it run again OUTSIDE it? Only the user
    answers this (a UI without a user answers no); there is no "always"."""

    call_id: str
    func_name: str
    command: str
    failure: str  # the output line that shows the sandbox's refusal
    cause: str  # what in the sandbox refused it, in words


PlanAction = Literal["accept", "reject", "annotate"]


@dataclass(slots=True, frozen=True)
class PlanReview:
    action: PlanAction
    annotation: str = ""


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(slots=True)
class StatusInfo:
    """Snapshot for a status bar."""

    model: str
    provider: str
    state: SessionState
    prompt_tokens: int = 0
    completion_tokens: int = 0
    context_window: int = 0
    mcp_connected: int = 0
    mcp_total: int = 0
    pending_approvals: int = 0
    session_id: str = ""
    mode: str = "default"  # the permission mode (core.permissions.Mode)
    sandbox: str = ""  # "sandbox", "no sandbox" or "sandbox unavailable" ("" before it is known)

    @property
    def context_percent(self) -> float:
        if not self.context_window:
            return 0.0
        return 100.0 * self.prompt_tokens / self.context_window
