"""Long answers as Markdown chunks: cutting, streaming, virtualising, following the stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.geometry import Region, Size
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from tests.app.helpers import wait_until
from turnstone_tui.core.resources import styles_dir
from turnstone_tui.widgets.chat_messages import AssistantMessage
from turnstone_tui.widgets.chat_view import ChatView
from turnstone_tui.widgets.markdown_chunks import (
    BlockIndex,
    MarkdownChunk,
    _top_level_blocks,
    split_for_new_chunk,
    split_markdown,
)

MIXED = """# Title

Intro paragraph with **bold** and `code`.

### Small heading
text right under it
- a
- b

1. one
2. two
```python
def f(x):
    return x
```
> a quote
lazy continuation

| a | b |
|---|---|
| 1 | 2 |

---

## Second section

    indented code

Closing paragraph.
"""


def long_answer(sections: int) -> str:
    parts = [MIXED]
    for n in range(sections):
        parts.append(
            f"## Part {n}\n\nParagraph {n} explains the step in a sentence that is long enough to wrap "
            "on a narrow terminal, so heights are not all one line.\n\n"
            f"- point {n}.1\n- point {n}.2\n  - nested\n\n"
            f"```\ncode {n}\n```\n\n> note {n}\n\n"
        )
    return "".join(parts) + "The end.\n"


class ChatApp(App[None]):
    CSS_PATH = [styles_dir() / "app.tcss", styles_dir() / "main.tcss"]

    def compose(self) -> ComposeResult:
        yield ChatView(id="chat")


def screen_lines(app: App[None]) -> list[str]:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


# --- cutting ------------------------------------------------------------------------------------


def test_split_markdown_joins_back_and_cuts_only_before_blocks_without_top_margin() -> None:
    source = long_answer(12)
    pieces = split_markdown(source, 5)
    assert len(pieces) > 3
    assert "".join(pieces) == source
    for piece in pieces[1:]:
        first = piece.lstrip("\n").splitlines()[0]
        # paragraphs and lists start chunks; headings, fences and quotes (top margins) never do
        assert not first.startswith(("#", "```", ">", "    ")), first


def test_split_markdown_keeps_a_short_document_whole() -> None:
    assert split_markdown(MIXED, 100) == [MIXED]


def test_split_for_new_chunk_starts_the_next_chunk_at_the_last_new_block() -> None:
    source = "First paragraph.\n\nSecond paragraph, still being"
    text = " written.\n\nThird paragraph.\n\n- a list\n\n``"
    assert split_for_new_chunk(source, text, 10) is None  # not full yet
    head, tail = split_for_new_chunk(source, text, 2)  # type: ignore[misc]
    assert source + head + tail == source + text
    # Not before "``": the block being written may still turn into a fence (which has a margin).
    assert tail == "- a list\n\n``"
    assert head == " written.\n\nThird paragraph.\n\n"


def test_split_for_new_chunk_declines_when_no_block_starts_in_the_new_text() -> None:
    assert split_for_new_chunk("A paragraph that", " goes on and on", 0) is None
    # "`" began the line in the chunk (part of the paragraph there); "``" makes it a fence start:
    # the chunk already shows that line, so it cannot be moved to a new chunk.
    assert split_for_new_chunk("para\n`", "``\ncode\n", 0) is None


# --- streaming and rendering --------------------------------------------------------------------


async def stream_into(chat: ChatView, source: str, piece: int = 37) -> AssistantMessage:
    for start in range(0, len(source), piece):
        await chat.append_content(source[start : start + piece])
        await asyncio.sleep(0.002)
    message = chat.streaming
    assert message is not None
    await chat.end_message()
    return message


async def settle(pilot, message: AssistantMessage) -> None:  # type: ignore[no-untyped-def]
    await wait_until(pilot, lambda: message.settled and all(chunk.frozen for chunk in message.chunks), 30)
    await pilot.pause()


@contextlib.asynccontextmanager
async def settled_long_answer(
    sections: int, size: tuple[int, int] = (80, 24), piece: int = 200
) -> AsyncIterator[tuple[ChatApp, Pilot[None], ChatView, AssistantMessage]]:
    """A long answer streamed into a chat and settled (every chunk frozen)."""
    app = ChatApp()
    async with app.run_test(size=size) as pilot:
        chat = app.query_one(ChatView)
        message = await stream_into(chat, long_answer(sections), piece=piece)
        await settle(pilot, message)
        yield app, pilot, chat, message


async def mounted_live_chunk(pilot, app: ChatApp) -> MarkdownChunk:  # type: ignore[no-untyped-def]
    """A live chunk mounted in the chat, its Markdown ready for text."""
    chunk = MarkdownChunk(first=True, live=True)
    await app.query_one(ChatView).mount(chunk)
    await wait_until(pilot, lambda: not chunk.busy, 30)
    return chunk


def beginning_shown(app: ChatApp, message: AssistantMessage) -> bool:
    return not message.chunks[0].virtualised and any("Title" in line for line in screen_lines(app))


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AssistantMessage, "blocks_per_chunk", 3)


async def add_whole(pilot, chat: ChatView, source: str, *, one_document: bool) -> AssistantMessage:  # type: ignore[no-untyped-def]
    """A finished answer; ``one_document``: in a single chunk, as Textual renders a document."""
    message = AssistantMessage(source, finished=True)
    if one_document:
        message.blocks_per_chunk = 10_000
    await chat.add(message)
    await settle(pilot, message)
    assert (len(message.chunks) == 1) == one_document
    return message


async def test_a_streamed_answer_in_chunks_looks_the_same_as_one_document(small_chunks: None) -> None:
    source = long_answer(4)
    whole_app, chunked_app = ChatApp(), ChatApp()
    async with whole_app.run_test(size=(90, 400)) as pilot:
        await add_whole(pilot, whole_app.query_one(ChatView), source, one_document=True)
        expected = screen_lines(whole_app)
    async with chunked_app.run_test(size=(90, 400)) as pilot:
        chat = chunked_app.query_one(ChatView)
        message = await stream_into(chat, source)
        await settle(pilot, message)
        # How many chunks depends on how the stream batched into flushes (fewer on a slow machine):
        # the answer was cut at least once, and the screen must not show where.
        assert len(message.chunks) > 1
        assert message.rendered_source == source
        # Settled chunks get a fixed height (so they are not measured again on every frame):
        # the pinned heights must be exactly what the chunks measure.
        await wait_until(pilot, lambda: all(chunk.pin_verified for chunk in message.chunks), 30)
        assert all(chunk.pin_verified for chunk in message.chunks)
        assert screen_lines(chunked_app) == expected


async def test_a_pinned_chunk_whose_markdown_grows_later_is_measured_again(small_chunks: None) -> None:
    """A chunk's height is pinned once it settles; if a block of it still grows afterwards (under
    load a list can finish composing late), the chunk must follow instead of clipping its end."""
    app = ChatApp()
    async with app.run_test(size=(90, 400)) as pilot:
        chat = app.query_one(ChatView)
        message = await stream_into(chat, long_answer(4))
        await settle(pilot, message)
        await wait_until(pilot, lambda: all(chunk.pin_verified for chunk in message.chunks), 30)
        chunk = message.chunks[1]
        assert chunk.pin_verified
        pinned = chunk.size.height
        await chunk.markdown.mount(Static("A BLOCK THAT ARRIVED LATE"))
        await wait_until(pilot, lambda: chunk.size.height == pinned + 1, 30)
        assert chunk.size.height == chunk.markdown.outer_size.height == pinned + 1
        assert any("A BLOCK THAT ARRIVED LATE" in line for line in screen_lines(app))
        assert any("The end." in line for line in screen_lines(app))


async def test_a_chunk_is_measured_without_the_height_of_the_answer_around_it(small_chunks: None) -> None:
    """Textual measures a container whose children all have an auto height by laying it out at
    its parent's height, which is part of its layout cache's key: the answer around a chunk grows
    with every streamed update, so every chunk not yet pinned was laid out again, block by block,
    on every frame. A chunk's height does not depend on it: it is measured at height 0, once."""
    app = ChatApp()
    async with app.run_test(size=(90, 400)) as pilot:
        chat = app.query_one(ChatView)
        message = await stream_into(chat, long_answer(4))
        await settle(pilot, message)
        chunk = message.chunks[1]
        chunk.unpin()
        await pilot.pause()
        width = chunk.size.width
        laid_out: list[Size] = []
        real_arrange = chunk.arrange

        def arrange(size: Size, optimal: bool = False):  # type: ignore[no-untyped-def]
            laid_out.append(size)
            return real_arrange(size, optimal)

        chunk.arrange = arrange  # type: ignore[method-assign]
        heights = {
            chunk.get_content_height(Size(width, answer_height), app.screen.size, width)
            for answer_height in (120, 121, 5000)
        }
        assert heights == {chunk.markdown.outer_size.height}
        assert set(laid_out) == {Size(width, 0)}


async def test_a_finished_answer_is_split_into_chunks_that_render_the_same(small_chunks: None) -> None:
    source = long_answer(4)
    app = ChatApp()
    async with app.run_test(size=(90, 400)) as pilot:
        chat = app.query_one(ChatView)
        message = await add_whole(pilot, chat, source, one_document=False)
        assert len(message.chunks) > 3
        assert "".join(chunk.source for chunk in message.chunks) == source
        chunked = screen_lines(app)
        await chat.clear_chat()
        await add_whole(pilot, chat, source, one_document=True)
        assert screen_lines(app) == chunked


# --- virtualising and following ----------------------------------------------------------------


async def test_an_answer_of_one_chunk_is_left_to_the_chat_not_virtualised() -> None:
    """Pinning a chunk's height and hiding it far from the view is for long answers (a column of
    chunks beside a streaming one). A short answer's only chunk is never pinned: each pin, check
    and hide costs the chat a layout, and a whole entry far from the view leaves the DOM anyway."""
    app = ChatApp()
    async with app.run_test(size=(80, 12)) as pilot:
        chat = app.query_one(ChatView)
        shorts = [
            await add_whole(pilot, chat, f"Answer {n}.\n\n- a point\n- another", one_document=True)
            for n in range(6)
        ]
        streamed = await stream_into(chat, "A streamed one.\n\nWith a second paragraph.")
        await settle(pilot, streamed)
        for _ in range(10):
            await pilot.pause(0.02)
        for message in [*shorts, streamed]:
            assert len(message.chunks) == 1 and message.chunks[0].frozen
            assert not message.chunks[0].pinned and not message.chunks[0].virtualised
        assert chat.virtualised_chunks == 0


async def test_a_long_answer_keeps_only_what_is_near_the_viewport_laid_out(small_chunks: None) -> None:
    async with settled_long_answer(60) as (app, pilot, chat, message):
        # The view followed the answer to its end.
        assert chat.is_anchored and chat.scroll_y == chat.max_scroll_y > 100
        assert any("The end." in line for line in screen_lines(app))
        # Far chunks are virtualised: the layout holds a few hundred widgets, not thousands.
        assert chat.virtualised_chunks > len(message.chunks) // 2
        laid_out = len(app.screen._compositor.full_map)
        in_dom = sum(1 for _ in message.walk_children())
        assert in_dom > 300 and laid_out * 5 < in_dom, (in_dom, laid_out)  # (~6 widgets a section)
        height = chat.virtual_size.height

        # Going to the top shows the beginning again, at the same place.
        chat.scroll_home(animate=False, immediate=True)
        await wait_until(pilot, lambda: beginning_shown(app, message), 30)
        assert not message.chunks[0].virtualised
        assert any("Title" in line for line in screen_lines(app))
        assert any("Intro paragraph with bold and code." in line for line in screen_lines(app))
        assert message.chunks[-1].virtualised
        assert chat.virtual_size.height == height


async def test_a_scroll_shows_the_chunks_it_brings_into_view_even_if_judged_before_the_screen_moved(
    small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chat decides which chunks to show after a refresh; on a loaded machine that callback can
    run before the screen has taken the new scroll position (Textual hands it over when the chat is
    next idle). Here the first one runs at once, as early as it can: Home must still show the
    beginning."""
    async with settled_long_answer(60) as (app, pilot, chat, message):
        # Every chunk settled: hidden, or shown with a verified height (no further check pending).
        await wait_until(
            pilot, lambda: all(chunk.virtualised or chunk.pin_verified for chunk in message.chunks)
        )
        for _ in range(5):
            await pilot.pause(0.02)
        assert message.chunks[0].virtualised
        real_call_after_refresh = chat.call_after_refresh
        early: list[object] = []

        def first_one_at_once(callback, *args, **kwargs) -> bool:  # noqa: ANN001
            if not early and callback == chat._virtualise:
                early.append(callback)
                callback(*args, **kwargs)
                return True
            return real_call_after_refresh(callback, *args, **kwargs)

        monkeypatch.setattr(chat, "call_after_refresh", first_one_at_once)
        chat.scroll_home(animate=False, immediate=True)
        assert early  # (the chat's own check ran before the screen moved)
        await wait_until(
            pilot, lambda: beginning_shown(app, message), 30, what="the beginning of the answer on screen"
        )


async def test_resizing_measures_chunks_again(small_chunks: None) -> None:
    async with settled_long_answer(30, size=(100, 24), piece=300) as (app, pilot, chat, message):
        await pilot.resize_terminal(50, 24)

        def end_shown() -> bool:
            chat.scroll_end(animate=False, immediate=True)
            return any("The end." in line for line in screen_lines(app))

        # Narrower means taller, and the end is still reachable and shown.
        await wait_until(pilot, end_shown, 30)

        def top_shown() -> bool:
            chat.scroll_home(animate=False, immediate=True)
            lines = screen_lines(app)
            return any("Title" in line for line in lines) and all(len(line) <= 50 for line in lines)

        await wait_until(pilot, top_shown, 30)
        lines = screen_lines(app)
        assert any("Title" in line for line in lines)
        # Text wraps at the new width: no line is wider than the terminal.
        assert all(len(line) <= 50 for line in lines)


async def test_a_short_chat_reads_from_the_top() -> None:
    app = ChatApp()
    async with app.run_test(size=(60, 20)) as pilot:
        chat = app.query_one(ChatView)
        await chat.add_info("first line")
        await pilot.pause(0.05)
        assert "first line" in screen_lines(app)[1]
        assert not chat.is_anchored


async def test_frozen_chunks_report_to_the_chat(small_chunks: None) -> None:
    app = ChatApp()
    async with app.run_test(size=(60, 20)) as pilot:
        chat = app.query_one(ChatView)
        message = await stream_into(chat, long_answer(5))
        await settle(pilot, message)
        chunks = message.chunks
        assert all(isinstance(chunk, MarkdownChunk) and chunk.frozen for chunk in chunks)
        assert set(chat._frozen_chunks) == set(chunks)


async def test_a_new_answer_is_drawn_with_its_first_words_never_empty() -> None:
    """The answer's first words are rendered (their Markdown blocks mounted) before append_content
    returns, and no frame is drawn while the answer mounts: one drawn then showed an empty answer,
    and the words waited for it and the frame after (a timer handed them over later)."""
    app = ChatApp()
    async with app.run_test(size=(80, 20)) as pilot:
        chat = app.query_one(ChatView)
        screen = app.screen
        drawn_empty: list[bool] = []
        draw = screen._compositor_refresh

        def spy() -> None:
            answer = chat.streaming
            drawn_empty.append(answer is not None and not answer.rendered_source)
            draw()

        screen._compositor_refresh = spy  # type: ignore[method-assign]
        first = "The first words, with **bold** and a list:\n\n- one\n- two\n"
        await chat.append_content(first)
        answer = chat.streaming
        assert answer is not None
        assert answer.rendered_source == first
        markdown = answer.chunks[0].markdown
        assert len(markdown.children) == 2  # the paragraph and the list, mounted
        assert app._batch_count == 0  # frames are not held any longer
        await wait_until(pilot, lambda: any("The first words" in line for line in screen_lines(app)), 30)
        assert True not in drawn_empty
        await chat.append_content("- three\n")  # streaming goes on into the same list
        await chat.end_message()
        await wait_until(pilot, lambda: any("three" in line for line in screen_lines(app)), 30)
        assert answer.rendered_source == first + "- three\n"
        assert [line.strip() for line in screen_lines(app) if line.strip().startswith("•")] == [
            "• one",
            "• two",
            "• three",
        ]


async def test_the_first_words_of_an_answer_are_drawn_without_waiting_for_the_flush_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Text is handed to the Markdown at most every FLUSH_INTERVAL while an answer streams, but the
    first words went through that wait too: the answer box was drawn empty for a frame first."""
    from turnstone_tui.widgets import chat_messages

    monkeypatch.setattr(chat_messages, "FLUSH_INTERVAL", 3600.0)  # later pieces: not within this test
    app = ChatApp()
    async with app.run_test(size=(80, 20)) as pilot:
        chat = app.query_one(ChatView)
        await chat.append_content("The first words.")
        await wait_until(pilot, lambda: any("The first words." in line for line in screen_lines(app)), 30)
        await chat.append_content(" More words.")
        await pilot.pause(0.2)
        assert not any("More words." in line for line in screen_lines(app))  # still throttled
        await chat.end_message()
        await wait_until(
            pilot, lambda: any("The first words. More words." in line for line in screen_lines(app)), 30
        )


async def test_the_chat_and_answer_containers_render_their_blank_rows_once_and_the_same() -> None:
    """The chat, the answer, its chunk and its Markdown draw only their background behind their
    children: one row is rendered and repeated (Textual rendered every visible row, all again on
    each size change, i.e. every frame of a stream). The rows must be exactly Textual's own,
    padding rows (the chat's bottom padding) and a focused chat's tint included."""
    app = ChatApp()
    async with app.run_test(size=(90, 60)) as pilot:
        chat = app.query_one(ChatView)
        message = await add_whole(pilot, chat, long_answer(1), one_document=True)
        chat.focus()
        await pilot.pause()
        chunk = message.chunks[0]
        for widget in (chat, message, chunk, chunk.markdown):
            width, height = widget.region.size  # (render_lines' crop is in the region's coordinates)
            assert height > 10
            rendered: list[int] = []
            textual_render_line = widget.render_line
            widget.render_line = lambda y, render=textual_render_line, rendered=rendered: (  # type: ignore[method-assign]
                rendered.append(y) or render(y)
            )
            for crop in (
                Region(0, 0, width, height),
                Region(0, height - 6, width, 6),
                Region(3, 2, width - 6, height - 4),
            ):
                widget._styles_cache.clear()
                rendered.clear()
                ours = widget.render_lines(crop)
                assert len(rendered) <= 3, (type(widget).__name__, crop, rendered)
                widget._styles_cache.clear()
                assert ours == Widget.render_lines(widget, crop), (type(widget).__name__, crop)
            del widget.render_line


async def test_streaming_appends_reuse_one_markdown_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's Markdown builds a new MarkdownIt for every append unless given a factory: the
    chunks share one (its parse() keeps no state), and render the same."""
    import textual.widgets._markdown as textual_markdown

    built: list[object] = []

    class CountingMarkdownIt(textual_markdown.MarkdownIt):  # type: ignore[misc,name-defined]
        def __init__(self, *args: object, **kwargs: object) -> None:
            built.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(textual_markdown, "MarkdownIt", CountingMarkdownIt)
    app = ChatApp()
    async with app.run_test(size=(90, 200)) as pilot:
        chat = app.query_one(ChatView)
        message = await stream_into(chat, long_answer(2))
        await settle(pilot, message)
        assert message.rendered_source == long_answer(2)
        assert any("The end." in line for line in screen_lines(app))
    assert built == []


async def test_a_frame_is_drawn_between_two_appends_of_a_streaming_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An append mounts its blocks in a batch (no frame drawn until it ends). With text always
    waiting, Textual's stream started the next append as soon as one ended, before the frame the
    first asked for: the screen froze while the appends ran back to back. Now a frame comes between."""
    from textual.screen import Screen

    from turnstone_tui.widgets.answer_markdown import AnswerMarkdown

    log: list[str] = []
    append = AnswerMarkdown.append
    compositor_refresh = Screen._compositor_refresh

    def logged_append(self: AnswerMarkdown, markdown: str):  # type: ignore[no-untyped-def]
        log.append("append")
        return append(self, markdown)

    def logged_refresh(self: Screen) -> None:
        log.append("frame")
        compositor_refresh(self)

    monkeypatch.setattr(AnswerMarkdown, "append", logged_append)
    monkeypatch.setattr(Screen, "_compositor_refresh", logged_refresh)
    app = ChatApp()
    async with app.run_test(size=(90, 200)) as pilot:
        chunk = await mounted_live_chunk(pilot, app)
        log.clear()
        source = long_answer(3)
        for start in range(0, len(source), 20):
            await chunk.write(source[start : start + 20])
            await asyncio.sleep(0.002)  # (more text comes while each append mounts its blocks)
        await wait_until(pilot, lambda: chunk.rendered_source == source and not chunk.busy, 30)
        await pilot.pause()
        appends = [index for index, event in enumerate(log) if event == "append"]
        assert len(appends) >= 3
        back_to_back = [(a, b) for a, b in zip(appends, appends[1:], strict=False) if "frame" not in log[a:b]]
        assert back_to_back == [], log
        assert any("The end." in line for line in screen_lines(app))


async def test_an_answer_that_ends_shows_its_last_words_without_waiting_for_the_frame_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While an answer streams, each append waits for the frame that shows the one before it. The
    text that comes with the answer's end waited there too, then for its own frame: two frames
    before the last words were on screen. Now the chunk appends it as it retires. (The frame here
    never comes: the old code held the last words until its 30 s timeout.)"""
    from turnstone_tui.widgets.markdown_chunks import FramePacedStream

    async def frame_never_comes(self: FramePacedStream) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(FramePacedStream, "_drawn", frame_never_comes)
    app = ChatApp()
    async with app.run_test(size=(90, 60)) as pilot:
        chunk = await mounted_live_chunk(pilot, app)
        await chunk.write("# Title\n\nThe first words.\n\n")
        await wait_until(pilot, lambda: "first words" in chunk.rendered_source and not chunk.busy, 30)
        await chunk.write("- and the last\n- words\n")  # waits for the frame after the first append
        await asyncio.wait_for(chunk.retire(virtualise=False), 5)
        assert chunk.rendered_source == chunk.source
        await pilot.pause()
        assert any("words" in line and "first" not in line for line in screen_lines(app))


async def test_the_first_frame_after_an_answer_ends_shows_its_last_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The answer ends while an append is still mounting its blocks. Its last words wait for that
    append; between the two the screen drew a frame without them (15-25 ms on a busy machine), and
    they were drawn by the frame after. Now no frame is drawn until the last words are mounted."""
    from textual.screen import Screen

    from turnstone_tui.widgets.answer_markdown import AnswerMarkdown

    append = AnswerMarkdown.append
    compositor_refresh = Screen._compositor_refresh
    frames: list[bool] = []  # each frame drawn after the answer ended: were its last words on it?

    def slow_append(self: AnswerMarkdown, markdown: str):  # type: ignore[no-untyped-def]
        mounting = append(self, markdown)

        async def then_more() -> None:  # (the append is in flight a while after its batch closed)
            await mounting
            mounted.set()
            await asyncio.sleep(0.05)

        return then_more()

    def logged_refresh(self: Screen) -> None:
        compositor_refresh(self)
        if ended:
            frames.append(any("last words" in line for line in screen_lines(self.app)))

    ended = False
    mounted = asyncio.Event()
    monkeypatch.setattr(AnswerMarkdown, "append", slow_append)
    monkeypatch.setattr(Screen, "_compositor_refresh", logged_refresh)
    app = ChatApp()
    async with app.run_test(size=(90, 60)) as pilot:
        chat = app.query_one(ChatView)
        await chat.append_content("# Title\n\nThe first words.\n\n")
        message = chat.streaming
        assert message is not None
        await wait_until(pilot, lambda: message.settled, 30)
        mounted.clear()
        await chat.append_content("A paragraph in the middle.\n\n")
        await asyncio.wait_for(mounted.wait(), 30)  # (its append is still in flight)
        await chat.append_content("- and the\n- last words\n")
        ended = True
        await chat.end_message()
        await wait_until(pilot, lambda: bool(frames), 30)
        assert frames[0], frames


HEADED = "## Plan\n\nThe failing test comes from a naive datetime.\n\n- one\n- two\n"


@pytest.mark.parametrize(
    "pieces",
    [
        # The heading alone as the answer's first words (rendered at once), then everything else in
        # one piece and the answer ends: the stream's append that replaces the heading (Textual
        # rebuilds the last block on every append) was still mounting when the answer finished,
        # after its last fix-up of the margin, so the answer kept two blank rows for good.
        ["## Plan", HEADED[7:]],
        ["## Pl", "an", HEADED[7:]],
        ["## Plan\n\nThe", HEADED[12:]],
        [HEADED],
        [],  # a finished answer (a resumed session)
    ],
    ids=["heading-alone-then-the-rest", "heading-in-pieces", "heading-and-a-word", "one-piece", "finished"],
)
async def test_an_answer_that_opens_with_a_heading_has_no_blank_rows_above_it(pieces: list[str]) -> None:
    """The chat spaces its entries, so an answer's leading heading drops its top margin (two
    rows for ``##``), however the text arrived and whenever the Markdown mounted its blocks."""
    app = ChatApp()
    async with app.run_test(size=(80, 20)) as pilot:
        chat = app.query_one(ChatView)
        if pieces:
            for piece in pieces:
                await chat.append_content(piece)
            await chat.end_message()
            message = chat.last_answer
        else:
            message = AssistantMessage(HEADED, finished=True)
            await chat.add(message)
        assert message is not None
        markdown = message.chunks[0].markdown
        await wait_until(
            pilot, lambda: message.settled and not markdown.lock.is_locked and len(markdown.children) == 3
        )
        await pilot.pause(0.1)
        heading = markdown.children[0]
        assert heading.styles.margin.top == 0
        lines = screen_lines(app)
        assert lines[message.region.y].strip() == "Plan", lines[: message.region.y + 3]
        assert lines[message.region.y + 2].strip() == "The failing test comes from a naive datetime."


async def test_a_streaming_answer_is_handed_over_on_a_steady_beat_from_the_last_flush(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every gap in a streaming answer's output holds a wait for the flush timer. Counted from the
    first text after a flush, the wait followed the engine's reads, which come late when the loop
    is busy with an append and its frame: flushes came up to 70 ms apart, each a long gap on
    screen (bench/terminal_markdown.py). Text that comes late waits only what is left of the
    interval since the last flush, and none once it has passed; the beat stays within two frames
    of Textual's frame clock."""
    from textual.constants import MAX_FPS

    from turnstone_tui.widgets import chat_messages

    assert chat_messages.FLUSH_INTERVAL <= 2 / MAX_FPS
    clock = [1000.0]
    monkeypatch.setattr(chat_messages, "monotonic", lambda: clock[0])
    app = ChatApp()
    async with app.run_test(size=(80, 20)) as pilot:
        chat = app.query_one(ChatView)
        await chat.append_content("The first words.")  # flushed at once, at 1000.0
        answer = chat.streaming
        assert answer is not None
        delays: list[float] = []
        set_timer = answer.set_timer
        monkeypatch.setattr(
            answer, "set_timer", lambda delay, callback: delays.append(delay) or set_timer(delay, callback)
        )
        clock[0] += chat_messages.FLUSH_INTERVAL * 0.75  # the next text is read late
        await chat.append_content(" More words.")
        assert delays == [pytest.approx(chat_messages.FLUSH_INTERVAL * 0.25)]
        await wait_until(pilot, lambda: any("More words." in line for line in screen_lines(app)), 30)
        clock[0] += chat_messages.FLUSH_INTERVAL * 2  # later than a whole interval: at once
        await chat.append_content(" Last words.")
        assert delays[1:] == [pytest.approx(0.001)]
        await chat.end_message()
        await wait_until(pilot, lambda: any("Last words." in line for line in screen_lines(app)), 30)


# Pieces a streamed answer is made of, and the ones that change a block already written: a setext
# underline, a table's rule, a list continued after a blank line, a fence closed later, lazy
# continuation lines, lines ended by \r\n or \r, and characters str.splitlines ends lines at.
_PIECES = st.sampled_from(
    [
        "text",
        " more",
        "\n",
        "\n\n",
        "# Head\n",
        "## H",
        "---\n",
        "===\n",
        "- item\n",
        "-",
        "1. one\n",
        "  indented\n",
        "    code\n",
        "```py\n",
        "```\n",
        "> quote\n",
        "a | b\n",
        "--|--\n",
        "| c | d |\n",
        "\r\n",
        "\r",
        "x\u2028y",
        "\x0c",
        "<div>\n",
        "</div>\n",
        "[ref]: http://x\n",
        "*",
        "`",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_PIECES, min_size=1, max_size=30), data=st.data())
def test_a_block_index_fed_a_growing_source_finds_the_blocks_a_whole_parse_finds(
    pieces: list[str], data: st.DataObject
) -> None:
    """Each flush of a streaming answer gives the live chunk's index the chunk's source so far;
    re-parsing only from the last block's start must find exactly the blocks (start lines and
    whether a chunk may start there) that parsing the whole source finds."""
    source = "".join(pieces)
    index = BlockIndex()
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(source)), max_size=8))))
    for end in [*cuts, len(source)]:
        assert index.blocks(source[:end]) == _top_level_blocks(source[:end])


def test_a_block_index_sees_the_last_block_join_the_one_before() -> None:
    """Text appended to the last block can make it part of the block before (found by the
    property above: an index that parsed again only from the last block kept a block that a
    whole parse no longer finds, so a chunk could be cut inside a table). Here "-" after a table
    is a list of its own until it reads "--|--", a row of the table."""
    source, first_cut = "a | b\na | b\n--|--\n--|--\n", 19
    index = BlockIndex()
    before = index.blocks(source[:first_cut])
    assert before == _top_level_blocks(source[:first_cut])
    after = index.blocks(source)
    assert after == _top_level_blocks(source)
    assert len(after) < len(before)


def test_the_flushes_of_a_long_answer_start_the_same_chunks_with_the_index() -> None:
    """The bench's answer streamed in 160-character flushes is cut at the same places with each
    chunk's BlockIndex as with a whole parse of the chunk at every flush (fails with an index
    that does not parse the last block again)."""
    from bench.app_stream import markdown_document

    document = markdown_document(6000)
    results = []
    for use_index in (False, True):
        chunks: list[str] = [""]
        index = BlockIndex()
        for start in range(0, len(document), 160):
            text = document[start : start + 160]
            split = split_for_new_chunk(chunks[-1], text, 8, index if use_index else None)
            if split is None:
                chunks[-1] += text
            else:
                chunks[-1] += split[0]
                chunks.append(split[1])
                index = BlockIndex()
        results.append(chunks)
    assert len(results[0]) > 10
    assert results[0] == results[1]
    assert "".join(results[1]) == document
