"""The inbox: watch results that fired for sessions open nowhere, waiting to be delivered.

A result is delivered (as a message in its conversation, which the model answers) when its
session is resumed; enter here opens that session.
"""

from __future__ import annotations

import time
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, OptionList, Static
from textual.widgets.option_list import Option

from ...core.resources import styles_dir

PREVIEW_CHARS = 2000


def _age(timestamp: Any, now: float) -> str:
    """``fired 3m ago`` (s, m, h, d)."""
    try:
        seconds = max(0.0, now - float(timestamp))
    except (TypeError, ValueError):
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"fired {int(seconds // size)}{unit} ago"
    return f"fired {int(seconds)}s ago"


def _one_line(text: Any, width: int) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


def result_label(row: dict[str, Any], now: float) -> Content:
    about = row.get("session_name") or row.get("first_prompt") or "(untitled)"
    first_line = str(row.get("text") or "").strip().splitlines()[:1]
    return Content.assemble(
        (str(row.get("name") or "watch"), "bold"),
        ("  ", ""),
        (_age(row.get("created"), now), "dim"),
        ("  session ", "dim"),
        (str(row.get("session_id", ""))[:12], "bold"),
        ("  ", ""),
        _one_line(about, 40),
        "\n  ",
        (_one_line(first_line[0] if first_line else "", 84), "dim"),
    )


class InboxScreen(ModalScreen[str | None]):
    """The waiting results (oldest first); enter opens the result's session (it is delivered
    there), esc closes."""

    CSS_PATH = styles_dir() / "inbox.tcss"
    AUTO_FOCUS = "#inbox-list"
    BINDINGS = [Binding("escape", "close", "Close"), Binding("enter", "open", "Open session", show=True)]

    def __init__(self, results: list[dict[str, Any]], *, now: float | None = None) -> None:
        super().__init__()
        self.results = results
        self.now = time.time() if now is None else now

    def compose(self) -> ComposeResult:
        count = len(self.results)
        sessions = len({r.get("session_id") for r in self.results})
        with Vertical(id="inbox-dialog"):
            yield Label(
                f"Inbox: {count} watch result{'s' if count != 1 else ''} waiting "
                f"for {sessions} conversation{'s' if sessions != 1 else ''}",
                id="inbox-title",
            )
            if not self.results:
                yield Label("Nothing waiting. Results of watches whose conversation is closed arrive here.")
            else:
                yield Label(
                    "Each is delivered when its conversation is opened: enter opens it.", id="inbox-hint"
                )
                yield OptionList(
                    *(Option(result_label(r, self.now), id=str(r.get("id"))) for r in self.results),
                    id="inbox-list",
                )
                with VerticalScroll(id="inbox-preview"):
                    yield Static(id="inbox-text", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        if self.results:
            self._show(self.results[0])

    def _row(self, option_id: str | None) -> dict[str, Any] | None:
        return next((r for r in self.results if str(r.get("id")) == option_id), None)

    def _show(self, row: dict[str, Any]) -> None:
        text = str(row.get("text") or "")
        if len(text) > PREVIEW_CHARS:
            text = text[:PREVIEW_CHARS] + f"\n… ({len(text) - PREVIEW_CHARS} more characters)"
        self.query_one("#inbox-text", Static).update(text)

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        row = self._row(event.option.id)
        if row is not None:
            self._show(row)

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        row = self._row(event.option.id)
        self.dismiss(str(row["session_id"]) if row else None)

    def action_open(self) -> None:
        if not self.results:
            self.dismiss(None)
            return
        option = self.query_one(OptionList).highlighted_option
        row = self._row(option.id) if option is not None else None
        self.dismiss(str(row["session_id"]) if row else None)

    def action_close(self) -> None:
        self.dismiss(None)
