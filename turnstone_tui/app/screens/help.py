"""The help screen: slash commands and keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...core.resources import styles_dir
from ..commands import SLASH_COMMANDS

KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "send the prompt (or accept a completion)"),
    ("shift+enter / ctrl+j", "new line"),
    ("up / down", "prompt history (on the first / last line)"),
    ("tab", "accept a completion"),
    ("@path", "complete a file name"),
    ("esc", "cancel the running turn"),
    ("ctrl+p", "command palette"),
    ("f2", "MCP panel"),
    ("ctrl+c twice", "quit"),
)


def help_content() -> Content:
    """Two aligned sections: the slash commands, then the keys."""
    width = max(len(c.usage) for c in SLASH_COMMANDS) + 2
    key_width = max(len(key) for key, _ in KEYS) + 2
    parts: list[Content | tuple[str, str] | str] = [("Commands\n", "bold $accent")]
    for command in SLASH_COMMANDS:
        parts += [(f"  {command.usage.ljust(width)}", "bold"), (f"{command.help}\n", "")]
    parts += [("\nKeys\n", "bold $accent")]
    for key, what in KEYS:
        parts += [(f"  {key.ljust(key_width)}", "bold"), (f"{what}\n", "")]
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    """Commands and keys; esc or q closes it."""

    CSS_PATH = styles_dir() / "dialog.tcss"
    AUTO_FOCUS = "#help-body"
    BINDINGS = [Binding("escape,q,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", can_focus=True) as body:
            body.border_title = "turnstone help"
            body.border_subtitle = "esc closes"
            yield Static(help_content(), id="help-text")
        yield Footer()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
