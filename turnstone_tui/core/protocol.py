"""The one seam between the engine and any front end.

The engine calls these methods; the headless runner, the Textual app and the test recorder
implement them. Streaming callbacks are synchronous and must be cheap (a front end queues or
posts a message); questions to the user are coroutines the engine awaits.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .types import (
    ApprovalDecision,
    EscalationRequest,
    OutputStream,
    PlanReview,
    PreparedItem,
    SessionState,
    StatusInfo,
    ToolResult,
)


@runtime_checkable
class SessionUI(Protocol):
    # --- model output -------------------------------------------------------------------
    def on_turn_start(self, user_text: str) -> None:
        """A user (or synthetic watch) message starts a turn."""

    def on_content_token(self, text: str) -> None:
        """A piece of the assistant's visible answer."""

    def on_reasoning_token(self, text: str) -> None:
        """A piece of the model's reasoning (thinking) stream."""

    def on_message_end(self) -> None:
        """The assistant finished one streamed message (tool calls may follow)."""

    # --- tools --------------------------------------------------------------------------
    def on_tools_prepared(self, items: list[PreparedItem]) -> None:
        """All calls of one batch were prepared (shown as cards before any approval)."""

    async def approve_tools(self, items: list[PreparedItem]) -> ApprovalDecision:
        """Ask the user about the items that need approval (only those are passed)."""

    async def confirm_unsandboxed(self, request: EscalationRequest) -> bool | None:
        """An approved call ran in the sandbox and failed because of it: may it run again OUTSIDE the
        sandbox, with full access to the user's files and network? True: the user said yes; False:
        the user said no; None: no user to ask (headless, benchmarks): nothing runs, the model is told
        to ask the user to run it. There is no "always"."""

    def on_tool_start(self, item: PreparedItem) -> None:
        """An approved item begins executing."""

    def on_tool_output(self, call_id: str, lines: list[str], stream: OutputStream) -> None:
        """Lines of live output (bash), routed by call_id: a batch per chunk read (the list is
        the callee's to keep)."""

    def on_tool_progress(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        """A running call reported progress (MCP progress notifications): ``progress`` of ``total``."""

    def on_tool_result(self, call_id: str, name: str, result: ToolResult) -> None:
        """The final result of one call (also for denied, failed and cancelled calls)."""

    async def review_plan(self, plan: str, path: str, version: int = 1) -> PlanReview:
        """Show a plan_agent plan (its ``version``: 2 after one refinement ...); accept, reject or
        annotate. The review is the only question about a plan (plan_agent itself runs unasked)."""

    # --- session ------------------------------------------------------------------------
    def on_state(self, state: SessionState) -> None:
        """idle / thinking / running / attention / error."""

    def on_status(self, status: StatusInfo) -> None:
        """Model, tokens, context use, MCP counts, pending approvals. A UI that draws no status
        may say ``shows_status = False`` (a class attribute): the session then leaves out what
        only the status shows (the sandbox probe at start)."""

    def on_info(self, message: str) -> None:
        """Something the user should know (not an error)."""

    def on_notification(self, text: str) -> None:
        """The notify tool's message (no webhook configured): show it and ring the bell."""

    def on_error(self, message: str) -> None:
        """Something went wrong; the app keeps running."""

    def on_turn_end(self) -> None:
        """The turn finished (answered, failed or cancelled)."""


class NullUI:
    """A UI that shows nothing and answers every question with 'no' (benchmarks, sub-agents)."""

    def on_turn_start(self, user_text: str) -> None: ...
    def on_content_token(self, text: str) -> None: ...
    def on_reasoning_token(self, text: str) -> None: ...
    def on_message_end(self) -> None: ...
    def on_tools_prepared(self, items: list[PreparedItem]) -> None: ...

    async def approve_tools(self, items: list[PreparedItem]) -> ApprovalDecision:
        return ApprovalDecision(approved=False, feedback="no interactive user to approve this")

    async def confirm_unsandboxed(self, request: EscalationRequest) -> bool | None:
        return None

    def on_tool_start(self, item: PreparedItem) -> None: ...
    def on_tool_output(self, call_id: str, lines: list[str], stream: OutputStream) -> None: ...
    def on_tool_progress(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None: ...
    def on_tool_result(self, call_id: str, name: str, result: ToolResult) -> None: ...

    async def review_plan(self, plan: str, path: str, version: int = 1) -> PlanReview:
        return PlanReview("accept")

    def on_state(self, state: SessionState) -> None: ...
    def on_status(self, status: StatusInfo) -> None: ...
    def on_info(self, message: str) -> None: ...
    def on_notification(self, text: str) -> None: ...
    def on_error(self, message: str) -> None: ...
    def on_turn_end(self) -> None: ...
