"""The chat follows new output (issue 11 item 5): it stays at the bottom unless the user scrolled
up; while not following, a "new output ↓" marker says more arrived below (a click on it, or End,
goes down and follows again); coming back to the bottom follows again, however the user got there."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from tests.app.helpers import start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.widgets.chat_view import ChatView, NewOutputMarker

pytestmark = pytest.mark.timeout(90)


class ChatHarness(App[None]):
    def compose(self) -> ComposeResult:
        yield ChatView(id="chat")


def wheel(chat: ChatView, direction: str, notches: int) -> None:
    kind = events.MouseScrollUp if direction == "up" else events.MouseScrollDown
    for _ in range(notches):
        chat.post_message(kind(chat, 5, 5, 0, 0, 0, False, False, False, screen_x=5, screen_y=5))


def at_bottom(chat: ChatView) -> bool:
    return chat.max_scroll_y > 0 and chat.scroll_y >= chat.max_scroll_y


async def page_up_then_down_past_the_end(chat: ChatView, pilot: Pilot) -> None:
    chat.scroll_page_up(animate=False)
    await pilot.pause()
    chat.scroll_page_down(animate=False)
    await pilot.pause()
    chat.scroll_page_down(animate=False)  # one more than needed: the view stays at the bottom


async def keys_up_then_down_past_the_end(chat: ChatView, pilot: Pilot) -> None:
    chat.focus()
    await pilot.press("up", "up", "down", "down", "down")


async def wheel_up_then_back_down(chat: ChatView, pilot: Pilot) -> None:
    wheel(chat, "up", 3)
    await pilot.pause()
    wheel(chat, "down", 10)


@pytest.mark.parametrize(
    "move", [page_up_then_down_past_the_end, keys_up_then_down_past_the_end, wheel_up_then_back_down]
)
async def test_back_at_the_bottom_the_chat_follows_new_output(
    move: Callable[[ChatView, Pilot], Awaitable[None]],
) -> None:
    app = ChatHarness()
    async with app.run_test(size=(80, 20)) as pilot:
        chat = app.query_one(ChatView)
        for i in range(40):
            await chat.add_info(f"line {i}")
        await wait_until(pilot, lambda: at_bottom(chat), what="the bottom")
        await move(chat, pilot)
        await wait_until(pilot, lambda: at_bottom(chat), what="back at the bottom")
        for i in range(10):
            await chat.add_info(f"more {i}")
        await wait_until(pilot, lambda: chat.max_scroll_y >= 30, what="the new lines laid out")
        await pilot.pause(0.1)
        assert at_bottom(chat) and chat.following, (chat.scroll_y, chat.max_scroll_y)
        assert not chat.unseen_output


def marker(app: TurnstoneApp) -> NewOutputMarker:
    return app.screen.query_one(NewOutputMarker)


async def test_scrolled_up_new_output_shows_a_marker_that_end_and_a_click_follow(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    intro = "\n\n".join(f"Paragraph {i}." for i in range(40))
    model_server.script(
        [
            Reply.text(intro, chunk_size=200),
            Reply.text("\n\n".join(f"Streamed {i}." for i in range(3000)), chunk_size=40, delay=0.15),
        ]
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        chat = app.chat
        await pilot.click("#prompt")
        app.prompt.insert("a long answer please")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.busy and at_bottom(chat), 20, "the first answer")
        assert not marker(app).has_class("-shown")

        app.prompt.insert("and a slow one")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: "Streamed 3." in (chat.streaming.source if chat.streaming else ""), 20
        )
        await pilot.press("pageup")  # from the prompt: the chat scrolls up and stops following
        await wait_until(pilot, lambda: marker(app).has_class("-shown"), 20, "the new output marker")
        assert not at_bottom(chat) and not chat.following
        held = chat.scroll_y
        await pilot.pause(0.3)
        assert chat.scroll_y == held, "a scrolled-up chat must not move by itself"

        await pilot.press("end")  # the prompt is empty: End follows the chat again
        await wait_until(pilot, lambda: not marker(app).has_class("-shown") and chat.following, 10)
        grown = chat.max_scroll_y
        await wait_until(pilot, lambda: chat.max_scroll_y > grown + 5, 20, "more output")
        await wait_until(pilot, lambda: at_bottom(chat), 10, "following the new output")

        await pilot.press("pageup")
        await wait_until(pilot, lambda: marker(app).has_class("-shown"), 20, "the marker again")
        await pilot.click(NewOutputMarker)
        await wait_until(pilot, lambda: not marker(app).has_class("-shown") and chat.following, 10)
        grown = chat.max_scroll_y
        await wait_until(pilot, lambda: chat.max_scroll_y > grown + 5, 20, "more output")
        await wait_until(pilot, lambda: at_bottom(chat), 10, "following after the click")
        await pilot.press("escape")  # stop the stream
