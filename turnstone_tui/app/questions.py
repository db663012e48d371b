"""The question broker: the engine's questions (tool approval, plan review) as modal screens.

Each question arrives as a message carrying an ``asyncio.Future``; the broker opens the screen,
answers the future when the screen is dismissed (a dismissal without an answer is a "no"), closes
the screen if the engine withdraws the question, and keeps the status bar in "attention" (with a
bell and a pending count) while any question is open.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

from textual.screen import Screen

from ..core.types import ApprovalDecision, PlanReview, SessionState
from . import messages as m

if TYPE_CHECKING:
    from .app import TurnstoneApp

AnswerT = TypeVar("AnswerT")


class QuestionBroker:
    def __init__(self, app: TurnstoneApp) -> None:
        self._app = app
        self._open: dict[asyncio.Future[Any], Screen[Any]] = {}
        self._state_before_attention = SessionState.IDLE

    @property
    def open_count(self) -> int:
        return len(self._open)

    def ask_approval(self, message: m.ApprovalRequested) -> None:
        from .screens.approval import ApprovalScreen

        if message.future.done():
            return
        for item in message.items:
            card = self._app.chat.tool_card(item.call_id)
            if card is not None:
                card.mark_awaiting()
        session = self._app.session
        workspace = session.cwd if session is not None else None
        future = message.future

        def answer(decision: ApprovalDecision) -> None:
            if not future.done():
                future.set_result(decision)

        screen = ApprovalScreen(message.items, workspace, answer)
        self._ask(future, screen, len(message.items), ApprovalDecision(False))

    def ask_escalation(self, message: m.EscalationRequested) -> None:
        from .screens.escalation import EscalationScreen

        if message.future.done():
            return
        card = self._app.chat.tool_card(message.request.call_id)
        if card is not None:
            card.mark_awaiting()
            # answered: the card runs again (yes) or shows its result (no) in the same call
            message.future.add_done_callback(lambda _: card.mark_running())
        self._ask(message.future, EscalationScreen(message.request), 1, False)

    def ask_plan_review(self, message: m.PlanReviewRequested) -> None:
        from .screens.plan_review import PlanReviewScreen

        if message.future.done():
            return
        self._ask(
            message.future,
            PlanReviewScreen(message.plan, message.path, message.version),
            0,
            PlanReview("reject"),
        )

    def _ask(
        self, future: asyncio.Future[AnswerT], screen: Screen[AnswerT | None], count: int, refusal: AnswerT
    ) -> None:
        """Show ``screen``; its answer (``refusal`` when dismissed without one) settles ``future``."""
        self._raise_attention(count)

        def answered(answer: AnswerT | None) -> None:
            self._open.pop(future, None)
            self._lower_attention(count)
            if not future.done():
                future.set_result(answer if answer is not None else refusal)

        self._open[future] = screen
        self._app.push_screen(screen, answered)

    def withdraw(self, message: m.QuestionWithdrawn) -> None:
        """The engine stopped waiting (turn cancelled): close the screen that asked."""
        screen = self._open.pop(message.future, None)
        app = self._app
        if screen is None or screen not in app.screen_stack:
            return
        while not screen.is_current:  # close whatever was opened on top of the question first
            app.pop_screen()
        screen.dismiss(None)

    def state_changed(self, state: SessionState) -> None:
        """While a question is open the bar stays in attention and shows ``state`` afterwards."""
        self._app.status_bar.activity = ""  # a new phase: "thinking" until text streams again
        if self._open:
            self._state_before_attention = state
            return
        self._app.status_bar.state = state

    def _raise_attention(self, count: int) -> None:
        self._app.bell()
        bar = self._app.status_bar
        if bar.state is not SessionState.ATTENTION:
            self._state_before_attention = bar.state
        bar.state = SessionState.ATTENTION
        bar.pending += count

    def _lower_attention(self, count: int) -> None:
        bar = self._app.status_bar
        bar.pending = max(0, bar.pending - count)
        if not self._open and bar.state is SessionState.ATTENTION:
            bar.state = self._state_before_attention
