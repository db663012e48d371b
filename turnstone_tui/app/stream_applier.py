"""The stream applier: engine messages onto the main screen, in the engine's order, in time slices.

Streamed items (answer and reasoning text, tool output lines) arrive in batches and are applied for
about ``STREAM_SLICE_SECONDS`` at a time; the rest is applied by a continuation queued behind the
events waiting now, so key presses stay responsive while panes stream. A discrete event (a tool
started, a question, the turn ended) that arrives while streamed items are still waiting is queued
behind them, so the screen always shows things in the order the engine did them; a slice that
reaches such events applies them all (they are few, and each deferred cost a frame of its own).

A finished tool call is shown with the next thing the chat shows, or ``FINISH_HOLD_SECONDS`` after
it finished, whichever comes first: its card's new status and preview and its pane leaving the grid
are a restyle and a full layout of the screen (tens of ms on a busy machine), and drawn at once they
held the loop while the rest of the batch ended (their ends were read a frame late) and while the
model's answer to the batch was on its way (the request went out behind them, and the reply was
read behind their frame). Held, the calls of a batch finishing together are drawn in one frame, the
one that shows the model's answer when it comes within the hold. Only the status bar's figures
pass a held result; anything the chat shows comes after it. The session's state (running ->
thinking as the batch ends) waits with the held results: its label changes width, a full layout
drawn, at the moment the request for the answer is out (its reply read behind that frame).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..core.outcomes import cancelled_result
from ..widgets import clock
from . import messages as m

if TYPE_CHECKING:
    from .app import TurnstoneApp
    from .questions import QuestionBroker

STREAM_SLICE_SECONDS = 0.005
"""How long one turn of applying streamed items may take before key presses and other events get
a turn (the rest is applied by a continuation queued behind them)."""

FINISH_HOLD_SECONDS = 0.1
"""How long a finished call's card and pane may wait for the next thing the chat shows (see above)."""

Deferred = Callable[[], Awaitable[None] | None]
STREAMED = (m.OutputLines, m.TextPiece)


def _command_of(item: Any) -> str:
    args = getattr(item, "args", None)
    if isinstance(args, dict) and isinstance(args.get("command"), str):
        return args["command"]
    return getattr(item, "header", "")


class StreamApplier:
    def __init__(self, app: TurnstoneApp, questions: QuestionBroker) -> None:
        self._app = app
        # Streamed items (and discrete events that arrived behind them) not applied yet, in order.
        self._backlog: deque[m.StreamItem | Deferred] = deque()
        self._slice_queued = False
        self._engine_turn = False  # the running turn was started by the engine (a watch result)
        self._finished: list[m.ToolFinished] = []  # results held for the next change (FINISH_HOLD_SECONDS)
        self._held_states: list[m.StateChanged] = []  # state changes that came while results were held
        self._finish_timer: Any = None
        self.last_batch_at = 0.0
        """``time.monotonic()`` of the last streamed batch (the GC pacer's "quiet" signal)."""
        self._handlers: dict[type[m.EngineMessage], Callable[[Any], Awaitable[None] | None]] = {
            m.TurnStarted: self._turn_started,
            m.MessageEnded: self._message_ended,
            m.ToolsPrepared: self._tools_prepared,
            m.ToolStarted: self._tool_started,
            m.ToolFinished: self._tool_finished,
            m.ToolProgress: self._tool_progress,
            m.InfoPosted: self._info_posted,
            m.ErrorPosted: self._error_posted,
            m.StatusChanged: self._status_changed,
            m.TurnEnded: self._turn_ended,
            m.StateChanged: lambda message: questions.state_changed(message.state),
            m.ApprovalRequested: questions.ask_approval,
            m.PlanReviewRequested: questions.ask_plan_review,
            m.EscalationRequested: questions.ask_escalation,
            m.QuestionWithdrawn: questions.withdraw,
        }
        # Events that may pass a held result: they change the status bar's figures, not the chat.
        self._passing = (self._tool_finished, self._status_changed)
        self._state_changed = self._handlers[m.StateChanged]

    @property
    def caught_up(self) -> bool:
        """Everything received so far is on the screen."""
        return not self._backlog and not self._finished

    async def receive(self, message: m.EngineMessage) -> None:
        if isinstance(message, m.StreamBatch):
            self.last_batch_at = time.monotonic()
            buffer = message.buffer
            if not buffer.consumed:
                buffer.consumed = True  # the bridge puts later items into a new batch (a new message)
                self._backlog.extend(buffer.items)
            await self._apply()
            return
        handler = self._handlers[type(message)]
        if self._backlog:
            self._backlog.append(functools.partial(handler, message))
            self._schedule_slice()
            return
        if self._finished and handler is self._state_changed:
            self._held_states.append(message)  # shown with the held results
            return
        if self._finished and handler not in self._passing:
            self.show_finished()
        result = handler(message)
        if inspect.isawaitable(result):
            await result

    # --- applying the backlog in slices -----------------------------------------------------

    def _schedule_slice(self) -> None:
        if not self._slice_queued:
            self._slice_queued = True
            self._app.call_later(self._continue)

    async def _continue(self) -> None:
        self._slice_queued = False
        await self._apply()

    async def _apply(self) -> None:
        """Apply backlog items in order: streamed items for about ``STREAM_SLICE_SECONDS``, the
        discrete events among them as they come; queue the rest."""
        backlog = self._backlog
        chat = self._app.chat
        deadline = time.perf_counter() + STREAM_SLICE_SECONDS
        while backlog:
            item = backlog.popleft()
            if isinstance(item, m.OutputLines):
                self._write_output(item)
            elif isinstance(item, m.TextPiece):
                if self._finished:  # (in the frame that shows these words, not one of their own)
                    self.show_finished()
                self._app.status_bar.activity = "writing" if item.kind == "content" else ""
                if item.kind == "content":
                    await chat.append_content(item.text)
                else:
                    await chat.append_reasoning(item.text)
            else:  # a discrete event that arrived behind streamed items
                func = getattr(item, "func", None)
                if self._finished and func is self._state_changed:
                    self._held_states.append(item.args[0])  # type: ignore[union-attr]
                    continue
                if self._finished and func not in self._passing:
                    self.show_finished()
                result = item()
                if inspect.isawaitable(result):
                    await result
            # Only streamed items wait for the next slice: discrete events (a tool finished, a
            # message ended) are few and must be applied anyway, and each one deferred cost a
            # frame of its own (four results finishing together were drawn in four frames, each
            # a repaint of the screen, before the answer behind them).
            if backlog and isinstance(backlog[0], STREAMED) and time.perf_counter() > deadline:
                self._schedule_slice()
                return

    def _write_output(self, item: m.OutputLines) -> None:
        """Hand ``item``'s lines to its pane (queued there for the next frame: no per-line work)."""
        panes = self._app.panes
        call_id = item.call_id
        if call_id not in panes:
            card = self._app.chat.tool_card(call_id)
            panes.start(call_id, _command_of(card.item) if card else call_id)
        panes.write_lines(call_id, item.lines, item.stream)

    # --- discrete events --------------------------------------------------------------------

    async def _turn_started(self, message: m.TurnStarted) -> None:
        app = self._app
        await app.chat.add_user(message.user_text)
        if not app.busy:  # a watch result started this turn (the app did not)
            app.busy = True
            app.status_bar.busy_since = clock.now()
            self._engine_turn = True

    async def _message_ended(self, message: m.MessageEnded) -> None:
        await self._app.chat.end_message()

    async def _tools_prepared(self, message: m.ToolsPrepared) -> None:
        await self._app.chat.add_tool_cards(message.items)

    def _tool_started(self, message: m.ToolStarted) -> None:
        item = message.item
        card = self._app.chat.tool_card(item.call_id)
        if card is not None:
            card.mark_running()
        if item.func_name == "bash":
            self._app.panes.start(item.call_id, _command_of(item))

    def _tool_progress(self, message: m.ToolProgress) -> None:
        card = self._app.chat.tool_card(message.call_id)
        if card is not None:
            card.set_progress(message.text)

    def _tool_finished(self, message: m.ToolFinished) -> None:
        """Held until the next thing the chat shows, or ``FINISH_HOLD_SECONDS`` (see the module);
        the call's last output lines wait with it."""
        self._finished.append(message)
        panes = self._app.main.mounted_panes
        if panes is not None:
            panes.ended(message.call_id)
        if self._finish_timer is None:
            self._finish_timer = self._app.set_timer(FINISH_HOLD_SECONDS, self.show_finished, name="finished")

    def show_finished(self) -> None:
        """Show every held result now (their cards and panes, in the order they finished), then the
        state changes that waited with them."""
        if self._finish_timer is not None:
            self._finish_timer.stop()
            self._finish_timer = None
        held, self._finished = self._finished, []
        states, self._held_states = self._held_states, []
        for message in held:
            self._show_result(message)
        for state in states:
            self._state_changed(state)

    def _show_result(self, message: m.ToolFinished) -> None:
        panes = self._app.main.mounted_panes
        lines: list[str] | None = None
        if panes is not None and message.call_id in panes.call_ids:
            lines = panes.finish(message.call_id, message.result)
        card = self._app.chat.tool_card(message.call_id)
        if card is not None:
            card.set_result(message.result, lines)

    async def _info_posted(self, message: m.InfoPosted) -> None:
        await self._app.chat.add_info(message.text)

    async def _error_posted(self, message: m.ErrorPosted) -> None:
        await self._app.chat.add_error(message.text)

    def _status_changed(self, message: m.StatusChanged) -> None:
        self._app.status_bar.status = message.status

    async def _turn_ended(self, message: m.TurnEnded) -> None:
        app = self._app
        if self._engine_turn:  # a watch's turn ended: idle again, and type-ahead may go
            self._engine_turn = False
            app.busy = False
            app.status_bar.busy_since = None
            app.call_later(app.send_queued)
        chat, panes = self._app.chat, self._app.main.mounted_panes
        await chat.end_message()
        # Anything still shown as running was cut off (cancel): collapse its pane into the card.
        for call_id in panes.call_ids if panes is not None else ():
            lines = panes.finish(call_id, cancelled_result())
            card = chat.tool_card(call_id)
            if card is not None and card.status in ("pending", "awaiting", "running"):
                card.set_result(cancelled_result(), lines)
        # Cards that never ran (the turn was cancelled before their approval / start) say so.
        for card in chat.tool_cards():
            if card.status in ("pending", "awaiting", "running"):
                card.mark_cancelled()
