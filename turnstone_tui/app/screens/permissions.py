"""/permissions: the tools that run without asking, and revoking them."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, SelectionList, Static

from ...core.resources import styles_dir

_SOURCES = {
    "session": "this session (an 'always' answer)",
    "saved": "saved allow-list (every session)",
    "config": "config file tools.allow",
}


@dataclass(frozen=True, slots=True)
class Permission:
    name: str  # the tool's approval label
    source: str  # session | saved | config


class PermissionsScreen(ModalScreen[list[str]]):
    """Lists auto-approved tools; space marks, r/enter revokes the marked ones, esc closes."""

    CSS_PATH = styles_dir() / "dialog.tcss"
    AUTO_FOCUS = "#permission-list"
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("r", "revoke", "Revoke marked"),
    ]

    def __init__(self, permissions: list[Permission], read_only: list[str] | None = None) -> None:
        super().__init__()
        self.permissions = permissions
        self.read_only = read_only or []
        """Built-in tools that never ask (they only read); listed, not revocable."""

    def compose(self) -> ComposeResult:
        with Vertical(id="permissions-dialog", classes="dialog"):
            yield Label("Auto-approved tools", classes="dialog-title")
            if self.permissions:
                yield Static(
                    "These run without asking. [b]space[/b] marks, [b]r[/b] revokes the marked ones.",
                    classes="dialog-hint",
                )
                yield SelectionList[str](
                    *(
                        (
                            Content.assemble(
                                (p.name, "bold"), ("  ", ""), (_SOURCES.get(p.source, p.source), "dim")
                            ),
                            p.name,
                        )
                        for p in self.permissions
                    ),
                    id="permission-list",
                )
            else:
                yield Static(
                    "Nothing is on the allow-list: every tool that changes something asks first.",
                    classes="dialog-hint",
                )
            if self.read_only:
                yield Static(
                    Content.assemble(
                        ("Always run without asking (read-only): ", "bold"), ", ".join(self.read_only)
                    ),
                    id="permission-read-only",
                    classes="dialog-hint",
                )
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "revoke":
            return bool(self.permissions)
        return True

    def action_revoke(self) -> None:
        selection = self.query_one(SelectionList)
        marked = list(selection.selected)
        if not marked and selection.highlighted is not None:
            marked = [selection.get_option_at_index(selection.highlighted).value]  # type: ignore[attr-defined]
        self.dismiss(marked)

    def action_close(self) -> None:
        self.dismiss([])
