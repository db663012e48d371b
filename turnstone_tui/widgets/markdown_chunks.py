"""A long answer as a column of Markdown chunks, so that its cost stays flat however long it grows.

Textual lays out every mounted widget on each reflow, and a Markdown document is a few widgets per
block: a 20k-token answer is ~4,000 widgets and ~80 ms per reflow. So an answer is cut into chunks
of about ``BLOCKS_PER_CHUNK`` top-level blocks. Only the last chunk streams; the others are frozen,
and a frozen chunk far from the viewport is *virtualised*: it keeps its height but its Markdown is
hidden (``display: none`` takes its subtree out of layout), and it is shown again before it scrolls
into view.

Cuts are made only where a top-level block starts, at a line boundary, which is where Textual's own
``Markdown.append`` re-parses from: every block before the cut is complete, so rendering the two
halves separately gives the same blocks. (A link whose reference definition sits in another chunk
would not resolve; LLM answers practically never use reference definitions.)
"""

from __future__ import annotations

import asyncio
import re
import time
from functools import lru_cache

from markdown_it import MarkdownIt
from textual import events
from textual.app import ComposeResult
from textual.geometry import Size
from textual.message import Message
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream

from .answer_markdown import AnswerMarkdown
from .chat_messages import BLOCKS_PER_CHUNK, WidthArranged

FRAME_WAIT = 0.1  # seconds an append waits at most for the frame that shows the one before it
QUIET_PASSES = 2  # layout passes a frozen chunk sits unchanged before it is pinned (and a pin holds before it is trusted)
RETIRE_TIMEOUT = 30.0  # seconds a retiring chunk waits for its stream to hand everything over

__all__ = ["BLOCKS_PER_CHUNK", "BlockIndex", "MarkdownChunk", "split_for_new_chunk", "split_markdown"]


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """The parser Textual's Markdown widget uses ("gfm-like"), made once: its parse() keeps no
    state between calls."""
    return MarkdownIt("gfm-like")


# Blocks that Textual's Markdown gives no top margin. A chunk starts only with one of these: the
# previous chunk's last block keeps its bottom margin (1), which is then the whole gap, exactly as
# in one document, where the gap is the larger of the two margins (with no CSS to adjust, which
# would need order-dependent rules such as :first-child; see styles/main.tcss).
_CUTTABLE = frozenset({"paragraph_open", "bullet_list_open", "ordered_list_open", "table_open", "hr"})


def _top_level_blocks(source: str) -> list[tuple[int, bool]]:
    """``(start line, may start a chunk)`` for each top-level block of ``source``, in order."""
    return [
        (token.map[0], token.type in _CUTTABLE)
        for token in _parser().parse(source)
        if token.level == 0 and token.map is not None and token.nesting >= 0
    ]


def split_markdown(source: str, blocks_per_chunk: int = BLOCKS_PER_CHUNK) -> list[str]:
    """Cut ``source`` into pieces of at least ``blocks_per_chunk`` top-level blocks (each cut is
    made before the next block that may start a chunk). Joined, the pieces are ``source``;
    rendered one after another they look the same as ``source`` rendered whole."""
    blocks = _top_level_blocks(source)
    if len(blocks) <= blocks_per_chunk:
        return [source]
    lines = source.splitlines(keepends=True)
    cuts: list[int] = []
    in_chunk = 0
    for index, (line, cuttable) in enumerate(blocks):
        if in_chunk >= blocks_per_chunk and cuttable and len(blocks) - index >= blocks_per_chunk // 2:
            cuts.append(line)  # (a short remainder stays in the chunk before it)
            in_chunk = 0
        in_chunk += 1
    pieces: list[str] = []
    previous = 0
    for cut in cuts:
        pieces.append("".join(lines[previous:cut]))
        previous = cut
    pieces.append("".join(lines[previous:]))
    return [piece for piece in pieces if piece] or [source]


class BlockIndex:
    """The top-level blocks of a source that only grows (a streaming chunk's), each call parsing
    only from the start of the last two blocks on. Text appended later extends or retypes the
    last block, or joins it to the one before: a paragraph "-" after a table becomes the table's
    row once it reads "--|--". The blocks before those two are final. A flush of a streaming
    answer parsed its whole chunk to decide where the next chunk starts, ~0.5-1 ms every 20 ms."""

    REPARSED = 2  # the blocks parsed again at every call

    def __init__(self) -> None:
        self._final: list[tuple[int, bool]] = []  # the blocks before the last REPARSED
        self._from_line = 0  # where the first of the last REPARSED blocks starts

    def blocks(self, source: str) -> list[tuple[int, bool]]:
        """``_top_level_blocks(source)``; ``source`` extends the one given last time."""
        tail = "".join(_LINE.findall(source)[self._from_line :])
        parsed = [(line + self._from_line, cuttable) for line, cuttable in _top_level_blocks(tail)]
        blocks = self._final + parsed
        if len(blocks) > self.REPARSED:
            self._final = blocks[: -self.REPARSED]
            self._from_line = blocks[-self.REPARSED][0]
        return blocks


# A line as markdown-it counts them (its token.map): ended by \n, \r\n or \r (str.splitlines
# also ends lines at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029).
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+$")


def split_for_new_chunk(
    source: str, text: str, max_blocks: int, index: BlockIndex | None = None
) -> tuple[str, str] | None:
    """Where to start a new chunk when ``text`` arrives for a chunk holding ``source``.

    ``None`` while the chunk would hold at most ``max_blocks`` blocks, or when no finished block
    that may start a chunk begins inside ``text``. Otherwise ``(head, tail)`` with
    ``head + tail == text``: ``head`` completes the chunk and ``tail`` starts the next one.
    ``index``: the chunk's :class:`BlockIndex`, given every ``source`` so far."""
    combined = source + text
    blocks = index.blocks(combined) if index is not None else _top_level_blocks(combined)
    if len(blocks) <= max_blocks:
        return None
    first_new_line = source.count("\n") + (0 if not source or source.endswith("\n") else 1)
    # Not before the last block: it is still being written and may yet change type (a paragraph
    # "``" becomes a fence, a paragraph over "---" a heading), which would change its margin.
    cuts = [line for line, cuttable in blocks[:-1] if cuttable and line > 0]
    if not cuts or cuts[-1] < first_new_line:
        return None
    cut = cuts[-1]
    lines = combined.splitlines(keepends=True)
    head_end = sum(len(line) for line in lines[:cut])
    return combined[len(source) : head_end], combined[head_end:]


class FramePacedStream(MarkdownStream):
    """Textual's Markdown stream, with a frame drawn between two appends.

    An append mounts its new blocks inside ``app.batch_update()``, over several turns of the
    event loop, and no frame is drawn while a batch is open. Textual's stream starts the next
    append as soon as one ends, when text is waiting; the frame the first one asked for needs a
    few turns of the loop more (the widgets' refreshes reach the screen, the screen goes idle and
    wakes its update timer), and by then the next batch is open. On a loaded machine, where the
    answer's text is always waiting, appends ran back to back for 100-300 ms with no frame
    between them (traces of bench/terminal_markdown.py). Here, after an append, the next one
    waits until the screen has drawn it (``call_after_refresh``), or ``FRAME_WAIT`` at most;
    text that arrives meanwhile joins the next append, as in Textual's stream.

    When the chunk retires (:meth:`take_pending`), nothing waits for a frame any more: the text
    still pending is handed to the retiring chunk to append at once, and the frame that append
    asks for shows it. Left to the stream, the answer's last words waited for the frame of the
    append before them, and then for their own (on a busy machine 30-50 ms of the time from the
    last token to the settled screen, traces of bench/terminal_markdown.py)."""

    _appending = False
    _hurried = False
    _waiting: asyncio.Future[None] | None = None

    def take_pending(self) -> str | None:
        """No more text comes. With no append in flight: the text pending, taken from the stream
        (which appends nothing more; the caller appends it, then stops the stream). With one in
        flight: None, and the stream appends what is pending as soon as it ends."""
        self._hurried = True
        if self._waiting is not None and not self._waiting.done():
            self._waiting.set_result(None)
        if self._appending:
            return None
        text = "".join(self._pending)
        self._pending.clear()
        self._new_markup.clear()
        return text

    async def _run(self) -> None:
        try:
            while await self._new_markup.wait():
                new_markdown = "".join(self._pending)
                self._pending.clear()
                self._new_markup.clear()
                if not new_markdown:  # (taken by take_pending while this task was waking)
                    continue
                self._appending = True
                try:
                    await asyncio.shield(self.markdown_widget.append(new_markdown))
                finally:
                    self._appending = False
                if not self._hurried:
                    await self._drawn()
        except asyncio.CancelledError:
            pass  # (stopped: what is still pending is appended below, as Textual's stream does)
        new_markdown = "".join(self._pending)
        if new_markdown:
            await self.markdown_widget.append(new_markdown)

    async def _drawn(self) -> None:
        """Until the screen has been refreshed, or ``FRAME_WAIT`` has passed. (Not with
        ``asyncio.wait_for``: in Python 3.11 it swallows a cancellation that comes as the future
        completes, and ``stop()`` would then wait for this task for ever.)"""
        loop = asyncio.get_running_loop()
        drawn = self._waiting = loop.create_future()

        def note() -> None:
            if not drawn.done():
                drawn.set_result(None)

        timeout = loop.call_later(FRAME_WAIT, note)
        self.markdown_widget.call_after_refresh(note)
        try:
            await drawn
        finally:
            timeout.cancel()
            self._waiting = None


class MarkdownChunk(WidthArranged):
    """One piece of an answer: a Markdown widget, streamed into while it is the last piece."""

    class Frozen(Message):
        """A chunk stopped streaming; the chat view may now virtualise it."""

        def __init__(self, chunk: MarkdownChunk) -> None:
            super().__init__()
            self.chunk = chunk

    class Changed(Message):
        """A frozen chunk was laid out anew or lost its fixed height: the chat view must pass
        over it again (nothing else need bring it back: the chat's size may not change)."""

    def __init__(self, source: str = "", *, first: bool = True, live: bool = False) -> None:
        """``live``: more text will be streamed in. Its ``source`` is then streamed as well rather
        than rendered up front: ``Markdown.update()`` leaves the widget ready to re-parse from
        the last *line*, not the last block's first line, so a multi-line last block (a list)
        would lose its first lines on the next append."""
        super().__init__()
        # The first chunk of an answer drops a leading heading's top margin; later ones never do.
        self._first = first
        self._initial = "" if live else source
        self._parts: list[str] = [source] if source else []
        self._stream: MarkdownStream | None = None
        self.frozen = False
        self.virtualised = False
        self._quiet_passes = 0
        self._pinned_width: int | None = None  # the width its fixed height was measured at
        self._pin_checks = 0
        # Text written before the Markdown finished its first render waits here: appending while
        # Markdown's initial update runs would render it twice.
        self._early: list[str] = [source] if live and source else []
        self.block_index = BlockIndex()  # its blocks, for the answer's flushes (split_for_new_chunk)
        self._ready = asyncio.Event()

    def compose(self) -> ComposeResult:
        # One parser for every append (Textual's default builds a MarkdownIt per append, ~0.35 ms).
        yield AnswerMarkdown(self._initial, parser_factory=_parser, trim_leading_heading=self._first)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The height of the Markdown at ``width``, measured without the container's height.

        Textual measures a container whose children all have a dynamic height (``auto`` counts)
        by arranging it at its *parent's* height, which is part of the arrangement's cache key.
        The parent is the answer, which grows with every streamed update: every chunk not yet
        pinned was laid out again, block by block, on every frame (a frame of a long answer
        took 100-350 ms). Nothing in a chunk depends on that height, so it is measured at 0."""
        if not width:
            return 0
        return self.arrange(Size(width, 0)).total_region.height

    async def on_mount(self) -> None:
        # Children are mounted (and Markdown's first update done) before the parent's Mount.
        self._ready.set()
        if self._early:
            text = "".join(self._early)
            self._early.clear()
            await self._write_to_stream(text)

    @property
    def markdown(self) -> Markdown:
        return self.query_one(Markdown)

    @property
    def source(self) -> str:
        """Everything written to this chunk (the screen may trail it while blocks mount)."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def rendered_source(self) -> str:
        """What the Markdown widget has been handed so far."""
        return self.markdown.source if self._ready.is_set() else ""

    @property
    def busy(self) -> bool:
        """Not mounted yet, text is waiting in the stream, or blocks are still being mounted."""
        if not self._ready.is_set() or self._early:
            return True
        return self.markdown.lock.is_locked or (self._stream is not None and bool(self._stream._pending))

    async def write(self, text: str, *, render: bool = False) -> None:
        """Stream ``text`` onto the end of this chunk (buffered until the chunk is mounted).
        ``render``: the chunk's first text, appended to the Markdown at once and awaited (its
        blocks are mounted when this returns) rather than handed to the stream's task."""
        if not text:
            return
        self._parts.append(text)
        if not self._ready.is_set():
            self._early.append(text)
            return
        if render and self._stream is None and not self.markdown.source:
            await self.markdown.append(text)
            return
        await self._write_to_stream(text)

    async def _write_to_stream(self, text: str) -> None:
        if self._stream is None:
            self._stream = FramePacedStream(self.markdown)
            self._stream.start()
        await self._stream.write(text)

    async def retire(self, *, virtualise: bool = True) -> None:
        """No more text comes: let the stream hand over what it holds, then freeze."""
        await self._ready.wait()
        markdown = self.markdown
        if self._stream is not None:
            stream, self._stream = self._stream, None
            rest = stream.take_pending() if isinstance(stream, FramePacedStream) else None
            if rest:  # (here, not in the stream's task: a frame queued before it would go first)
                await markdown.append(rest)
            # MarkdownStream.stop() cancels its task; if that lands while an append is in flight,
            # the task appends its leftovers concurrently with it, and two appends at once
            # corrupt the blocks. So stop only once the stream has handed everything over.
            deadline = time.monotonic() + RETIRE_TIMEOUT
            while markdown.source != self.source and time.monotonic() < deadline:  # noqa: ASYNC110 (no event to wait on)
                await asyncio.sleep(0.002)
            try:
                await stream.stop()
            except asyncio.CancelledError:
                # Raised here if the stream's task had not started yet, though nobody cancelled us.
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
        if len(markdown.source) < len(self.source):  # (only after the timeout: never lose text)
            await markdown.append(self.source[len(markdown.source) :])
        self.freeze(virtualise=virtualise)

    def freeze(self, *, virtualise: bool = True) -> None:
        """No more text comes. ``virtualise``: tell the chat, which then pins the chunk's height
        and hides its Markdown while it is far from the view. Not for the only chunk of an
        answer: nothing streams beside it (the reason for pinning), and the chat already takes a
        whole entry far from the view out of the DOM; each of those passes costs a layout."""
        if not self.frozen:
            self.frozen = True
            if virtualise:
                # The sender must be the chunk: a message sent "by" its parent stops bubbling there.
                self.post_message(self.Frozen(self).set_sender(self))

    def note_quiet(self) -> bool:
        """Called once per chat layout pass: True once this chunk has been frozen, with nothing
        left to mount, for two passes in a row (so its size on screen is its final size)."""
        if not self.frozen or self.busy:
            self._quiet_passes = 0
            return False
        self._quiet_passes += 1
        return self._quiet_passes >= QUIET_PASSES

    @property
    def pinned(self) -> bool:
        return self._pinned_width is not None

    @property
    def pin_verified(self) -> bool:
        """The pinned height held on ``QUIET_PASSES`` later layout passes."""
        return self._pinned_width is not None and self._pin_checks >= QUIET_PASSES

    def pin(self) -> None:
        """Fix the chunk's height at what it measures now (it is frozen and quiet).

        An auto-height chunk is measured again whenever its parent's height changes, which is on
        every update of the answer's streaming chunk, and Textual's arrangement cache is keyed by
        that height: every frozen chunk on screen was laid out again, block by block, on every
        frame. A fixed height takes it out of that."""
        height = self.outer_size.height
        if self.pinned or height <= 0 or not self.size.width or self.markdown.outer_size.height != height:
            return
        self._pinned_width = self.size.width
        self._pin_checks = 0
        self.styles.height = height

    def check_pin(self) -> bool:
        """Once per layout pass while pinned and shown: does the pinned height still match the
        Markdown's own? A pin taken from a layout that was about to change (a block still mounting,
        a list still composing) is dropped, and the chunk is measured again."""
        if self._pin_holds():
            self._pin_checks += 1
            return True
        self.unpin()
        return False

    def _pin_holds(self) -> bool:
        return self._pinned_width == self.size.width and self.markdown.outer_size.height == self.size.height

    def on_answer_markdown_resized(self, message: AnswerMarkdown.Resized) -> None:
        """The Markdown's height changed after the chunk's was pinned (a block that was still
        composing): measure the chunk again rather than clip its end."""
        message.stop()
        if self.pinned and not self.virtualised and not self._pin_holds():
            self.unpin()

    def unpin(self) -> None:
        if self._pinned_width is not None:
            self._pinned_width = None
            self._quiet_passes = 0
            self.styles.clear_rule("height")
            # (Clearing a rule asks for no layout, as setting one does; the layout that a resized
            # Markdown used to ask for through its virtual size no longer comes: see layout_sized.py.)
            self.refresh(layout=True)
            self.post_message(self.Changed().set_sender(self))

    def on_resize(self, event: events.Resize) -> None:
        # A chunk can freeze before its first layout; the chat's pass then found no region for it.
        if self.frozen and not self.pinned:
            self.post_message(self.Changed().set_sender(self))

    def virtualise(self) -> None:
        """Keep the space, drop the widgets from layout (the chunk is far from the viewport).
        Only with a verified pinned height: that is the space kept."""
        if self.virtualised or not self.pin_verified:
            return
        self.virtualised = True
        self.markdown.display = False

    def realise(self) -> None:
        """Show the Markdown again (the chunk is near the viewport). If the width changed while
        it was hidden, its pinned height is stale: it is measured again."""
        if not self.virtualised:
            return
        self.virtualised = False
        self.markdown.display = True
        if self._pinned_width != self.size.width:
            self.unpin()

    def width_changed(self) -> None:
        """The chat's width changed: a shown chunk is measured again now; a virtualised one keeps
        its old height until it is realised."""
        self._quiet_passes = 0
        if not self.virtualised:
            self.unpin()
