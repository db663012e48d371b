"""The words for how a tool call ended: each phrase the user or the model reads is written here once."""

from __future__ import annotations

from .types import ToolResult, ToolStatus

CANCELLED_BY_USER = "cancelled by user"
CANCELLED_TEXT = f"{CANCELLED_BY_USER}: the tool call was interrupted before it finished"
DENIED_BY_USER = "denied by user"
INTERRUPTED_TEXT = "interrupted: the session ended before this tool call returned a result"
NOT_STORED_TEXT = "no result was stored (the app stopped during the call)"

# Short labels for cards, panes and headless logs.
STATUS_LABELS: dict[ToolStatus, str] = {
    ToolStatus.OK: "ok",
    ToolStatus.ERROR: "error",
    ToolStatus.DENIED: "denied",
    ToolStatus.CANCELLED: "cancelled",
    ToolStatus.TIMED_OUT: "timed out",
}


def cancelled_result(text: str = CANCELLED_BY_USER) -> ToolResult:
    """A call the user's interrupt stopped (or that never got to run)."""
    return ToolResult(text, is_error=True, status=ToolStatus.CANCELLED)


def denied_result(func_name: str, feedback: str | None = None) -> ToolResult:
    """A call the user did not approve; the model reads the user's feedback with it."""
    text = f"{DENIED_BY_USER}: {func_name} was not run"
    if feedback and feedback.strip():
        text += f"\n[user feedback: {feedback.strip()}]"
    return ToolResult(text, is_error=False, status=ToolStatus.DENIED)


def refused_result(func_name: str, reason: str) -> ToolResult:
    """A call a deny rule or the permission mode kept from running; the model reads why."""
    text = reason if reason.startswith(func_name) else f"{func_name} was not run: {reason}"
    return ToolResult(text, is_error=False, status=ToolStatus.DENIED)


def interrupted_result() -> ToolResult:
    """A stored call without a result (the process died mid-turn), repaired on resume."""
    return ToolResult(INTERRUPTED_TEXT, is_error=True, status=ToolStatus.CANCELLED)
