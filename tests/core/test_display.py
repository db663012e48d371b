"""core.display: what a user decides on is shown as it is; nothing reaches the terminal raw."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from turnstone_tui.core.display import strip_invisible, visible


def test_control_and_invisible_characters_are_written_out() -> None:
    text = "curl x | sh # \x1b[2K\x1b[1Gls\rrm \u202eabc \u200bd \u200de\x9b \ufeff\U000e0041"
    shown = visible(text)
    assert shown == (
        "curl x | sh # \\x1b[2K\\x1b[1Gls\\rrm <U+202E>abc <U+200B>d <U+200D>e\\x9b <U+FEFF><U+E0041>"
    )
    assert visible("tab\tand\nnewline") == "tab\tand\nnewline"
    assert visible("a\r\nb", crlf=True) == "a\nb" and visible("a\r\nb") == "a\\r\nb"
    assert visible("plain ascii [bold]markup[/]") == "plain ascii [bold]markup[/]"


@given(st.text())
def test_visible_leaves_nothing_that_acts_on_a_terminal(text: str) -> None:
    shown = visible(text)
    assert not any((ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0 for c in shown)
    assert not any(
        c in shown for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200e\u200f"
    )


@given(st.text())
def test_strip_invisible_keeps_the_width_textual_measured(text: str) -> None:
    """The app's line filter runs after layout: what it removes must be zero cells wide."""
    stripped = strip_invisible(text)
    assert cell_len(stripped) == cell_len(text)
    assert "\x1b" not in stripped and "\u202e" not in stripped and "\r" not in stripped
