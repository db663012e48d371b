"""The widgets that make up the conversation: user prompts, streamed answers, reasoning, notices."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from time import monotonic
from typing import TYPE_CHECKING

from textual.app import App, ComposeResult
from textual.content import Content
from textual.geometry import Region, Size
from textual.layout import DockArrangeResult
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from .clean_lines import CleanLines
from .layout_sized import SizedByLayout

if TYPE_CHECKING:
    from .markdown_chunks import MarkdownChunk

# The Markdown machinery (markdown-it, pygments, Textual's Markdown widgets: a tenth of a second of
# imports) loads with the first answer shown, not before the app's first frame.


def warm_markdown() -> None:
    """Load the Markdown machinery and the highlighter of the commonest code (for a worker thread
    once the app has started): the first answer of a session imported it on the event loop, its
    first words held back meanwhile (~90 ms on a loaded machine, up to a second under heavy load)."""
    from textual.highlight import HighlightTheme, highlight

    from .markdown_chunks import _parser

    _parser()
    for language in ("python", "bash"):
        highlight("x = 1\n", language=language, theme=HighlightTheme)


BLOCKS_PER_CHUNK = 8
"""Blocks in one streamed Markdown chunk before it is frozen and a new chunk starts."""

# Reasoning can be very long; the dimmed block shows at most this many trailing characters.
MAX_REASONING_CHARS = 20_000


class WidthArranged(SizedByLayout, Widget):
    """A column of ``height: auto`` children arranged once per width, whatever its own height.

    Textual arranges a container twice in a frame when it is measured and then placed: at
    ``(width, 0)`` (or its parent's height) to find its content height, then at its final size to
    place its children, and each size is a separate entry of the arrangement cache. Nothing in an
    answer depends on the height it is given (every block, chunk and answer is ``height: auto``),
    so the answer, its chunks and their Markdown arrange at ``(width, 0)`` only: one arrangement
    per change instead of two (the streaming chunk's Markdown was arranged three times a frame).
    And its blank rows are rendered once (:func:`render_blank_rows_once`)."""

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        return super().arrange(Size(size.width, 0), optimal)

    def render_lines(self, crop: Region) -> list[Strip]:
        return render_blank_rows_once(self, crop, super().render_lines)


def render_blank_rows_once(
    widget: Widget, crop: Region, render: Callable[[Region], list[Strip]]
) -> list[Strip]:
    """``render(crop)`` for a container that draws nothing but its background: every row between
    its top and bottom padding is the same blank line (its children are drawn over it), so one is
    rendered and repeated. Textual renders each visible row, and all of them again whenever the
    container's size changes, which for a streaming answer is every frame: the chat's and the
    answer's containers' rows were about 40% of each frame's render. A container with a border,
    outline or title is rendered row by row as before."""
    styles = widget.styles
    edges = (styles.border_top, styles.border_bottom, styles.outline_top, styles.outline_bottom)
    if (
        crop.height < 3
        or widget.border_title
        or widget.border_subtitle
        or any(e[0] not in ("", "none") for e in edges)
    ):
        return render(crop)
    # The rows of the content region (the region's own coordinates): no padding, no scroll bar gutter.
    region, content = widget.region, widget.content_region
    low = max(crop.y, content.y - region.y)
    high = min(crop.bottom, content.bottom - region.y)
    if high - low < 2:
        return render(crop)
    row = render(Region(crop.x, low, crop.width, 1))
    if len(row) != 1:
        return render(crop)
    above = render(Region(crop.x, crop.y, crop.width, low - crop.y)) if low > crop.y else []
    below = render(Region(crop.x, high, crop.width, crop.bottom - high)) if crop.bottom > high else []
    return [*above, *(row * (high - low)), *below]


class UserMessage(CleanLines, Static):
    """What the user typed, shown once the turn starts."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(text), markup=False)
        self.text = text


class InfoMessage(CleanLines, Static):
    """A notice from the app or the engine (not an error)."""

    def __init__(self, text: str, *, markup: bool = False, classes: str | None = None) -> None:
        super().__init__(text if markup else Content(text), markup=markup, classes=classes)
        self.text = text
        self.markup_text = markup


class WelcomeMessage(InfoMessage):
    """The first line of an empty chat: model, provider and the keys that matter."""


class ErrorMessage(CleanLines, Static):
    """Something went wrong; shown in the error colour with a title."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(text), markup=False)
        self.text = text
        self.border_title = "error"


FLUSH_INTERVAL = 0.03
"""Seconds between Markdown updates while an answer streams, counted from the last update (not
from the first text that came after it). Every gap in a streaming answer's output holds one such
wait, the append and a frame. Counted from the first text after an update, as it was with 0.02,
the beat followed the engine's reads, which come late whenever the loop is busy with an append
and its frame: updates came 30 ms apart (median), 42 ms (p90), up to 70 ms, and each late one
made one long gap on screen. A steady 30 ms beat from the last update holds as many updates a
second as that median, so no more appends and frames, and no long ones. When frames are slower
than this, the Markdown stream's appends wait for them and what arrives meanwhile joins the next
(markdown_chunks.FramePacedStream)."""


FINISH_HOLD = 0.1
"""Seconds an answer's end may hold the screen's frames at most (see :func:`hold_frames`; a bound,
since a retiring chunk may wait for its stream up to ``markdown_chunks.RETIRE_TIMEOUT``)."""


def hold_frames(app: App[object], limit: float) -> Callable[[], None]:
    """Draw no frame until the returned function is called, or ``limit`` seconds have passed
    (``app.batch_update()``, opened here and closed there); the screen draws at once then.

    For an answer's end: its last text is appended (blocks mounted, each append in its own batch)
    while the append before it may still be mounting. Between the two batches the screen's frame
    clock, waiting for the first to close, drew a frame of the screen without the last words
    (15-25 ms on a busy machine), and only then was the last append started, and drawn by the
    frame after it: in traces of bench/terminal_markdown.py --busy 1, 3 of 4 answers ended with
    two frames after the answer's end, not one."""
    batch = app.batch_update()
    batch.__enter__()
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            timeout.cancel()
            batch.__exit__(None, None, None)

    timeout = asyncio.get_running_loop().call_later(limit, release)
    return release


class AssistantMessage(WidthArranged):
    """The assistant's answer, streamed as Markdown through ``Markdown.get_stream()``.

    The answer is a column of :class:`MarkdownChunk` widgets: only the last one streams; once it
    holds more than ``blocks_per_chunk`` blocks it is completed up to a finished block and frozen,
    and a new chunk takes the rest, so each update re-lays out a few dozen widgets however long
    the answer is. The raw source is kept so ``/raw`` can show it as plain text (class ``-raw`` on the
    chat view).
    """

    blocks_per_chunk = BLOCKS_PER_CHUNK

    def __init__(self, source: str = "", *, finished: bool = False, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._initial = source
        self._parts: list[str] = [source] if source else []
        self._unflushed: list[str] = []
        self._flush_timer: Timer | None = None
        self._flush_lock = asyncio.Lock()
        self._flushed_once = bool(source)
        self._flushed_at = 0.0  # monotonic() of the last flush
        self.finished = finished

    @property
    def source(self) -> str:
        return "".join(self._parts)

    @property
    def chunks(self) -> list[MarkdownChunk]:
        from .markdown_chunks import MarkdownChunk

        return list(self.query_children(MarkdownChunk))

    @property
    def rendered_source(self) -> str:
        """What the Markdown widgets have been handed (trails ``source`` while text is buffered)."""
        return "".join(chunk.rendered_source for chunk in self.chunks)

    @property
    def settled(self) -> bool:
        """Everything appended so far is on screen: nothing buffered, no blocks still mounting."""
        return (
            not self._unflushed
            and not self._flush_lock.locked()
            and not any(chunk.busy for chunk in self.chunks)
        )

    def compose(self) -> ComposeResult:
        from .markdown_chunks import MarkdownChunk, split_markdown

        pieces = split_markdown(self._initial, self.blocks_per_chunk) if self.finished else [self._initial]
        for index, piece in enumerate(pieces):
            yield MarkdownChunk(piece, first=index == 0)
        yield Static(Content(self._initial), classes="raw", markup=False)

    def on_mount(self) -> None:
        if self.finished:
            chunks = self.chunks
            for chunk in chunks:
                chunk.freeze(virtualise=len(chunks) > 1)

    async def append(self, text: str, *, render: bool = False) -> None:
        """Append a fragment of the answer. ``render``: the answer's first words, handed to the
        Markdown now and rendered (its blocks mounted) before this returns."""
        if not text:
            return
        self._parts.append(text)
        # Hand text to the Markdown stream at most every FLUSH_INTERVAL: each append re-lays out
        # the streaming chunk, so per-token appends would cap the rate the screen keeps up with.
        self._unflushed.append(text)
        if render and not self._flushed_once and self._flush_timer is None and self.chunks:
            self._flushed_once = True
            await self._flush(render=True)
        elif self._flush_timer is None:
            # The first words go out at once (the answer box is not drawn empty for a frame);
            # later ones FLUSH_INTERVAL after the last flush, at once if that has passed.
            # (Textual: no 0 s timer.)
            delay = (
                max(0.001, FLUSH_INTERVAL - (monotonic() - self._flushed_at)) if self._flushed_once else 0.001
            )
            self._flushed_once = True
            self._flush_timer = self.set_timer(delay, self._flush)
        if self.parent is not None and self.parent.has_class("-raw"):
            self.sync_raw()

    async def _flush(self, *, render: bool = False, final: bool = False) -> None:
        """Hand the buffered text to the live chunk. ``final``: the answer has ended; the live
        chunk takes up to twice its usual number of blocks rather than start a new chunk (which
        would be mounted, then streamed into: a frame or two more before the answer's last words
        were on screen; the last flush's text crossed a chunk's end in 1 of 3-5 answers)."""
        self._flush_timer = None
        self._flushed_at = monotonic()
        async with self._flush_lock:
            if not self._unflushed:
                return
            chunks = self.chunks
            if not chunks:  # not composed yet, or already removed (the app is closing)
                if self.is_attached and self._flush_timer is None:
                    self._flush_timer = self.set_timer(FLUSH_INTERVAL, self._flush)
                return
            text = "".join(self._unflushed)
            self._unflushed.clear()
            from .markdown_chunks import MarkdownChunk, split_for_new_chunk

            live = chunks[-1]
            limit = self.blocks_per_chunk * (2 if final else 1)
            split = split_for_new_chunk(live.source, text, limit, live.block_index)
            if split is None:
                await live.write(text, render=render)
            else:
                # The live chunk is full: it takes the text up to a finished block, the rest
                # starts the next chunk.
                head, tail = split
                await live.write(head)
                self.run_worker(live.retire(), group="markdown-chunks")
                # Not awaited: the new chunk buffers what is written to it until it is mounted,
                # so the next flush need not wait for this mount.
                self.mount(MarkdownChunk(tail, first=False, live=True), before=self.query_one(".raw"))

    def sync_raw(self) -> None:
        self.query_one(".raw", Static).update(Content(self.source))

    async def finish(self) -> None:
        """The message is complete: flush whatever is buffered and freeze the last chunk. No frame
        is drawn meanwhile (``FINISH_HOLD`` at most): the first one after the end shows it all."""
        if self.finished:
            return
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        release = hold_frames(self.app, FINISH_HOLD) if self.is_attached else None
        try:
            await self._flush(final=True)
            self.finished = True
            async with self._flush_lock:
                chunks = self.chunks
                if not chunks:  # removed from the screen (the app is closing): nothing to retire
                    return
                await chunks[-1].retire(virtualise=len(chunks) > 1)
        finally:
            if release is not None:
                release()


class ReasoningBlock(Collapsible):
    """The model's thinking, dimmed; open while it streams, collapsed once the answer starts."""

    def __init__(self, text: str = "", *, finished: bool = False) -> None:
        self._parts: list[str] = [text] if text else []
        self._chars = len(text)
        self.finished = finished
        super().__init__(
            Static(Content(text[-MAX_REASONING_CHARS:]), classes="reasoning-text", markup=False),
            title=self._title_text(),
            collapsed=finished,
        )

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def _title_text(self) -> str:
        if not self.finished:
            return "Thinking…"
        words = len(self.text.split())
        return f"Thought · {words} word{'s' if words != 1 else ''}"

    def append(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        self._chars += len(text)
        if len(self._parts) > 256:  # keep the part list short; join is cheap at this size
            self._parts = ["".join(self._parts)]
        tail = self.text[-MAX_REASONING_CHARS:]
        self.query_one(".reasoning-text", Static).update(Content(tail))

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self.title = self._title_text()
        self.collapsed = True
