"""Textual's Markdown with fewer widgets per block: one per list item instead of four.

Textual renders a list item as ``Horizontal(MarkdownBullet, Vertical(MarkdownParagraph))``. An
answer's lists are mostly one-paragraph items, and every widget costs a mount, a message queue and
a place in each reflow: in a typical streamed section 28 of 37 widgets were list-item scaffolding.
Here an item's first paragraph is a single :class:`MarkdownListLine` that draws the marker and
wraps the text with a hanging indent; whatever else the item holds (a nested list, a fence)
follows, indented past the marker. A quote of one paragraph draws the text itself. It all looks
exactly the same as Textual's own rendering (tests compare every cell and the SVG screenshot).

The block classes come from Textual's private ``_markdown`` module (Textual is pinned exactly).
"""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content, Span
from textual.geometry import Size
from textual.message import Message
from textual.selection import Selection
from textual.widgets import Markdown
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownBlockQuote,
    MarkdownBullet,
    MarkdownBulletList,
    MarkdownList,
    MarkdownListItem,
    MarkdownOrderedList,
    MarkdownOrderedListItem,
    MarkdownParagraph,
)

MARKER_CLASS = "list-marker"


class MarkdownListLine(MarkdownParagraph):
    """A list item holding one paragraph: the marker, then the text wrapped beside it."""

    COMPONENT_CLASSES = MarkdownParagraph.COMPONENT_CLASSES | {MARKER_CLASS}

    DEFAULT_CSS = """
    MarkdownListLine > .list-marker {
        color: $text-primary;
    }
    MarkdownListLine:light > .list-marker {
        color: $text-secondary;
    }
    """

    def __init__(self, paragraph: MarkdownParagraph, marker: str) -> None:
        super().__init__(paragraph._markdown, paragraph._token, paragraph.source_range)
        self.marker = marker
        self._wrapped: tuple[int, Content] | None = None
        self.set_content(paragraph._content)

    def set_content(self, content: Content) -> None:
        self._wrapped = None
        super().set_content(content)

    def _lines(self, width: int) -> Content:
        """The item laid out at ``width`` cells: one line of Content per screen line."""
        if self._wrapped is not None and self._wrapped[0] == width:
            return self._wrapped[1]
        marker = Content(
            self.marker, spans=[Span(0, len(self.marker), f".{MARKER_CLASS}")]
        )  # (spans count characters)
        # The indent is styled as the marker (blank either way): as a segment of its own it keeps
        # its width in SVG screenshots, where leading spaces of a text run may collapse.
        indent = Content(" " * marker.cell_length, spans=[Span(0, marker.cell_length, f".{MARKER_CLASS}")])
        body_width = max(1, width - marker.cell_length)
        lines = self._content.wrap(body_width) or [Content("")]
        laid_out = Content("\n").join([marker + lines[0], *(indent + line for line in lines[1:])])
        self._wrapped = (width, laid_out)
        return laid_out

    def render(self) -> Content:
        return self._lines(self.content_size.width)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text as the paragraph's, not as laid out here: the lines this widget
        wrapped are joined again and the hanging indent dropped (copying a list item gives
        "• text", as Textual's bullet and paragraph widgets do)."""
        width = self.content_size.width
        if not width:
            return None
        lines = selection.extract(self._lines(width).plain).split("\n")
        indent = " " * cell_len(self.marker)
        tail = [line[len(indent) :] if line.startswith(indent) else line for line in lines[1:]]
        return " ".join([lines[0], *tail]), "\n"

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not width:
            return 0
        return len(self._lines(width).split(allow_blank=True))

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return cell_len(self.marker) + self._content.get_optimal_width(self.styles, container.width)


def _list_items(list_block: MarkdownBlock, markers: list[str]) -> ComposeResult:
    items = [block for block in list_block._blocks if isinstance(block, MarkdownListItem)]
    for item, marker in zip(items, markers, strict=True):
        blocks = item._blocks
        if blocks and type(blocks[0]) is MarkdownParagraph:
            yield MarkdownListLine(blocks[0], marker)
            # The rest of the item (a nested list, a fence, more paragraphs) goes below,
            # indented past the marker, as in Textual's column beside the bullet.
            if len(blocks) == 2 and isinstance(blocks[1], MarkdownList):
                nested = blocks[1]  # (a nested list has no margin of its own to keep)
                nested.styles.margin = (0, 0, 0, cell_len(marker))
                yield nested
            elif len(blocks) > 1:
                rest = Vertical(*blocks[1:], classes="list-item-rest")
                rest.styles.margin = (0, 0, 0, cell_len(marker))
                yield rest
        else:
            bullet = MarkdownBullet()
            bullet.symbol = marker
            yield Horizontal(bullet, Vertical(*blocks))
    list_block._blocks.clear()


class CompactBulletList(MarkdownBulletList):
    def compose(self) -> ComposeResult:
        markers = [block.bullet for block in self._blocks if isinstance(block, MarkdownListItem)]
        yield from _list_items(self, markers)


class CompactOrderedList(MarkdownOrderedList):
    def compose(self) -> ComposeResult:
        # Numbered as Textual numbers them: from the first item's number, right-aligned.
        suffix = ". "
        start = 1
        if self._blocks and isinstance(self._blocks[0], MarkdownOrderedListItem):
            try:
                start = int(self._blocks[0].bullet)
            except ValueError:
                pass
        count = sum(1 for block in self._blocks if isinstance(block, MarkdownListItem))
        numbers = range(start, start + count)
        width = max((len(f"{number}{suffix}") for number in numbers), default=0)
        markers = [f"{number}{suffix}".rjust(width + 1) for number in numbers]
        yield from _list_items(self, markers)


class CompactBlockQuote(MarkdownBlockQuote):
    """A quote of one paragraph draws the paragraph's text itself (one widget instead of two)."""

    def compose(self) -> ComposeResult:
        if len(self._blocks) == 1 and type(self._blocks[0]) is MarkdownParagraph:
            self.set_content(self._blocks[0]._content)
            self._blocks.clear()
            return
        yield from super().compose()


class AnswerMarkdown(Markdown):
    """The Markdown widget the chat streams answers into."""

    class Resized(Message):
        """The document's size on screen changed (its chunk checks a pinned height against it)."""

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())

    BLOCKS = {
        **Markdown.BLOCKS,
        "bullet_list_open": CompactBulletList,
        "ordered_list_open": CompactOrderedList,
        "blockquote_open": CompactBlockQuote,
    }
