"""No control or invisible format character reaches the terminal from widgets that skip the app's
line filter (widgets/clean_lines.py): the answer's Markdown blocks and the chat's user, info and
error entries clean each line as they render it, before Textual's caches, so the filter (a second
Strip for every line) is not applied to them. Text from the model, a tool, an MCP server or a file
reaches these widgets through many paths (answer text, code blocks, list items, quotes, headings,
error messages, the user's own prompt); the test is what the widget draws, whatever the path."""

from __future__ import annotations

from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from tests.app.helpers import send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.line_filter import InvisibleFilter
from turnstone_tui.core.display import strip_invisible
from turnstone_tui.widgets.chat_messages import ErrorMessage
from turnstone_tui.widgets.clean_lines import CleanLines, clean_strip

EVIL = "\x1b[2K\x1b[1G\x1b]2;PWNED\x07\u202e\u200b\x7f\x9b"
"""Erase the line, go to its start, retitle the window, a bidi override, a zero-width space, DEL, CSI."""

ANSWER = f"""## Head{EVIL}ing

A para{EVIL}graph with `co{EVIL}de` and a [li{EVIL}nk](https://example.com/{EVIL}).

- bul{EVIL}let one
- bullet two
  - nest{EVIL}ed

1. first{EVIL}
2. second

- an item{EVIL}

  with a second paragraph{EVIL}

> a quo{EVIL}te

```python
print("fen{EVIL}ce")
```

The end{EVIL}.
"""

SKIPPING = {
    "MarkdownH2",
    "MarkdownParagraph",
    "CompactBulletList",
    "CompactOrderedList",
    "MarkdownListLine",
    "CompactBlockQuote",
    "FlatFence",
    "UserMessage",
    "ErrorMessage",
    "InfoMessage",
}
"""The classes this test sees skip the filter (so it exercises each one's own cleaning)."""


def dirty(strips: list[Strip]) -> list[str]:
    return [s.text for s in strips if any(strip_invisible(seg.text) != seg.text for seg in s)]


def drawn(widget: Widget) -> list[Strip]:
    """What the compositor takes from ``widget``: its lines after its line filters."""
    width, height = widget.outer_size
    return widget.render_lines(Region(0, 0, width, height)) if width and height else []


async def test_widgets_that_skip_the_line_filter_draw_no_control_character(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text(ANSWER), Reply.error(400, f"bad re{EVIL}quest")])
    async with app.run_test(size=(120, 90)) as pilot:
        await start(pilot)
        await send(pilot, "show me")
        await send(pilot, "again")
        await wait_until(pilot, lambda: app.query(ErrorMessage), 30, "the error")
        await app.chat.add_info(f"an MCP server's no{EVIL}tice")  # (notices quote servers, paths, tools)
        await app.chat.add_user(f"a pasted pro{EVIL}mpt")  # (the user's text: pasted, recalled, resumed)
        app.query_one("#chat", Widget).scroll_home(animate=False)
        await pilot.pause(0.3)
        skipping: set[str] = set()
        for widget in app.screen.walk_children(Widget):
            filters = widget.get_line_filters()
            if not any(isinstance(f, InvisibleFilter) for f in filters):
                assert isinstance(widget, CleanLines), f"{widget!r} skips the filter without cleaning"
                skipping.add(type(widget).__name__)
            assert not dirty(drawn(widget)), widget
        assert SKIPPING <= skipping, SKIPPING - skipping
        # (and the text is there, without the characters)
        screen_text = "\n".join(s.text for w in app.screen.walk_children(Widget) for s in drawn(w))
        for piece in (
            "Head",
            "graph with",
            "let one",
            "nest",
            "first",
            "an item",
            "quo",
            "fen",
            "The end",
            "bad re",
            "an MCP server",
            "a pasted pro",
        ):
            assert piece in screen_text, piece


async def test_a_clean_lines_widget_with_a_hostile_title_keeps_the_filter(app: TurnstoneApp) -> None:
    class Note(CleanLines, Static):
        pass

    async with app.run_test() as pilot:
        await start(pilot)
        note = Note(f"body{EVIL}", classes="note")
        note.styles.border = ("round", "white")
        note.styles.height = 5
        note.styles.dock = "top"
        await app.screen.mount(note)
        await pilot.pause()
        others = [f for f in app.get_line_filters() if not isinstance(f, InvisibleFilter)]
        assert list(note.get_line_filters()) == others  # (Textual's colour filters stay)
        assert not dirty(drawn(note))
        note.border_title = f"title{EVIL}"
        await pilot.pause()
        assert any(isinstance(f, InvisibleFilter) for f in note.get_line_filters())
        assert not dirty(drawn(note))
        assert "title" in drawn(note)[0].text


def test_clean_strip_copies_only_a_line_that_needs_it() -> None:
    clean = Strip([Segment("plain "), Segment("text")])
    assert clean_strip(clean) is clean
    hostile = Strip([Segment(f"a{EVIL}b"), Segment("\u200dc")])  # (ZWJ joins emoji: kept)
    cleaned = clean_strip(hostile)
    assert cleaned.text == "a[2K[1G]2;PWNEDb\u200dc"  # (what is left of the sequences is plain text)
    assert cleaned.cell_length == hostile.cell_length
