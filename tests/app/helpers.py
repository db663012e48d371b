"""Small waiting helpers for pilot tests (poll what the user would see, with a deadline)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual import events
from textual.pilot import Pilot

from tests.helpers.model_server import ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.widgets.chat_messages import AssistantMessage, ErrorMessage, InfoMessage


async def wait_until(
    pilot: Pilot, predicate: Callable[[], object], limit: float = 10.0, what: str = ""
) -> None:
    # Never less than 30 s: a test checks behaviour, not speed, and the machine may be loaded.
    deadline = time.monotonic() + max(limit, 30.0)
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.02)
    await pilot.pause()


async def start(pilot: Pilot) -> TurnstoneApp:
    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    await asyncio.wait_for(app.wait_ready(), 10)
    await pilot.pause()
    return app


async def send(pilot: Pilot, text: str, *, wait: bool = True) -> None:
    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    await pilot.click("#prompt")
    finished = app.turns_finished
    for char in text:
        await pilot.press("space" if char == " " else char)
    await pilot.press("enter")
    if wait:
        await wait_until(pilot, lambda: app.turns_finished > finished and not app.busy, 15, "the turn to end")


def answers(app: TurnstoneApp) -> list[str]:
    return [m.source for m in app.query(AssistantMessage) if not m.has_class("-info")]


def infos(app: TurnstoneApp) -> list[str]:
    return [m.text for m in app.query(InfoMessage)]


def errors(app: TurnstoneApp) -> list[str]:
    return [m.text for m in app.query(ErrorMessage)]


async def submit_now(pilot: Pilot, text: str) -> None:
    """Put ``text`` in the prompt and press enter (fast: for prompts sent while a turn runs)."""
    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")
    await pilot.pause()


async def start_four_floods(pilot: Pilot, model_server: ScriptedModelServer) -> Callable[[], list[int]]:
    """Four endless floods (``seq 1 inf``, calls flood_0..flood_3) approved together, each pane past
    10,000 lines; returns the panes' line counts, read afresh on each call."""
    from tests.helpers.model_server import Reply
    from turnstone_tui.app.screens.approval import ApprovalScreen
    from turnstone_tui.widgets.pane_grid import ParallelPanes

    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    call_ids = [f"flood_{n}" for n in range(4)]
    model_server.script(
        [Reply.tools([("bash", {"command": "seq 1 inf"}, c) for c in call_ids]), Reply.text("Stopped.")]
    )
    await start(pilot)
    await send(pilot, "flood", wait=False)
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval modal")
    await pilot.press("y")
    panes = app.query_one(ParallelPanes)

    def streamed() -> list[int]:
        return [(p.log_view.total_lines if (p := panes.pane(call_id)) else 0) for call_id in call_ids]

    await wait_until(pilot, lambda: min(streamed()) > 10_000, 30, "all four panes streaming")
    return streamed


async def press_together(pilot: Pilot, keys: list[tuple[str, str | None]]) -> None:
    """Post ``(key, character)`` pairs all at once, as a quick typist's keys reach a busy app (read
    together, before the first is handled; ``Pilot.press`` waits for each key's frame), then let
    them be handled."""
    for key, character in keys:
        pilot.app.post_message(events.Key(key, character))
    for _ in range(5):
        await pilot.pause()
