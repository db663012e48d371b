"""The scrolling conversation: messages, streamed answers, reasoning and tool cards, in order.

Bounded: once more than ``max_widgets`` children are mounted, the oldest are removed (in chunks,
so pruning is rare), which keeps layout and memory flat in sessions that run all day.
"""

from __future__ import annotations

from textual import events
from textual.containers import VerticalScroll
from textual.widget import Widget

from ..core.types import PreparedItem
from .chat_messages import (
    AssistantMessage,
    ErrorMessage,
    InfoMessage,
    ReasoningBlock,
    UserMessage,
    WelcomeMessage,
)
from .tool_card import ToolCard


class ChatView(VerticalScroll, can_focus=True):
    """The conversation. Engine events arrive through the app, which calls the methods below."""

    def __init__(self, *, max_widgets: int = 400, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_widgets = max(10, max_widgets)
        self._assistant: AssistantMessage | None = None
        self._reasoning: ReasoningBlock | None = None
        self._cards: dict[str, ToolCard] = {}

    def on_resize(self, event: events.Resize) -> None:
        """The content grew (a message mounted, an answer streamed): follow it once it overflows."""
        self._follow()

    def _follow(self) -> None:
        """Stick to the bottom once the conversation overflows (an anchored view that does not
        overflow would sit at the bottom of the screen; a fresh chat reads from the top)."""
        if self.max_scroll_y > 0 and not self.is_anchored:
            self.anchor()

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

    # --- whole view -------------------------------------------------------------------------

    async def clear_chat(self) -> None:
        await self.end_message()
        self._cards.clear()
        await self.remove_children()

    def set_raw(self, raw: bool) -> None:
        """Show answers as their Markdown source (``/raw``) or rendered."""
        self.set_class(raw, "-raw")
        if raw:
            for message in self.query(AssistantMessage):
                message.sync_raw()
