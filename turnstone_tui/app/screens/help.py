"""The help screen: slash commands and keys."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...core.resources import styles_dir
from ..commands import SLASH_COMMANDS

Section = tuple[str, tuple[tuple[str, str], ...]]

KEY_SECTIONS: tuple[Section, ...] = (
    (
        "Keys",
        (
            ("enter", "send the prompt (or accept a completion)"),
            ("shift+enter / ctrl+j", "new line"),
            ("up / down", "prompt history (on the first / last line)"),
            ("tab", "accept a completion"),
            ("@path", "complete a file name"),
            ("pageup / pagedown", "scroll the chat (it stops following new output)"),
            ("end", "back to the end of the chat, following it again (also a click on 'new output')"),
            ("esc", "cancel the running turn"),
            ("ctrl+c", "clear the prompt; during a turn, interrupt it; idle and empty: twice quits"),
            ("ctrl+p", "command palette"),
            ("f1", "this help"),
            ("f2", "MCP panel (focus moves into it and back)"),
            ("f3", "inbox: watch results waiting for closed conversations"),
            ("shift+tab", "permission mode: default, accept-edits, plan, full-auto"),
        ),
    ),
    (
        "Approving tools",
        (
            ("y", "approve the calls (skipped ones stay skipped)"),
            ("n / esc", "deny"),
            ("a", "approve, and allow each call's suggested rule this session"),
            ("space", "'always allow <rule>': off, session, saved in project, saved for user"),
            ("x", "skip the selected call"),
            ("up / down, j / k", "select a call"),
            ("tab", "write feedback for the model"),
        ),
    ),
    (
        "Reviewing a plan",
        (
            ("enter / a", "accept the plan"),
            ("r", "reject it"),
            ("e", "annotate it (ctrl+s sends the annotation, esc closes the editor)"),
        ),
    ),
    (
        "MCP panel",
        (
            ("r", "refresh the selected server"),
            ("R", "refresh all servers"),
            ("c", "reconnect the selected server"),
            ("l", "log in to the selected HTTP server (OAuth, in the browser)"),
            ("v", "the selected server's log messages"),
        ),
    ),
)


def _rows(rows: list[tuple[str, str]]) -> Table:
    """Two columns; a long description wraps inside its own column, so the columns stay aligned."""
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, what in rows:
        table.add_row(Text(key), Text(what))  # Text: '[server]' is not markup
    return table


def help_sections() -> list[tuple[str, Table]]:
    """(title, table) for the slash commands, then each group of keys."""
    commands = [(command.usage, command.help) for command in SLASH_COMMANDS]
    return [("Commands", _rows(commands))] + [(title, _rows(list(rows))) for title, rows in KEY_SECTIONS]


class HelpScreen(ModalScreen[None]):
    """Commands and keys; esc or q closes it."""

    CSS_PATH = styles_dir() / "dialog.tcss"
    AUTO_FOCUS = "#help-body"
    BINDINGS = [Binding("escape,q,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", can_focus=True) as body:
            body.border_title = "turnstone help"
            body.border_subtitle = "esc closes"
            for title, table in help_sections():
                yield Static(Content.styled(title, "bold $accent"), classes="help-title")
                yield Static(table, classes="help-rows")
        yield Footer()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
