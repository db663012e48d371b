"""Textual's Markdown with fewer widgets per block: one per list item instead of four.

Textual renders a list item as ``Horizontal(MarkdownBullet, Vertical(MarkdownParagraph))``. An
answer's lists are mostly one-paragraph items, and every widget costs a mount, a message queue and
a place in each reflow: in a typical streamed section 28 of 37 widgets were list-item scaffolding.
Here an item's first paragraph is a single :class:`MarkdownListLine` that draws the marker and
wraps the text with a hanging indent; whatever else the item holds (a nested list, a fence)
follows, indented past the marker. A quote of one paragraph draws the text itself. It all looks
exactly the same as Textual's own rendering (tests compare every cell and the SVG screenshot).

Every block also computes its component styles (``.em``, ``.strong``, ``.code_inline``, ``.s``, the
list marker) when it first draws one, not when it is mounted: Textual styles each component class
of each block as a virtual node at mount time (four stylesheet passes on top of the block's own),
which was most of the CSS cost of a streamed answer, and most blocks use none of them.

The block classes come from Textual's private ``_markdown`` module (Textual is pinned exactly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content, Span
from textual.css.styles import RenderStyles
from textual.dom import DOMNode
from textual.geometry import Size
from textual.message import Message
from textual.selection import Selection
from textual.widget import AwaitMount, Widget
from textual.widgets import Label, Markdown
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownBlockQuote,
    MarkdownBullet,
    MarkdownBulletList,
    MarkdownFence,
    MarkdownH1,
    MarkdownH2,
    MarkdownH3,
    MarkdownH4,
    MarkdownH5,
    MarkdownH6,
    MarkdownHorizontalRule,
    MarkdownList,
    MarkdownListItem,
    MarkdownOrderedList,
    MarkdownOrderedListItem,
    MarkdownParagraph,
    MarkdownUnorderedListItem,
)

from .chat_messages import WidthArranged
from .clean_lines import CleanLines
from .layout_sized import SizedByLayout

if TYPE_CHECKING:
    from markdown_it.token import Token

MARKER_CLASS = "list-marker"


class LazyComponentStyles(DOMNode):
    """Component styles computed on first use, exactly as Textual computes them at mount.

    Mixed in after a Markdown block class (Textual finds a class's CSS through its first base, and
    this one sits before ``DOMNode`` in the MRO all the same). The stylesheet asks ``_get_component_classes()`` which
    classes to style when it applies itself to the node; saying none skips them there, and
    ``get_component_styles`` (what drawing a ``.em`` span ends up calling) styles a class the
    first time it is asked for. Whatever could change the result drops what was computed: the
    stylesheet applied to the node again (``notify_style_update``), the app's CSS refreshed (a
    theme change), the node's pseudo-classes."""

    _lazy_stamp: tuple[object, ...] | None = None

    def _get_component_classes(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset()

    @classmethod
    def _lazy_component_classes(cls) -> frozenset[str]:
        return DOMNode._get_component_classes.__func__(cls)  # type: ignore[attr-defined]

    def get_component_styles(self, *names: str) -> RenderStyles:
        stamp = (self.app._css_update_count, self._pseudo_classes_cache_key)
        if stamp != self._lazy_stamp:
            self._lazy_stamp = stamp
            self._component_styles.clear()
        known = self._lazy_component_classes()
        for name in names:
            if name in known and name not in self._component_styles:
                virtual_node = DOMNode(classes=name)  # (as Stylesheet._process_component_classes)
                virtual_node._attach(self)
                self.app.stylesheet.apply(virtual_node, animate=False)
                self._component_styles[name] = virtual_node.styles
        return super().get_component_styles(*names)

    def notify_style_update(self) -> None:
        if self._component_styles:
            self._component_styles.clear()
            self.refresh()  # (Textual refreshes a node whose component styles changed)
        super().notify_style_update()


def _lazy(block: type[MarkdownBlock]) -> type[MarkdownBlock]:
    """``block`` with lazy component styles and clean lines, under the same name (so CSS and queries see it as the
    same type)."""
    return type(
        block.__name__, (SizedByLayout, CleanLines, block, LazyComponentStyles), {"__module__": __name__}
    )


LazyParagraph = _lazy(MarkdownParagraph)


class MarkdownListLine(SizedByLayout, CleanLines, MarkdownParagraph, LazyComponentStyles):
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
        if blocks and type(blocks[0]) in _PARAGRAPHS:
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


_PARAGRAPHS = (MarkdownParagraph, LazyParagraph)

Row = tuple[tuple[int, ...], str, Content]
"""One item of a simple list: the widths of the markers it is nested under, its marker, its paragraph."""


def _markers(list_block: MarkdownBlock) -> list[str]:
    """The items' markers, as Textual draws them (ordered: numbered from the first item's
    number, right-aligned)."""
    items = [block for block in list_block._blocks if isinstance(block, MarkdownListItem)]
    if not isinstance(list_block, MarkdownOrderedList):
        return [item.bullet for item in items]
    suffix = ". "
    start = 1
    if items and isinstance(items[0], MarkdownOrderedListItem):
        try:
            start = int(items[0].bullet)
        except ValueError:
            pass
    numbers = range(start, start + len(items))
    width = max((len(f"{number}{suffix}") for number in numbers), default=0)
    return [f"{number}{suffix}".rjust(width + 1) for number in numbers]


def _simple_rows(list_block: MarkdownBlock, indent: tuple[int, ...] = ()) -> list[Row] | None:
    """The rows of a list whose every item is one paragraph (or nothing), maybe followed by one
    such list (nested, depth first); ``None`` for any other list."""
    items = list_block._blocks
    if not items or not all(isinstance(item, MarkdownListItem) for item in items):
        return None
    rows: list[Row] = []
    for item, marker in zip(items, _markers(list_block), strict=True):
        blocks = item._blocks
        if not blocks:  # (an empty item takes no line in Textual; one streams in as "- ")
            rows.append((indent, marker, Content("")))
            continue
        if len(blocks) > 2 or type(blocks[0]) not in _PARAGRAPHS:
            return None
        rows.append((indent, marker, blocks[0]._content))
        if len(blocks) == 2:
            nested = (
                _simple_rows(blocks[1], (*indent, cell_len(marker)))
                if isinstance(blocks[1], MarkdownList)
                else None
            )
            if nested is None:
                return None
            rows.extend(nested)
    return rows


def _marker_text(text: str) -> Content:
    # (spans count characters) The blanks beside an item are styled as its marker, as Textual's
    # bullet column is; as a segment of their own they keep their width in SVG screenshots, where
    # leading spaces of a text run may collapse.
    return Content(text, spans=[Span(0, len(text), f".{MARKER_CLASS}")])


class _RowsList:
    """A list whose items are each one paragraph (and maybe a list of such items below it) is
    drawn by the list widget itself, every item wrapped beside its marker with a hanging indent:
    one widget for the list where Textual mounts four per item (and the compact items one). Any
    other list is composed item by item (:func:`_list_items`).

    While a list streams, Textual's Markdown replaces the last block on every update; a list
    drawn from rows takes the new rows in place instead of being mounted again."""

    _rows: list[Row] | None = None
    _laid_out: tuple[int, Content, list[tuple[bool, int]]] | None = None

    def compose(self) -> ComposeResult:
        assert isinstance(self, MarkdownBlock)
        rows = _simple_rows(self)
        if rows is None:
            yield from _list_items(self, _markers(self))
            return
        self._blocks.clear()
        self._set_rows(rows)

    def _set_rows(self, rows: list[Row]) -> None:
        assert isinstance(self, MarkdownBlock)
        self._rows = rows
        self._laid_out = None
        self.refresh(layout=True)

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        assert isinstance(self, MarkdownBlock)
        if self._rows is not None and type(block) is type(self):
            rows = _simple_rows(block)
            if rows is not None:
                self._copy_context(block)
                self._set_rows(rows)
                return
        await super()._update_from_block(block)  # type: ignore[misc]

    def _lay_out(self, width: int) -> tuple[Content, list[tuple[bool, int]]]:
        """The rows at ``width`` cells, one line of Content per screen line; and for each line,
        whether it starts an item and the width of its indent and marker."""
        if self._laid_out is not None and self._laid_out[0] == width:
            return self._laid_out[1], self._laid_out[2]
        lines: list[Content] = []
        owners: list[tuple[bool, int]] = []
        for indent, marker, content in self._rows or ():
            if not content:
                continue  # (Textual draws an empty item as nothing at all, marker included)
            # A blank per marker the item is nested under, as Textual's bullet columns are.
            nesting = Content("").join(_marker_text(" " * blank) for blank in indent)
            lead = sum(indent) + cell_len(marker)
            wrapped = content.wrap(max(1, width - lead)) or [Content("")]
            lines.append(nesting + _marker_text(marker) + wrapped[0])
            owners.append((True, lead))
            hanging = nesting + _marker_text(" " * cell_len(marker))
            for line in wrapped[1:]:
                lines.append(hanging + line)
                owners.append((False, lead))
        laid_out = Content("\n").join(lines)
        self._laid_out = (width, laid_out, owners)
        return laid_out, owners

    def render(self) -> Content:
        assert isinstance(self, MarkdownBlock)
        if self._rows is None:
            return super().render()  # type: ignore[misc]
        return self._lay_out(self.content_size.width)[0]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self._rows is None:
            return super().get_content_height(container, viewport, width)  # type: ignore[misc]
        return len(self._lay_out(width)[1]) if width else 0

    def get_content_width(self, container: Size, viewport: Size) -> int:
        if self._rows is None:
            return super().get_content_width(container, viewport)  # type: ignore[misc]
        assert isinstance(self, MarkdownBlock)
        return max(
            (
                sum(indent) + cell_len(marker) + content.get_optimal_width(self.styles, container.width)
                for indent, marker, content in self._rows
            ),
            default=0,
        )

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected items as text, one line each (with their marker and the indent of their
        nesting): the lines an item wrapped onto are joined again without the hanging indent."""
        if self._rows is None:
            return super().get_selection(selection)  # type: ignore[misc]
        assert isinstance(self, MarkdownBlock)
        width = self.content_size.width
        if not width:
            return None
        laid_out, owners = self._lay_out(width)
        first = 0 if selection.start is None else selection.start.transpose[0]
        picked: list[str] = []
        for index, line in enumerate(selection.extract(laid_out.plain).split("\n"), first):
            starts_item, lead = owners[min(index, len(owners) - 1)]
            if starts_item:
                picked.append(line)
                continue
            tail = line[lead:] if line.startswith(" " * lead) else line
            if picked:
                picked[-1] += " " + tail
            else:
                picked.append(tail)
        return "\n".join(picked), "\n"


_ROWS_CSS = """
{name} > .list-marker {{
    color: $text-primary;
}}
{name}:light > .list-marker {{
    color: $text-secondary;
}}
"""


class CompactBulletList(SizedByLayout, CleanLines, _RowsList, MarkdownBulletList, LazyComponentStyles):
    COMPONENT_CLASSES = {MARKER_CLASS}
    DEFAULT_CSS = _ROWS_CSS.format(name="CompactBulletList")


class CompactOrderedList(SizedByLayout, CleanLines, _RowsList, MarkdownOrderedList, LazyComponentStyles):
    COMPONENT_CLASSES = {MARKER_CLASS}
    DEFAULT_CSS = _ROWS_CSS.format(name="CompactOrderedList")


class FlatFence(SizedByLayout, CleanLines, MarkdownFence, LazyComponentStyles):
    """A code block whose lines fit the width draws its code itself: one widget where Textual
    mounts a scrolling fence and a label in it. Code wider than the fence (written so, streamed
    longer, or narrowed by a resize) gets Textual's label back, and with it horizontal scrolling."""

    _highlighted_for: tuple[str, str, bool, bool] | None = None  # what _highlighted_code was made from

    DEFAULT_CSS = """
    FlatFence.-flat {
        padding: 1 2;
        &:ansi {
            padding: 1 0;
        }
    }
    """

    def __init__(self, markdown: Markdown, token: Token, code: str) -> None:
        super().__init__(markdown, token, code)  # (highlights the code)
        self._highlighted_for = self._highlight_key()

    def _highlight_key(self) -> tuple[str, str, bool, bool]:
        return (self.code, self.lexer, self.app.native_ansi_color, self.app.current_theme.dark)

    def notify_style_update(self) -> None:
        """Highlight the code again only if the code or the theme changed. Textual's fence does it
        on every restyle: a fence was highlighted (pygments, ~1.5 ms for 12 lines) three times
        on its way to the screen, when made, when mounted and when it took the class ``-flat``."""
        key = self._highlight_key()
        if key != self._highlighted_for:
            self._highlighted_for = key
            self._highlighted_code = self.highlight(self.code, self.lexer, ansi=key[2], dark=key[3])
            self.set_content(self._highlighted_code)
        super(MarkdownFence, self).notify_style_update()  # (not MarkdownFence's: it highlights)

    def _copy_context(self, block: MarkdownBlock) -> None:
        super()._copy_context(block)
        if isinstance(block, FlatFence):
            self._highlighted_for = block._highlighted_for

    def _fits(self, content: Content) -> bool:
        # Its width on screen once laid out; before that, its parent's or the screen's (a fence
        # that turns out narrower gets the label when it is laid out: see on_resize).
        parent = self.parent
        width = (
            self.region.width
            or (parent.size.width if isinstance(parent, Widget) else 0)
            or (self.app.size.width if self.is_attached else 0)
        )
        padding = 0 if self.app.native_ansi_color else 4  # (the label's: 2 a side, none in ANSI mode)
        widest = max((line.cell_length for line in content.split("\n", allow_blank=True)), default=0)
        return bool(width) and widest + padding <= width

    def compose(self) -> ComposeResult:
        if self._fits(self._highlighted_code):
            self.add_class("-flat")
            self.update(self._highlighted_code)
            return
        yield from super().compose()

    @property
    def flat(self) -> bool:
        return self.has_class("-flat")

    def set_content(self, content: Content) -> None:
        self._content = content
        if not self.flat:
            super().set_content(content)
        elif self._fits(content):
            self.update(content)
        else:
            self._unflatten()

    def on_resize(self, event: events.Resize) -> None:
        if self.flat and not self._fits(self._content or self._highlighted_code):
            self._unflatten()

    def _unflatten(self) -> None:
        self.remove_class("-flat")
        self.update("")
        self.mount(Label(self._content or self._highlighted_code, id="code-content", expand=True))


class CompactBlockQuote(SizedByLayout, CleanLines, MarkdownBlockQuote, LazyComponentStyles):
    """A quote of one paragraph draws the paragraph's text itself (one widget instead of two)."""

    def compose(self) -> ComposeResult:
        if len(self._blocks) == 1 and type(self._blocks[0]) in _PARAGRAPHS:
            self.set_content(self._blocks[0]._content)
            self._blocks.clear()
            return
        yield from super().compose()


_HEADINGS = (MarkdownH1, MarkdownH2, MarkdownH3, MarkdownH4, MarkdownH5, MarkdownH6)


class AnswerMarkdown(Markdown, WidthArranged):
    """The Markdown widget the chat streams answers into.

    ``trim_leading_heading``: a heading that opens the document is mounted without its top margin
    (the chat already spaces its entries; an answer's first chunk). Not a ``:first-child`` rule
    (see styles/main.tcss), and not a fix-up once blocks are mounted: while a heading is the last
    block, Textual's ``Markdown.append`` replaces it with a new widget on every append, CSS margin
    and all, and the last such append can still be mounting after the answer has finished (a
    stream's append outlives its ``stop()``), so a fix-up made at flush or finish missed it and the
    answer kept two blank rows over its heading for good. The one place every block of the
    document passes through is this widget's ``mount``, before its first layout."""

    class Resized(Message):
        """The document's size on screen changed (its chunk checks a pinned height against it)."""

    def __init__(
        self, markdown: str | None = None, *, trim_leading_heading: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(markdown, **kwargs)
        self.trim_leading_heading = trim_leading_heading

    def mount(
        self,
        *widgets: Widget,
        before: int | str | Widget | None = None,
        after: int | str | Widget | None = None,
    ) -> AwaitMount:
        # Textual mounts the document's blocks at its end, the old ones removed first (update) or
        # the replaced last block removed first (append): a block mounted into an empty document
        # is its first.
        if (
            self.trim_leading_heading
            and widgets
            and isinstance(widgets[0], _HEADINGS)
            and before is None
            and after is None
            and not self.children
        ):
            widgets[0].styles.margin = (0, 0, 1, 0)
        return super().mount(*widgets, before=before, after=after)

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())

    BLOCKS = {
        **Markdown.BLOCKS,
        **{f"h{level}": _lazy(block) for level, block in enumerate(_HEADINGS, 1)},
        "hr": _lazy(MarkdownHorizontalRule),
        "paragraph_open": LazyParagraph,
        "list_item_ordered_open": _lazy(MarkdownOrderedListItem),
        "list_item_unordered_open": _lazy(MarkdownUnorderedListItem),
        "fence": FlatFence,
        "code_block": FlatFence,
        "bullet_list_open": CompactBulletList,
        "ordered_list_open": CompactOrderedList,
        "blockquote_open": CompactBlockQuote,
    }
