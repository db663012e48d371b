"""Pick a saved conversation to resume."""

from __future__ import annotations

import time
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, OptionList
from textual.widgets.option_list import Option

from ...core.resources import styles_dir


def _when(timestamp: Any) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(timestamp)))
    except (TypeError, ValueError, OverflowError):
        return ""


def session_label(session: dict[str, Any]) -> Content:
    first = " ".join(str(session.get("first_prompt") or session.get("name") or "(empty)").split())
    if len(first) > 80:
        first = first[:79] + "…"
    return Content.assemble(
        (str(session.get("id", ""))[:12], "bold"),
        ("  ", ""),
        (_when(session.get("updated")), "dim"),
        (f"  {session.get('message_count', 0)} msgs  ", "dim"),
        first,
    )


class SessionPickerScreen(ModalScreen[str | None]):
    """A list of sessions (newest first); enter resumes, esc cancels."""

    CSS_PATH = styles_dir() / "dialog.tcss"
    AUTO_FOCUS = "#session-list"
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("enter", "pick", "Resume", show=True)]

    def __init__(self, sessions: list[dict[str, Any]]) -> None:
        super().__init__()
        self.sessions = sessions

    def compose(self) -> ComposeResult:
        with Vertical(id="session-dialog", classes="dialog"):
            yield Label("Resume a conversation", classes="dialog-title")
            yield OptionList(
                *(Option(session_label(s), id=str(s.get("id"))) for s in self.sessions), id="session-list"
            )
        yield Footer()

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_pick(self) -> None:
        option = self.query_one(OptionList).highlighted_option
        self.dismiss(option.id if option is not None else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
