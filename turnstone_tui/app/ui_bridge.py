"""The Textual app's implementation of the engine's ``SessionUI`` protocol.

Every callback becomes a Textual message posted to the app. Callbacks are cheap: streaming
tokens and output lines are appended to the currently open :class:`StreamBatch` (one message per
burst); any other event seals the batch so the app sees everything in the engine's order.
Questions (approval, plan review) post a message carrying an ``asyncio.Future`` and await it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TypeVar

from textual.message import Message
from textual.message_pump import MessagePump

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
from . import messages as m

T = TypeVar("T")
# Marks a notify tool message in the chat.
BELL = "🔔"


class TextualSessionUI:
    """Posts engine events to ``target`` (the app) as messages from :mod:`.messages`."""

    def __init__(self, target: MessagePump) -> None:
        self._target = target
        self._batch: m.StreamBuffer | None = None
        self._run: m.OutputLines | None = None  # the open batch's last item, if it is output lines
        self._thread_id = threading.get_ident()
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember the app's loop so callbacks from other threads are marshalled onto it."""
        self._loop = loop
        self._thread_id = threading.get_ident()

    # --- plumbing ---------------------------------------------------------------------------

    def _post(self, message: Message) -> None:
        self._batch = None  # seal: later stream items start a new batch after this event
        self._run = None
        self._call(self._target.post_message, message)

    def _call(self, fn, *args) -> None:  # type: ignore[no-untyped-def]
        if self._loop is not None and threading.get_ident() != self._thread_id:
            self._loop.call_soon_threadsafe(fn, *args)
        else:
            fn(*args)

    def _stream(self, item_kind: str, text: str) -> None:
        if self._loop is not None and threading.get_ident() != self._thread_id:
            self._loop.call_soon_threadsafe(self._stream, item_kind, text)
            return
        batch = self._open_batch()
        self._run = None
        last = batch[-1] if batch else None
        if isinstance(last, m.TextPiece) and last.kind == item_kind:
            last.parts.append(text)
        else:
            batch.append(m.TextPiece(item_kind, [text]))  # type: ignore[arg-type]

    def _open_batch(self) -> list[m.StreamItem]:
        batch = self._batch
        if batch is None or batch.consumed:
            batch = self._batch = m.StreamBuffer()
            self._target.post_message(m.StreamBatch(batch))
        return batch.items

    async def _ask(self, make_message, future: asyncio.Future[T]) -> T:  # type: ignore[no-untyped-def]
        self._post(make_message(future))
        try:
            # Awaited directly (a cancelled turn cancels it, as below): through asyncio.shield the
            # answer reached the engine two loop turns later, after whatever frame was due.
            return await future
        except asyncio.CancelledError:
            if not future.done():
                future.cancel()
            self._post(m.QuestionWithdrawn(future))  # type: ignore[arg-type]
            raise

    # --- SessionUI: model output ------------------------------------------------------------

    def on_turn_start(self, user_text: str) -> None:
        self._post(m.TurnStarted(user_text))

    def on_content_token(self, text: str) -> None:
        if text:
            self._stream("content", text)

    def on_reasoning_token(self, text: str) -> None:
        if text:
            self._stream("reasoning", text)

    def on_message_end(self) -> None:
        self._post(m.MessageEnded())

    # --- SessionUI: tools -------------------------------------------------------------------

    def on_tools_prepared(self, items: list[PreparedItem]) -> None:
        self._post(m.ToolsPrepared(list(items)))

    async def approve_tools(self, items: list[PreparedItem]) -> ApprovalDecision:
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        return await self._ask(lambda f: m.ApprovalRequested(list(items), f), future)

    async def confirm_unsandboxed(self, request: EscalationRequest) -> bool:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        return await self._ask(lambda f: m.EscalationRequested(request, f), future)

    def on_tool_start(self, item: PreparedItem) -> None:
        self._post(m.ToolStarted(item))

    def on_tool_output(self, call_id: str, lines: list[str], stream: OutputStream) -> None:
        # Called for every chunk of output read (a flood is thousands a second): the common case
        # is one extend of the open run of lines for the same call and stream.
        if self._loop is not None and threading.get_ident() != self._thread_id:
            self._loop.call_soon_threadsafe(self.on_tool_output, call_id, lines, stream)
            return
        run, batch = self._run, self._batch
        if run is not None and batch is not None and not batch.consumed and run.call_id == call_id:
            if run.stream == stream:
                run.lines.extend(lines)
                return
        items = self._open_batch()
        self._run = run = m.OutputLines(call_id, stream, list(lines))
        items.append(run)

    def on_tool_progress(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        """A running MCP tool reported progress (optional: executors look for this method)."""
        if total is not None and total > 0:
            amount = f"{max(0.0, min(1.0, progress / total)):.0%}"
        else:
            amount = f"{progress:g}"
        self._post(m.ToolProgress(call_id, f"{amount} {message or ''}".rstrip()))

    def on_tool_result(self, call_id: str, name: str, result: ToolResult) -> None:
        self._post(m.ToolFinished(call_id, name, result))

    async def review_plan(self, plan: str, path: str, version: int = 1) -> PlanReview:
        future: asyncio.Future[PlanReview] = asyncio.get_running_loop().create_future()
        return await self._ask(lambda f: m.PlanReviewRequested(plan, path, f, version), future)

    # --- SessionUI: session -----------------------------------------------------------------

    def on_state(self, state: SessionState) -> None:
        self._post(m.StateChanged(state))

    def on_status(self, status: StatusInfo) -> None:
        self._post(m.StatusChanged(status))

    def on_info(self, message: str) -> None:
        self._post(m.InfoPosted(message))

    def on_notification(self, text: str) -> None:
        self._post(m.InfoPosted(f"{BELL} {text}"))

    def on_error(self, message: str) -> None:
        self._post(m.ErrorPosted(message))

    def on_turn_end(self) -> None:
        self._post(m.TurnEnded())
