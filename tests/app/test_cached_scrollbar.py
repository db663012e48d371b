"""The chat's vertical scroll bar reuses the lines of a bar it has drawn before (a streaming answer
changes its virtual size and position every frame, mostly without changing how it looks), and
always draws exactly what Textual's own scroll bar draws."""

from __future__ import annotations

from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.widget import Widget

from tests.app.test_markdown_chunks import ChatApp, add_whole, long_answer
from turnstone_tui.widgets.cached_scrollbar import CachedScrollBar
from turnstone_tui.widgets.chat_view import ChatView


def textual_lines(bar: ScrollBar) -> list:  # type: ignore[type-arg]
    bar._styles_cache.clear()
    return Widget.render_lines(bar, Region(0, 0, *bar.size))


async def test_the_chat_scroll_bar_draws_what_textual_draws_and_reuses_a_drawn_bar() -> None:
    app = ChatApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.query_one(ChatView)
        await add_whole(pilot, chat, long_answer(6), one_document=False)
        chat.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        bar = chat.vertical_scrollbar
        assert isinstance(bar, CachedScrollBar) and bar.display and bar.size.height > 5
        full = Region(0, 0, *bar.size)

        def check() -> None:
            assert bar.render_lines(full) == textual_lines(bar)

        check()
        renders: list[int] = []
        render_widget = bar._styles_cache.render_widget
        bar._styles_cache.render_widget = lambda widget, crop: (
            renders.append(1) or render_widget(widget, crop)
        )  # type: ignore[method-assign]
        # The same bar again (e.g. a frame where the thumb moved less than an eighth of a cell): reused.
        bar.render_lines(full)
        assert renders == []
        for y in (0, chat.max_scroll_y // 3, chat.max_scroll_y // 2):  # the thumb elsewhere: drawn anew
            before = len(renders)
            chat.scroll_to(y=y, animate=False, immediate=True)
            await pilot.pause()
            ours = bar.render_lines(full)
            assert len(renders) > before  # (by the frame after the scroll, or just now)
            assert ours == textual_lines(bar)
        bar.mouse_over = True  # the hover colours
        await pilot.pause()
        check()
        bar.mouse_over = False
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"  # other colours
        await pilot.pause()
        check()
        assert bar.render_lines(Region(0, 2, 1, 3)) == textual_lines(bar)[2:5]
