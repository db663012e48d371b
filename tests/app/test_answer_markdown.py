"""AnswerMarkdown draws a simple list as one widget and other lists' simple items as one widget each;
it must look exactly like Textual's Markdown."""

from __future__ import annotations

import re

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Markdown

from turnstone_tui.widgets.answer_markdown import (
    AnswerMarkdown,
    CompactBulletList,
    CompactOrderedList,
    MarkdownListLine,
)

LISTS = """Intro.

- a short item
- an item with **bold**, `code` and a [link](https://example.com/docs) that is long enough to wrap
  around at least once or twice on a narrow screen
- item with nested
  - nested one
  - nested two that is also long enough to wrap at the narrow width we use here
- an item with code:

  ```python
  print("in the item")
  ```
- a loose item

  with a second paragraph that wraps because it is long enough to wrap on a narrow screen
- last

7. seven
8. eight, which wraps because it is long enough to wrap on this narrow screen width
9. nine
10. ten

* loose item one

* loose item two

1.
2. an empty item above

> a quote of one paragraph with **bold** text that is long enough to wrap on a narrow screen
lazy continuation

> a quote of two paragraphs
>
> the second one
> > and a nested quote

- top one, with `code`
- top two, which is long enough to wrap on a narrow screen as it goes on and on
  1. nested ordered one
  2. nested ordered two, which is also long enough to wrap at the narrow width
     - deeper, with a [link](https://example.com/deep), long enough to wrap as well
- top three

After.
"""


class MarkdownApp(App[None]):
    def __init__(self, widget: type[Markdown], theme: str, source: str = LISTS) -> None:
        super().__init__()
        self.widget = widget
        self.source = source
        self.start_theme = theme
        self.clicked: list[str] = []

    def compose(self) -> ComposeResult:
        yield self.widget(self.source, open_links=False)

    def on_mount(self) -> None:
        self.theme = self.start_theme

    def on_markdown_link_clicked(self, message: Markdown.LinkClicked) -> None:
        self.clicked.append(message.href)


Cell = tuple[str, str]


def screen_cells(app: App[None]) -> list[list[Cell]]:
    """Each screen cell as (character, style); a blank cell only by its background (a blank's
    foreground colour is invisible). Selection offsets in the styles' metadata are ignored."""
    lines = []
    for strip in app.screen._compositor.render_strips():
        cells: list[Cell] = []
        for segment in strip:
            style = segment.style
            for char in segment.text:
                shown = str(style.bgcolor if style else None) if char == " " else str(style)
                cells.append((char, shown))
        lines.append(cells)
    return lines


async def render(widget: type[Markdown], theme: str, width: int) -> tuple[list[list[Cell]], str]:
    """The screen's cells and its SVG screenshot (as snapshot tests store it; ids normalised)."""
    app = MarkdownApp(widget, theme)
    async with app.run_test(size=(width, 72)) as pilot:
        await pilot.pause()
        return screen_cells(app), re.sub(r"terminal-\d+", "terminal", app.export_screenshot())


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
@pytest.mark.parametrize("width", [36, 61, 100])
async def test_lists_look_exactly_like_textuals_markdown(theme: str, width: int) -> None:
    stock, stock_svg = await render(Markdown, theme, width)
    compact, compact_svg = await render(AnswerMarkdown, theme, width)
    assert ["".join(char for char, _ in line) for line in compact] == [
        "".join(char for char, _ in line) for line in stock
    ]
    assert compact == stock
    texts = ["".join(char for char, _ in line) for line in compact]
    assert any("nested two" in text for text in texts) and any("After." in text for text in texts)
    assert compact_svg == stock_svg


async def test_simple_lists_are_one_widget_and_other_lists_one_per_simple_item() -> None:
    nested_two = "nested two that is also long enough to wrap at the narrow width we use here"
    app = MarkdownApp(AnswerMarkdown, "textual-dark")
    async with app.run_test(size=(80, 44)) as pilot:
        await pilot.pause()
        markdown = app.query_one(AnswerMarkdown)
        lists = [
            block for block in markdown.children if isinstance(block, (CompactBulletList, CompactOrderedList))
        ]
        # The first list holds a fence and a two-paragraph item: composed item by item (its
        # nested list is drawn whole); the others are drawn whole, with no widgets inside.
        assert [len(block.children) > 0 for block in lists] == [True, False, False, False, False]
        rows = lists[4]._rows
        assert rows is not None
        assert [(indent, marker) for indent, marker, _ in rows] == [
            ((), "• "),
            ((), "• "),
            ((2,), " 1. "),
            ((2,), " 2. "),
            ((2, 4), "▪ "),
            ((), "• "),
        ]
        assert [marker for _, marker, content in lists[1]._rows or []] == ["  7. ", "  8. ", "  9. ", " 10. "]
        assert [content.plain for _, _, content in lists[3]._rows or []] == ["", "an empty item above"]
        nested = lists[0].query_one(CompactBulletList)
        assert [content.plain for _, _, content in nested._rows or []] == ["nested one", nested_two]
        texts = [line._content.plain for line in app.query(MarkdownListLine)]
        assert "a short item" in texts and "item with nested" in texts and "an item with code:" in texts
        assert "with a second paragraph" not in "".join(texts) and "nested one" not in texts


async def test_a_streamed_list_grows_in_place_and_ends_as_rendered_whole() -> None:
    """Textual's Markdown replaces the last block on every append: a list mounted again (with a
    widget per item) on every streamed update. A list drawn whole takes the new items in place."""
    source = LISTS.split("- top one")[0]
    tail = "- top one" + LISTS.split("- top one")[1]
    app = MarkdownApp(AnswerMarkdown, "textual-dark", source="")
    app_whole = MarkdownApp(AnswerMarkdown, "textual-dark")
    async with app.run_test(size=(60, 50)) as pilot:
        markdown = app.query_one(AnswerMarkdown)
        await markdown.append(source)
        await pilot.pause()
        await markdown.append(tail[:20])
        await pilot.pause()
        growing = markdown.children[-1]
        assert isinstance(growing, CompactBulletList) and growing._rows is not None
        for start in range(20, len(tail), 7):
            await markdown.append(tail[start : start + 7])
            await pilot.pause()
            assert growing.parent is markdown  # the same widget, never mounted again
        await pilot.pause()
        streamed = screen_cells(app)
    async with app_whole.run_test(size=(60, 50)) as pilot:
        await pilot.pause()
        assert screen_cells(app_whole) == streamed


async def test_a_link_in_a_compact_list_item_is_clickable() -> None:
    app = MarkdownApp(AnswerMarkdown, "textual-dark")
    async with app.run_test(size=(80, 44)) as pilot:
        await pilot.pause()
        item = next(line for line in app.query(MarkdownListLine) if "link" in line._content.plain)
        row = next(
            y
            for y, text in enumerate(strip.text for strip in item.render_lines(item.region.reset_offset))
            if "link" in text
        )
        column = next(
            strip.text.index("link")
            for strip in item.render_lines(item.region.reset_offset)
            if "link" in strip.text
        )
        await pilot.click(item, offset=(column + 1, row))
        await pilot.pause()
        assert app.clicked == ["https://example.com/docs"]


async def test_switching_theme_restyles_compact_items_as_textual_does() -> None:
    async def switched(widget: type[Markdown]) -> list[list[Cell]]:
        app = MarkdownApp(widget, "textual-dark")
        async with app.run_test(size=(60, 50)) as pilot:
            await pilot.pause()
            dark = screen_cells(app)
            app.theme = "textual-light"
            await pilot.pause()
            await pilot.pause()
            light = screen_cells(app)
            assert light != dark
            return light

    assert await switched(AnswerMarkdown) == await switched(Markdown)


async def test_copying_a_wrapped_compact_item_gives_its_text_not_its_layout() -> None:
    app = MarkdownApp(AnswerMarkdown, "textual-dark")
    async with app.run_test(size=(60, 60)) as pilot:
        await pilot.pause()
        app.query_one(AnswerMarkdown).text_select_all()
        await pilot.pause()
        copied = app.screen.get_selected_text() or ""
    lines = copied.splitlines()
    # The item wrapped on screen (60 columns) but is one line when copied, as Textual copies it.
    assert (
        "• an item with bold, code and a link that is long enough to wrap around at least once or twice "
        "on a narrow screen"
    ) in lines
    assert "  8. eight, which wraps because it is long enough to wrap on this narrow screen width" in lines
    assert not any(line.strip().startswith("around at least") for line in lines)


async def test_blocks_style_their_inline_classes_when_drawn_not_when_mounted(monkeypatch) -> None:
    """Textual styles every block's four inline classes (em, strong, s, code_inline) as virtual
    nodes when it is mounted: five stylesheet passes per block where one is needed, which made
    styling most of the cost of mounting a streamed answer. Here a block styles a class when it
    first draws one; what is drawn is the same (the tests above compare every cell)."""
    from textual.css.stylesheet import Stylesheet

    applied: list[str] = []
    apply = Stylesheet.apply

    def counted(self: Stylesheet, node, **kwargs) -> None:  # noqa: ANN001
        applied.append(type(node).__name__)
        apply(self, node, **kwargs)

    document = "\n\n".join(f"Paragraph {n} with **bold** and `code`." for n in range(60))

    class Long(App[None]):
        def compose(self) -> ComposeResult:
            yield AnswerMarkdown(document)

    app = Long()
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        monkeypatch.setattr(Stylesheet, "apply", counted)
        await app.query_one(AnswerMarkdown).append("\n\n" + document)
        await pilot.pause()
        monkeypatch.undo()
        blocks = len(app.query_one(AnswerMarkdown).children)
        text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
    assert blocks >= 119 and "Paragraph 0 with bold and code." in text
    # One pass per new block (60 of them) and a few for what the screen shows; 300 more before.
    assert len(applied) < 100, f"{len(applied)} stylesheet passes for 60 new blocks"


SECTION = """## Section {n}: what the build does

The build step number {n} reads the **configuration** and resolves `dependencies`.

- item one of section {n}, with `inline code`
- item two, which is a little longer so that it wraps on a narrow terminal window
  - a nested point
- item three

1. first step of {n}
2. second step
3. third step

```python
def step_{n}() -> int:
    return {n}
```

> Note: the cache lives next to the sources; delete it to force a clean build.

"""


async def test_a_long_answer_mounts_a_few_widgets_per_section() -> None:
    """Each widget costs a mount, a message queue and a place in every layout pass. A section of
    a typical answer (heading, paragraph, two lists, a fence, a quote) was 15 widgets, ten of them
    list scaffolding and two the fence; each list is now one, and a fence that fits the width."""
    document = "".join(SECTION.format(n=n) for n in range(20))

    class Long(App[None]):
        def compose(self) -> ComposeResult:
            yield AnswerMarkdown(document)

    app = Long()
    async with app.run_test(size=(70, 30)) as pilot:
        await pilot.pause()
        markdown = app.query_one(AnswerMarkdown)
        widgets = len(list(markdown.walk_children()))
        lines = [strip.text for strip in app.screen._compositor.render_strips()]
    assert widgets <= 6 * 20, f"{widgets} widgets for 20 sections"
    assert any("• item two, which is a little longer so that it wraps on a" in line for line in lines)
    assert any("  ▪ a nested point" in line for line in lines)
    assert any(" 3. third step" in line for line in lines)


async def test_a_list_drawn_whole_keeps_links_clickable_and_copies_item_by_item() -> None:
    app = MarkdownApp(AnswerMarkdown, "textual-dark")
    async with app.run_test(size=(40, 90)) as pilot:
        await pilot.pause()
        drawn = next(
            block
            for block in app.query(CompactBulletList)
            if any("deeper" in content.plain for _, _, content in block._rows or [])
        )
        lines = [strip.text for strip in drawn.render_lines(drawn.region.reset_offset)]
        row = next(y for y, text in enumerate(lines) if "link" in text)
        await pilot.click(drawn, offset=(lines[row].index("link") + 1, row))
        await pilot.pause()
        assert app.clicked == ["https://example.com/deep"]
        app.query_one(AnswerMarkdown).text_select_all()
        await pilot.pause()
        copied = (app.screen.get_selected_text() or "").splitlines()
    # Wrapped on screen (40 columns), one line each when copied; nested items keep their indent.
    assert "• top two, which is long enough to wrap on a narrow screen as it goes on and on" in copied
    assert "   2. nested ordered two, which is also long enough to wrap at the narrow width" in copied
    assert "      ▪ deeper, with a link, long enough to wrap as well" in copied


FENCES = """Before.

```python
def short(x: int) -> int:
    return x + 1
```

```
a line of plain code that is long enough not to fit a narrow screen at all, so it scrolls
```

After.
"""


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
@pytest.mark.parametrize("width", [36, 61, 120])
async def test_fences_look_exactly_like_textuals_and_a_narrow_one_is_one_widget(
    theme: str, width: int
) -> None:
    async def rendered(widget: type[Markdown]) -> tuple[list[list[Cell]], str, list[int]]:
        app = MarkdownApp(widget, theme, source=FENCES)
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.pause()
            svg = re.sub(r"terminal-\\d+", "terminal", app.export_screenshot())
            fences = [len(list(fence.walk_children())) for fence in app.query("MarkdownFence")]
            return screen_cells(app), svg, fences

    stock, stock_svg, _ = await rendered(Markdown)
    compact, compact_svg, fences = await rendered(AnswerMarkdown)
    assert compact == stock
    assert compact_svg == stock_svg
    # The short fence has no label inside at any of these widths; the long one only where it is
    # wider than the screen (it scrolls there).
    assert fences == [0, 1 if width < 100 else 0]


async def test_a_fence_streamed_or_resized_past_the_width_scrolls_as_textuals() -> None:
    async def final(widget: type[Markdown], streamed: bool, width: int) -> tuple[list[list[Cell]], list[int]]:
        app = MarkdownApp(widget, "textual-dark", source="" if streamed else FENCES)
        async with app.run_test(size=(width, 30)) as pilot:
            markdown = app.query_one(widget)
            if streamed:  # (at 36 columns the long line grows past the width as it streams)
                for start in range(0, len(FENCES), 9):
                    await markdown.append(FENCES[start : start + 9])
                    await pilot.pause()
            await pilot.pause()
            if width != 36:
                await pilot.resize_terminal(36, 30)
                await pilot.pause()
                await pilot.pause()
            fences = [len(list(fence.walk_children())) for fence in app.query("MarkdownFence")]
            return screen_cells(app), fences

    stock, _ = await final(Markdown, streamed=False, width=120)
    for streamed, width in [(False, 120), (True, 120), (True, 36)]:
        cells, fences = await final(AnswerMarkdown, streamed, width)
        assert cells == stock, (streamed, width)
        # The short fence is one widget; the long one has Textual's label (and scrolls).
        assert fences == [0, 1], (streamed, width)
