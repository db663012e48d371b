"""A SessionUI for tests: records every callback and answers questions from a script."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turnstone_tui.core.types import (
    ApprovalDecision,
    EscalationRequest,
    OutputStream,
    PlanReview,
    PreparedItem,
    SessionState,
    StatusInfo,
    ToolResult,
)

ApprovalAnswer = ApprovalDecision | Callable[[list[PreparedItem]], ApprovalDecision]


@dataclass
class RecordingUI:
    approvals: list[ApprovalAnswer] = field(default_factory=list)
    plan_reviews: list[PlanReview] = field(default_factory=list)
    # Answers to "run it again outside the sandbox?", in order; no answer left: no.
    escalations: list[bool] = field(default_factory=list)
    escalation_requests: list[EscalationRequest] = field(default_factory=list)
    default_approval: ApprovalDecision = field(default_factory=lambda: ApprovalDecision(approved=True))
    # Set to make approve_tools wait until the test releases it.
    approval_gate: asyncio.Event | None = None

    events: list[tuple[str, Any]] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    chunks: dict[str, list[tuple[str, OutputStream]]] = field(default_factory=dict)
    output_calls: dict[str, int] = field(default_factory=dict)  # on_tool_output calls per call id
    results: dict[str, tuple[str, ToolResult]] = field(default_factory=dict)
    progress: dict[str, list[tuple[float, float | None, str | None]]] = field(default_factory=dict)
    approval_requests: list[list[PreparedItem]] = field(default_factory=list)
    plans_shown: list[tuple[str, str]] = field(default_factory=list)
    prepared: list[PreparedItem] = field(default_factory=list)
    states: list[SessionState] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)
    notifications: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    statuses: list[StatusInfo] = field(default_factory=list)
    started: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.content)

    def on_turn_start(self, user_text: str) -> None:
        self.events.append(("turn_start", user_text))

    def on_content_token(self, text: str) -> None:
        self.content.append(text)

    def on_reasoning_token(self, text: str) -> None:
        self.reasoning.append(text)

    def on_message_end(self) -> None:
        self.events.append(("message_end", None))

    def on_tools_prepared(self, items: list[PreparedItem]) -> None:
        self.prepared.extend(items)
        self.events.append(("prepared", [i.call_id for i in items]))

    async def approve_tools(self, items: list[PreparedItem]) -> ApprovalDecision:
        self.approval_requests.append(list(items))
        self.events.append(("approve", [i.call_id for i in items]))
        if self.approval_gate is not None:
            await self.approval_gate.wait()
        answer = self.approvals.pop(0) if self.approvals else self.default_approval
        return answer(items) if callable(answer) else answer

    async def confirm_unsandboxed(self, request: EscalationRequest) -> bool:
        self.escalation_requests.append(request)
        self.events.append(("escalate", request.call_id))
        return self.escalations.pop(0) if self.escalations else False

    def on_tool_start(self, item: PreparedItem) -> None:
        self.started.append(item.call_id)
        self.events.append(("tool_start", item.call_id))

    def on_tool_output(self, call_id: str, lines: list[str], stream: OutputStream) -> None:
        self.chunks.setdefault(call_id, []).extend((line, stream) for line in lines)
        self.output_calls[call_id] = self.output_calls.get(call_id, 0) + 1

    def on_tool_progress(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        self.progress.setdefault(call_id, []).append((progress, total, message))

    def on_tool_result(self, call_id: str, name: str, result: ToolResult) -> None:
        self.results[call_id] = (name, result)
        self.events.append(("tool_result", call_id))

    async def review_plan(self, plan: str, path: str, version: int = 1) -> PlanReview:
        self.plans_shown.append((plan, path))
        return self.plan_reviews.pop(0) if self.plan_reviews else PlanReview("accept")

    def on_state(self, state: SessionState) -> None:
        self.states.append(state)

    def on_status(self, status: StatusInfo) -> None:
        self.statuses.append(status)

    def on_info(self, message: str) -> None:
        self.infos.append(message)

    def on_notification(self, text: str) -> None:
        self.notifications.append(text)

    def on_error(self, message: str) -> None:
        self.errors.append(message)

    def on_turn_end(self) -> None:
        self.events.append(("turn_end", None))
