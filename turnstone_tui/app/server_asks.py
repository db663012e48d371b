"""The Textual app's answers to what MCP servers ask: modal screens, one future per question.

The MCP manager awaits these on the app's event loop. Each question pushes its screen with a
dismiss callback that resolves a future; if the server gives up (the request is cancelled), the
screen is taken down again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

from textual.screen import Screen

from ..mcp.asks import ElicitationAnswer, ElicitationRequest, SampleResult, SamplingRequest

if TYPE_CHECKING:
    from textual.app import App

T = TypeVar("T")


class AppServerAsks:
    def __init__(self, app: App[Any], model_name: Any = None) -> None:
        self._app = app
        self._model_name = model_name  # () -> str: the model sampling would run on

    async def _ask(self, screen: Screen[T], default: T) -> T:
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def answered(value: T | None) -> None:
            if not future.done():
                future.set_result(default if value is None else value)

        # MCP callbacks run in the manager's tasks, outside the app's context: hand the screen to
        # the app's own message loop.
        self._app.call_later(self._app.push_screen, screen, answered)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self._app.call_later(self._withdraw, screen)
            raise

    def _withdraw(self, screen: Screen[Any]) -> None:
        """The server gave up on its question: take the screen (and anything above it) down."""
        app = self._app
        if screen not in app.screen_stack:
            return
        while app.screen is not screen:
            app.pop_screen()
        screen.dismiss(None)

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        from .screens.elicitation import ElicitationScreen

        return await self._ask(ElicitationScreen(request), ElicitationAnswer("cancel"))

    async def approve_sampling(self, request: SamplingRequest) -> bool:
        from .screens.sampling import SamplingApprovalScreen

        model = self._model_name() if callable(self._model_name) else ""
        return await self._ask(SamplingApprovalScreen(request, model), False)

    async def review_sample(self, request: SamplingRequest, result: SampleResult) -> str | None:
        from .screens.sampling import SampleReviewScreen

        future_default: str | None = None
        return await self._ask(SampleReviewScreen(request, result), future_default)


def server_errors_as_toasts(app: App[Any]) -> Any:
    """A manager listener: a server's error-level log message pops up as a toast."""
    from ..mcp.client_side import ERROR_LEVELS

    def on_event(event: Any) -> None:
        entry = getattr(event, "log", None)
        if event.kind == "log" and entry is not None and entry.level in ERROR_LEVELS:
            text = " ".join(entry.text.split())[:300]
            app.call_later(app.notify, text, title=f"MCP {event.server}: {entry.level}", severity="error")

    return on_event
