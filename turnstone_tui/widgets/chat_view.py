"""The scrolling conversation: messages, streamed answers, reasoning and tool cards, in order.

Bounded: once more than ``max_widgets`` children are mounted, the oldest are removed (in chunks,
so pruning is rare), which keeps layout and memory flat in sessions that run all day. Long answers
are columns of Markdown chunks; frozen chunks more than a screen away from the viewport are
virtualised (kept as empty space of the same height), so a reflow touches only what is near.

Following: the chat stays at the bottom as output arrives unless the user scrolled up. Textual's
anchor does the following; this view adds what it lacks: a scroll request that leaves the view at
the bottom (PageDown or a key at the end) no longer stops following, and while not following, new
output below the view is reported (``BelowFold``) so the screen can show a "new output ↓" marker.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from ..core.types import PreparedItem
from .chat_messages import (
    AssistantMessage,
    ErrorMessage,
    InfoMessage,
    ReasoningBlock,
    UserMessage,
    WelcomeMessage,
)
from .markdown_chunks import MarkdownChunk
from .tool_card import ToolCard

# Frozen chunks within this many viewport heights above or below the view stay laid out.
REACH = 0.5


class NewOutputMarker(Static):
    """The "new output ↓" bar under the chat, shown while output arrived below a scrolled-up view.
    A click posts ``Pressed`` (the screen then scrolls the chat to the end)."""

    DEFAULT_CSS = """
    NewOutputMarker {
        display: none;
        height: 1;
        width: 1fr;
        padding: 0 2;
        content-align: right middle;
        background: $accent 25%;
        color: $text;
        &.-shown { display: block; }
        &:hover { background: $accent 45%; }
    }
    """

    class Pressed(Message):
        """The marker was clicked."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            Content.assemble(("new output ↓", "bold"), ("  end / click to follow", "$text-muted")), id=id
        )

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Pressed())


class ChatView(VerticalScroll, can_focus=True):
    """The conversation. Engine events arrive through the app, which calls the methods below."""

    class BelowFold(Message):
        """Output arrived below the view while the chat does not follow (``unseen``), or the chat
        follows again (not ``unseen``)."""

        def __init__(self, unseen: bool) -> None:
            super().__init__()
            self.unseen = unseen

    def __init__(self, *, max_widgets: int = 400, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_widgets = max(10, max_widgets)
        self._assistant: AssistantMessage | None = None
        self._reasoning: ReasoningBlock | None = None
        self._cards: dict[str, ToolCard] = {}
        self._frozen_chunks: list[MarkdownChunk] = []
        self._virtualise_pending = False
        self._laid_out_width = 0
        self._follow_pending = False
        self._scrolled_away = False  # the user moved the view: no following until it is at the bottom
        self.unseen_output = False  # output arrived below the view since then

    def watch_virtual_size(self, virtual_size: Size) -> None:
        """The content grew (a message mounted, an answer streamed): follow it once it overflows.
        (A Resize event is not sent when only the virtual size changes.)"""
        self._follow()
        self._schedule_virtualise()
        if self._scrolled_away and self.scroll_y < self.max_scroll_y:
            self._set_unseen(True)

    # --- following ----------------------------------------------------------------------------

    @property
    def following(self) -> bool:
        """Whether new output scrolls into view (the user has not scrolled away from the bottom)."""
        return not self._scrolled_away

    def release_anchor(self) -> None:
        """Every user scroll releases the anchor (Textual). Textual re-anchors only when the scroll
        position then changes and lands at the bottom: a request that leaves the view at the bottom
        (PageDown or the down key at the end) would stop following for good. Check after it."""
        super().release_anchor()
        self._scrolled_away = True
        self.call_after_refresh(self._check_at_bottom)

    def scroll_end(self, *args: Any, **kwargs: Any) -> None:
        """Going to the end (End, the marker, a sent prompt) follows again."""
        self._resume_following()
        super().scroll_end(*args, **kwargs)

    def _check_at_bottom(self) -> None:
        if self._scrolled_away and self.scroll_y >= self.max_scroll_y:
            self._resume_following()
            if self.is_anchored:
                super().scroll_end(animate=False, immediate=True)  # re-arms Textual's anchor

    def _resume_following(self) -> None:
        self._scrolled_away = False
        self._set_unseen(False)

    def _set_unseen(self, unseen: bool) -> None:
        if unseen != self.unseen_output:
            self.unseen_output = unseen
            self.post_message(self.BelowFold(unseen))

    def on_resize(self, event: events.Resize) -> None:
        self._follow()
        if event.size.width != self._laid_out_width:
            self._laid_out_width = event.size.width
            for chunk in self._frozen_chunks:
                chunk.width_changed()
        self._schedule_virtualise()

    # --- virtualising long answers ------------------------------------------------------------

    def on_markdown_chunk_frozen(self, message: MarkdownChunk.Frozen) -> None:
        message.stop()
        self._frozen_chunks.append(message.chunk)
        self._schedule_virtualise()

    def on_markdown_chunk_changed(self, message: MarkdownChunk.Changed) -> None:
        message.stop()
        self._schedule_virtualise()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._schedule_virtualise()
        if self._scrolled_away and new_value >= self.max_scroll_y:
            self._resume_following()  # back at the bottom (Textual re-anchored on this change)

    def _schedule_virtualise(self) -> None:
        if not self._virtualise_pending and self._frozen_chunks:
            self._virtualise_pending = True
            self.call_after_refresh(self._virtualise)

    def _virtualise(self) -> None:
        """Show the frozen chunks within ``REACH`` viewports of the view, hide the others, and
        fix the height of every frozen chunk once it has settled (see ``MarkdownChunk.pin``)."""
        self._virtualise_pending = False
        viewport = self.region
        if not viewport:
            return
        reach = int(viewport.height * REACH)
        window = Region(viewport.x, viewport.y - reach, viewport.width, viewport.height + 2 * reach)
        attached: list[MarkdownChunk] = []
        unsettled = False
        for chunk in self._frozen_chunks:
            if not chunk.is_attached:
                continue
            attached.append(chunk)
            region = chunk.region
            if not region:
                continue  # not laid out (hidden by /raw, or not yet arranged)
            near = region.overlaps(window)
            if near:
                chunk.realise()
            if chunk.virtualised:
                continue
            if chunk.pinned:
                if chunk.check_pin() and chunk.pin_verified:
                    if not near:
                        chunk.virtualise()
                    continue
            elif chunk.note_quiet():
                chunk.pin()
            unsettled = True  # waiting for the chunk to settle, or for its pin to be verified
        self._frozen_chunks = attached
        if unsettled:
            self._schedule_virtualise()  # again after the next layout

    @property
    def virtualised_chunks(self) -> int:
        return sum(1 for chunk in self._frozen_chunks if chunk.virtualised)

    def _follow(self) -> None:
        """Stick to the bottom once the conversation overflows. An anchored view that does not
        overflow sits at the bottom of the screen, and a fresh chat should read from the top, so
        the anchor is dropped again while everything fits (checked after the layout settles)."""
        if not self._follow_pending:
            self._follow_pending = True
            self.call_after_refresh(self._apply_follow)

    def _apply_follow(self) -> None:
        self._follow_pending = False
        if self.max_scroll_y > 0:
            if not self.is_anchored:
                self.anchor()
        elif self.is_anchored:
            self.anchor(False)

    # --- adding widgets ---------------------------------------------------------------------

    async def add(self, *widgets: Widget) -> None:
        """Mount widgets at the end, then prune the oldest past the bound."""
        await self.mount_all(widgets)
        self._prune()

    def _prune(self) -> None:
        children = list(self.children)
        excess = len(children) - self.max_widgets
        if excess <= 0:
            return
        # Remove a little more than needed so pruning happens once per ~10% of growth.
        excess += self.max_widgets // 10
        keep = {self._assistant, self._reasoning}
        doomed = [child for child in children[:excess] if child not in keep]
        for widget in doomed:
            if isinstance(widget, ToolCard):
                self._cards.pop(widget.item.call_id, None)
        self.remove_children(doomed)

    async def add_welcome(self, text: str) -> None:
        await self.add(WelcomeMessage(text, markup=True))

    async def add_user(self, text: str) -> None:
        await self.end_message()
        await self.add(UserMessage(text))
        if self.is_anchored:
            self.anchor()  # sending a prompt follows the conversation again

    async def add_info(self, text: str) -> None:
        await self.add(InfoMessage(text))

    async def add_markdown_info(self, source: str) -> None:
        """A finished Markdown block (help text, search results, resumed answers)."""
        await self.add(AssistantMessage(source, finished=True, classes="-info"))

    async def add_error(self, text: str) -> None:
        await self.add(ErrorMessage(text))

    # --- streaming --------------------------------------------------------------------------

    async def append_content(self, text: str) -> None:
        if self._reasoning is not None:
            self._reasoning.finish()
            self._reasoning = None
        if self._assistant is None:
            self._assistant = AssistantMessage()
            await self.add(self._assistant)
        await self._assistant.append(text)

    async def append_reasoning(self, text: str) -> None:
        if self._reasoning is None:
            self._reasoning = ReasoningBlock()
            await self.add(self._reasoning)
        self._reasoning.append(text)

    async def end_message(self) -> None:
        """Close the streamed answer and reasoning (the next tokens start new widgets)."""
        if self._reasoning is not None:
            self._reasoning.finish()
            self._reasoning = None
        if self._assistant is not None:
            assistant, self._assistant = self._assistant, None
            await assistant.finish()

    @property
    def streaming(self) -> AssistantMessage | None:
        return self._assistant

    @property
    def last_answer(self) -> AssistantMessage | None:
        """The most recent answer still on screen (streaming or finished)."""
        for child in reversed(self.children):
            if isinstance(child, AssistantMessage) and not child.has_class("-info"):
                return child
        return None

    # --- tools ------------------------------------------------------------------------------

    async def add_tool_cards(self, items: list[PreparedItem]) -> list[ToolCard]:
        await self.end_message()
        cards = [ToolCard(item) for item in items]
        for card in cards:
            self._cards[card.item.call_id] = card
        await self.add(*cards)
        return cards

    def tool_card(self, call_id: str) -> ToolCard | None:
        return self._cards.get(call_id)

    def tool_cards(self) -> list[ToolCard]:
        """The cards on screen, oldest first (without walking the DOM: answers hold thousands of
        Markdown widgets)."""
        return [card for card in self._cards.values() if card.is_attached]

    # --- whole view -------------------------------------------------------------------------

    async def clear_chat(self) -> None:
        await self.end_message()
        self._cards.clear()
        self._frozen_chunks.clear()
        await self.remove_children()

    def set_raw(self, raw: bool) -> None:
        """Show answers as their Markdown source (``/raw``) or rendered."""
        self.set_class(raw, "-raw")
        if raw:
            for message in self.query(AssistantMessage):
                message.sync_raw()
