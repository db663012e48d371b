"""Small waiting helpers for pilot tests (poll what the user would see, with a deadline)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.pilot import Pilot

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
