"""Textual messages that carry engine events (posted by the UI bridge) into the app.

The bridge turns every ``SessionUI`` callback into one of these. High-frequency streams (answer
tokens, reasoning tokens, tool output lines) are coalesced into a :class:`StreamBatch` whose list
keeps growing until the next discrete event seals it, so ordering is kept and a burst of 200k lines
becomes a handful of messages.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal

from textual.message import Message

from ..core.types import (
    ApprovalDecision,
    EscalationRequest,
    OutputStream,
    PlanReview,
    PreparedItem,
    SessionState,
    StatusInfo,
    ToolResult,
)


@dataclass(slots=True)
class TextPiece:
    """Consecutive tokens of one kind (answer or reasoning), joined lazily."""

    kind: Literal["content", "reasoning"]
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass(slots=True)
class OutputLines:
    """Consecutive lines of live output from one tool call and stream (the bridge appends to
    ``lines`` until another item follows or the app takes the buffer)."""

    call_id: str
    stream: OutputStream
    lines: list[str] = field(default_factory=list)


StreamItem = TextPiece | OutputLines


@dataclass(slots=True)
class StreamBuffer:
    """Items of one :class:`StreamBatch`. The bridge appends until the app marks it ``consumed``
    (when it takes the items) or a discrete event seals it; then the next item opens a new buffer.
    The bridge never touches a consumed buffer again, so the app may keep its items."""

    items: list[StreamItem] = field(default_factory=list)
    consumed: bool = False


class EngineMessage(Message):
    """Base class of every message the UI bridge posts."""


@dataclass
class TurnStarted(EngineMessage):
    user_text: str


@dataclass
class StreamBatch(EngineMessage):
    """Tokens and output lines in arrival order; the buffer may grow until the handler takes it."""

    buffer: StreamBuffer


@dataclass
class MessageEnded(EngineMessage):
    """The assistant finished one streamed message."""


@dataclass
class ToolsPrepared(EngineMessage):
    items: list[PreparedItem]


@dataclass
class ToolStarted(EngineMessage):
    item: PreparedItem


@dataclass
class ToolFinished(EngineMessage):
    call_id: str
    name: str
    result: ToolResult


@dataclass
class ToolProgress(EngineMessage):
    """A running call reported progress (MCP ``notifications/progress``): ``text`` such as ``40% step 2``."""

    call_id: str
    text: str


@dataclass
class ApprovalRequested(EngineMessage):
    """The engine awaits ``future`` for a decision on ``items``."""

    items: list[PreparedItem]
    future: asyncio.Future[ApprovalDecision]


@dataclass
class EscalationRequested(EngineMessage):
    """The engine awaits ``future``: may a call that failed in the sandbox run again outside it?"""

    request: EscalationRequest
    future: asyncio.Future[bool]


@dataclass
class PlanReviewRequested(EngineMessage):
    plan: str
    path: str
    future: asyncio.Future[PlanReview]
    version: int = 1


@dataclass
class QuestionWithdrawn(EngineMessage):
    """The engine stopped waiting (turn cancelled): close the screen that asked."""

    future: asyncio.Future[object]


@dataclass
class StateChanged(EngineMessage):
    state: SessionState


@dataclass
class StatusChanged(EngineMessage):
    status: StatusInfo


@dataclass
class InfoPosted(EngineMessage):
    text: str


@dataclass
class ErrorPosted(EngineMessage):
    text: str


@dataclass
class TurnEnded(EngineMessage):
    """The turn finished (answered, failed or cancelled)."""
