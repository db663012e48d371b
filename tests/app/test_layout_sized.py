"""A streamed answer that grows is laid out once per change, not twice (widgets/layout_sized.py)."""

from __future__ import annotations

from typing import Any

from tests.app.helpers import wait_until
from tests.app.test_markdown_chunks import ChatApp, screen_lines
from turnstone_tui.widgets.chat_view import ChatView


async def test_an_append_that_grows_the_answer_lays_the_screen_out_once() -> None:
    """Textual's ``virtual_size`` is a layout reactive: the layout that gave the growing block, its
    Markdown, the answer and the chat their new sizes asked for a second layout of the whole
    screen, which found everything where it was (while an answer streamed, one frame in three).
    The chat still follows the end, in that same layout."""
    app = ChatApp()
    async with app.run_test(size=(60, 12)) as pilot:
        chat = app.query_one(ChatView)
        await chat.append_content("".join(f"Paragraph {n} of the answer.\n\n" for n in range(12)))
        await wait_until(pilot, lambda: any("Paragraph 11" in line for line in screen_lines(app)))
        for _ in range(5):
            await pilot.pause()
        screen = app.screen
        layouts = 0
        real = screen._refresh_layout

        def counted(*args: Any, **kwargs: Any) -> None:
            nonlocal layouts
            layouts += 1
            real(*args, **kwargs)

        screen._refresh_layout = counted  # type: ignore[method-assign]
        appends = 4
        for n in range(appends):
            await chat.append_content(
                f"More words, part {n} of the last paragraph, enough to wrap: word{n}x "
            )
            await wait_until(pilot, lambda n=n: any(f"word{n}x" in line for line in screen_lines(app)))
            for _ in range(5):
                await pilot.pause()
        # Twice as many before; one more allowed for anything else that asks (a scroll bar restyled).
        assert layouts <= appends + 1
        assert chat.scroll_y == chat.max_scroll_y > 0  # (it followed the end)
