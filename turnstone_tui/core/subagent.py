"""The UI a sub-agent (task_agent / plan_agent) talks to: the parent's, with its activity labelled."""

from __future__ import annotations

from .protocol import SessionUI
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


class SubagentUI:
    """Forwards tool activity and approvals to the parent UI; keeps the sub-agent's text to itself.

    The sub-agent's answer becomes the tool result of the parent's call; its tool cards, live
    output and approval requests show in the parent's UI, labelled with the agent kind.
    """

    def __init__(self, parent: SessionUI, kind: str) -> None:
        self.parent = parent
        self.kind = kind
        self.errors: list[str] = []

    def on_turn_start(self, user_text: str) -> None:
        self.parent.on_info(f"[{self.kind} agent] started")

    def on_content_token(self, text: str) -> None: ...
    def on_reasoning_token(self, text: str) -> None: ...
    def on_message_end(self) -> None: ...

    def on_tools_prepared(self, items: list[PreparedItem]) -> None:
        for item in items:
            if not item.header.startswith(f"[{self.kind}]"):
                item.header = f"[{self.kind}] {item.header}"
        self.parent.on_tools_prepared(items)

    async def approve_tools(self, items: list[PreparedItem]) -> ApprovalDecision:
        return await self.parent.approve_tools(items)

    async def confirm_unsandboxed(self, request: EscalationRequest) -> bool | None:
        """The user decides, in the parent's UI (a headless parent says no), never the sub-agent."""
        return await self.parent.confirm_unsandboxed(request)

    def on_tool_start(self, item: PreparedItem) -> None:
        self.parent.on_tool_start(item)

    def on_tool_output(self, call_id: str, lines: list[str], stream: OutputStream) -> None:
        self.parent.on_tool_output(call_id, lines, stream)

    def on_tool_progress(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        self.parent.on_tool_progress(call_id, progress, total, message)

    def on_tool_result(self, call_id: str, name: str, result: ToolResult) -> None:
        self.parent.on_tool_result(call_id, name, result)

    async def review_plan(self, plan: str, path: str, version: int = 1) -> PlanReview:
        return await self.parent.review_plan(plan, path, version)

    def on_state(self, state: SessionState) -> None:
        if state is SessionState.ATTENTION:
            self.parent.on_state(state)
        elif state is not SessionState.IDLE:
            self.parent.on_state(SessionState.RUNNING)

    def on_status(self, status: StatusInfo) -> None: ...

    def on_info(self, message: str) -> None:
        self.parent.on_info(f"[{self.kind} agent] {message}")

    def on_notification(self, text: str) -> None:
        self.parent.on_notification(f"[{self.kind} agent] {text}")

    def on_error(self, message: str) -> None:
        self.errors.append(message)
        self.parent.on_error(f"[{self.kind} agent] {message}")

    def on_turn_end(self) -> None:
        self.parent.on_info(f"[{self.kind} agent] finished")
