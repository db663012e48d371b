"""The scrolling conversation: messages, streamed answers, reasoning and tool cards, in order.

Bounded, and nothing is lost: while the view follows the end, finished entries more than
``KEEP_ABOVE`` screens above it leave the DOM (and at most ``max_widgets`` entries stay mounted);
they are kept as recipes (:mod:`.chat_history`) and mounted again, a few at a time, when the view
scrolls up to within ``LOAD_MARGIN`` screens of the top. So each frame lays out about the same
number of widgets at turn 300 as at turn 3. A resumed session mounts only its last entries the same
way. Entries that appear or leave above the view do not move what is on screen: the first visible
entry keeps its place (see ``arrange``). Long answers are columns of Markdown chunks; frozen chunks
more than a screen away from the viewport are virtualised (kept as empty space of the same height),
so a reflow touches only what is near.

Following: the chat stays at the bottom as output arrives unless the user scrolled up. Textual's
anchor does the following; this view adds what it lacks: a scroll request that leaves the view at
the bottom (PageDown or a key at the end) no longer stops following, and while not following, new
output below the view is reported (``BelowFold``) so the screen can show a "new output ↓" marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual import events
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Region, Size
from textual.layout import DockArrangeResult
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from ..core.types import PreparedItem
from .cached_scrollbar import CachedVerticalScrollBar
from .chat_history import OlderEntries, OlderMarker, Revive, revival
from .chat_messages import (
    AssistantMessage,
    ErrorMessage,
    InfoMessage,
    ReasoningBlock,
    UserMessage,
    WelcomeMessage,
    render_blank_rows_once,
)

if TYPE_CHECKING:
    from .markdown_chunks import MarkdownChunk
    from .tool_card import ToolCard  # loaded with the first tool call (off the first frame)

# Frozen chunks within this many viewport heights above or below the view stay laid out.
REACH = 0.5
KEEP_ABOVE = 4
"""Screens of finished entries kept mounted above the view while it follows the end."""
LOAD_MARGIN = 3
"""Older entries are mounted when the view comes within this many screens of the top."""
LOAD_BATCH = 8
"""Entries mounted per step when the view scrolls up to them (about three screens of a typical
session's turns). Each step costs Textual a layout of every mounted widget, twice (the entries, then
what they compose), so a few large steps cost far less than many small ones."""
TRIM_BATCH = 4
"""Entries leave the DOM in groups of at least this many (one relayout for several)."""


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


class ChatView(CachedVerticalScrollBar, VerticalScroll, can_focus=True):
    """The conversation. Engine events arrive through the app, which calls the methods below."""

    class UserScrolled(Message):
        """The user scrolled the chat (a key, the wheel, the scroll bar)."""

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
        self._older = OlderEntries()
        self._marker: OlderMarker | None = None
        self._arrangement: DockArrangeResult | None = None
        self._keep: tuple[Widget, int] | None = None
        self._load_pending = False
        self._trim_pending = False

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """As Textual's, without the second layout its ``virtual_size`` reactive asks for (see
        widgets/layout_sized.py): the layout that grew the chat has placed its entries and, when
        the chat follows the end, scrolled it there (Textual's anchor, in the arrangement). The
        watcher below is still called on a change (private API: Textual is pinned exactly)."""
        virtual_changed = layout and virtual_size != self.virtual_size
        changed = super()._size_updated(size, virtual_size, container_size, layout=False)
        if virtual_changed:
            self.watch_virtual_size(virtual_size)
        return changed

    def watch_virtual_size(self, virtual_size: Size) -> None:
        """The content grew (a message mounted, an answer streamed): follow it once it overflows.
        (A Resize event is not sent when only the virtual size changes.)"""
        self._follow()
        self._schedule_virtualise()
        self._schedule_load()
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
        self.post_message(self.UserScrolled())
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
        self._schedule_load()

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
        self._note_view_top()
        self._schedule_load()
        self._sync_marker()
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
        if self._scroll_required:
            # The scroll has not reached the screen yet: Textual hands it over when the chat is
            # next idle, and a callback after refresh can run before that (a loaded machine), with
            # every chunk's region still where the old position had it. Judged from those, the
            # chunks coming into view stayed hidden and the view blank. (Textual private, pinned.)
            self._schedule_virtualise()
            return
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
        """Mount widgets at the end, then let the oldest leave the DOM past the bounds."""
        await self.mount_all(widgets)
        self._prune()
        if not self._trim_pending:
            self._trim_pending = True
            self.call_after_refresh(self._trim_above)

    @property
    def entries(self) -> list[Widget]:
        """The mounted entries, oldest first (without the marker for older ones)."""
        return [child for child in self.children if child is not self._marker]

    @property
    def older_count(self) -> int:
        """Entries above the mounted ones, out of the DOM until the view scrolls up to them."""
        return len(self._older)

    def _at_end(self) -> bool:
        return self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y - 1

    def _prune(self) -> None:
        """At most ``max_widgets`` entries stay mounted (however the view is scrolled)."""
        entries = self.entries
        excess = len(entries) - self.max_widgets
        if excess <= 0:
            return
        # A little more than needed, so this happens once per ~10% of growth.
        self._retire(entries[: excess + self.max_widgets // 10])

    def _trim_above(self) -> None:
        """While the view follows the end: finished entries more than ``KEEP_ABOVE`` screens
        above it leave the DOM (in groups, so it happens once per few entries)."""
        self._trim_pending = False
        arrangement = self._arrangement
        height = self.scrollable_content_region.height
        if arrangement is None or height <= 0 or not self._at_end():
            return
        limit = self.scroll_y - KEEP_ABOVE * height
        leaving: list[Widget] = []
        for placement in arrangement.placements:
            widget = placement.widget
            if widget is self._marker:
                continue
            if placement.region.bottom >= limit or widget.parent is not self:
                break
            leaving.append(widget)
        if len(leaving) >= TRIM_BATCH:
            self._retire(leaving)

    def _retire(self, widgets: Sequence[Widget]) -> None:
        """Take the oldest ``widgets`` out of the DOM, keeping how to build them again. Stops at
        the first one that is still changing (it and everything after it stay)."""
        keep = {self._assistant, self._reasoning}
        revives: list[Revive] = []
        leaving: list[Widget] = []
        for widget in widgets:
            revive = revival(widget) if widget not in keep else None
            if revive is None:
                break
            revives.append(revive)
            leaving.append(widget)
        if not leaving:
            return
        self._capture_view_top()
        from .tool_card import ToolCard

        for widget in leaving:
            if isinstance(widget, ToolCard):
                self._cards.pop(widget.item.call_id, None)
        self._older.add_newest(revives)
        self.remove_children(leaving)
        self._show_marker()

    def hold_older(self, revives: Sequence[Revive]) -> None:
        """Entries to show before whatever is added next (a resumed session's history), mounted
        only when the view scrolls up to them; the entries mounted now (the welcome line) come
        before them, so they are held too."""
        self._retire(self.entries)
        self._older.add_newest(revives)
        self._show_marker()
        self._schedule_load()

    def _show_marker(self) -> None:
        count = len(self._older)
        if count and self._marker is None:
            self._marker = OlderMarker()
            self.mount(self._marker, before=0)
            self._marker.show_count(count)
        if self._marker is not None:
            if count:
                self._sync_marker()
            else:
                marker, self._marker = self._marker, None
                marker.remove()

    def _sync_marker(self) -> None:
        """Show the count of older entries on the marker once the view is within a screen of it.
        Updating it off screen right after a scroll (each load of older entries does) cost
        Textual an arrangement of every widget to find where the marker was."""
        marker = self._marker
        count = len(self._older)
        if marker is None or not count or marker.count == count:
            return
        if self.scroll_y <= self.scrollable_content_region.height or not marker.is_mounted:
            marker.show_count(count)

    # --- scrolling back ---------------------------------------------------------------------

    def _schedule_load(self) -> None:
        if self._older and not self._load_pending and self.is_mounted and self._near_top():
            self._load_pending = True
            self.call_after_refresh(self._load_older)

    def _near_top(self) -> bool:
        if self.scroll_y > self.scrollable_content_region.height * LOAD_MARGIN:
            return False
        # Following the end, the bound on mounted entries holds; scrolled back, it gives way.
        return not self._at_end() or len(self.children) + LOAD_BATCH <= self.max_widgets

    async def _load_older(self) -> None:
        """Mount the newest held entries above the mounted ones; the view does not move."""
        try:
            if not self._older or not self._near_top() or not self.is_attached:
                return
            self._capture_view_top()
            widgets = [revive() for revive in self._older.take_newest(LOAD_BATCH)]
            from .tool_card import ToolCard

            for widget in widgets:
                if isinstance(widget, ToolCard):
                    self._cards.setdefault(widget.item.call_id, widget)
            if self._marker is not None:
                await self.mount_all(widgets, after=self._marker)
            else:
                await self.mount_all(widgets, before=0)
            self._show_marker()
        finally:
            self._load_pending = False
        self.call_after_refresh(self._schedule_load)  # still near the top: the next few

    def _capture_view_top(self) -> None:
        """Remember the first entry on screen and its distance from the top of the view, so a
        change above it does not move it (see ``arrange``). Nothing to remember while the view
        follows the end (Textual's anchor keeps the end in view)."""
        self._keep = None
        arrangement = self._arrangement
        if arrangement is None or self._at_end():
            return
        top = round(self.scroll_y)
        for placement in arrangement.placements:
            if placement.region.bottom > top and placement.widget.parent is self:
                self._keep = (placement.widget, placement.region.y - top)
                return

    def _note_view_top(self) -> None:
        """The view moved: the entry to hold in place is the one now at its top."""
        if self._keep is not None or self._older:
            self._capture_view_top()

    def render_lines(self, crop: Region) -> list[Strip]:
        # The chat's own rows are blank behind its entries, and re-rendered on every frame in
        # which it scrolls or grows: one is rendered and repeated (see render_blank_rows_once).
        return render_blank_rows_once(self, crop, super().render_lines)

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """Lay out the entries, then scroll so the remembered entry stays where it was on screen
        (entries mounted or removed above it, or growing as their Markdown settles, would move it).
        Done here, during the layout, as Textual's anchor does, so no frame shows the jump."""
        arrangement = super().arrange(size, optimal)
        self._arrangement = arrangement
        keep = self._keep
        if keep is None or self._following_end():
            return arrangement
        widget, offset = keep
        for placement in arrangement.placements:
            if placement.widget is widget:
                view = self.container_size.height - self.scrollbar_size_horizontal
                bottom = arrangement.total_region.bottom
                target = max(0, min(placement.region.y - offset, bottom - view))
                if target != round(self.scroll_y):
                    self.set_reactive(ChatView.scroll_y, float(target))
                    self.set_reactive(ChatView.scroll_target_y, float(target))
                    self.vertical_scrollbar._reactive_position = float(target)
                break
        else:
            self._keep = None  # it left the DOM
        return arrangement

    def _following_end(self) -> bool:
        # Textual's anchor is in force: the compositor scrolls to the end after arranging.
        return self.is_anchored and not self._anchor_released

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
            # No frame in between: one drawn while the answer mounted showed an empty box (or none),
            # and the answer's words waited for that frame and the next (15-50 ms each).
            with self.app.batch_update():
                await self.add(self._assistant)
                await self._assistant.append(text, render=True)
            return
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
        from .tool_card import ToolCard

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
        self._older.clear()
        self._marker = None
        self._keep = None
        await self.remove_children()

    def set_raw(self, raw: bool) -> None:
        """Show answers as their Markdown source (``/raw``) or rendered."""
        self.set_class(raw, "-raw")
        if raw:
            for message in self.query(AssistantMessage):
                message.sync_raw()
