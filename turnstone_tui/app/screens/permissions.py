"""/permissions: every permission rule in force, added, edited and deleted with the keyboard.

Rows: effect, rule, scope (session / project / user / config / saved). Keys: ``a`` add, ``enter``/``e``
edit, ``d``/``delete`` delete, ``t`` trust the project's file (its allow rules apply), ``esc`` close.
The screen changes nothing itself: it calls the ``RuleEditor`` it was given (the app's, which writes
the files off the event loop and updates the open sessions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Label, Static

from ...core.permissions import Rule
from ...core.resources import styles_dir
from .rule_edit import RuleEditScreen

SCOPE_WORDS = {
    "session": "this session",
    "project": "project file",
    "user": "user file",
    "config": "config / --allow",
    "saved": "saved (older 'always')",
}
_EFFECT_STYLES = {"allow": "bold $text-success", "ask": "bold $text-warning", "deny": "bold $text-error"}


@dataclass(frozen=True, slots=True)
class RuleEntry:
    rule: Rule
    source: str  # a SCOPE_WORDS key
    note: str = ""  # e.g. "not in force: the project file is not trusted"
    editable: bool = True


class RuleEditor(Protocol):
    """What the screen asks the app to do (see app/permission_editor.py)."""

    def entries(self) -> list[RuleEntry]: ...
    def summary(self) -> list[str]: ...
    def project_untrusted(self) -> bool: ...
    async def add(self, rule: Rule) -> str | None: ...
    async def replace(self, entry: RuleEntry, rule: Rule) -> str | None: ...
    async def remove(self, entry: RuleEntry) -> str | None: ...
    async def trust_project(self) -> str | None: ...


class PermissionsScreen(ModalScreen[None]):
    CSS_PATH = styles_dir() / "permissions.tcss"
    AUTO_FOCUS = "#permission-rules"
    BINDINGS = [
        Binding("a", "add", "Add"),
        Binding("e,enter", "edit", "Edit", key_display="enter"),
        Binding("d,delete", "delete", "Delete", key_display="d"),
        Binding("t", "trust", "Trust project file"),
        Binding("escape", "close", "Close", key_display="esc"),
    ]

    def __init__(self, editor: RuleEditor) -> None:
        super().__init__()
        self.editor = editor
        self.shown: list[RuleEntry] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="permissions-dialog") as dialog:
            dialog.border_title = "Permission rules"
            dialog.border_subtitle = "a add · enter edit · d delete · esc close"
            yield Static(
                "deny wins over ask wins over allow · bash(git status) · bash(npm run test:*) · "
                "read_file(src/**) · web_fetch(domain:docs.python.org) · mcp__github__*",
                id="permissions-syntax",
            )
            table: DataTable[Content] = DataTable(
                id="permission-rules", cursor_type="row", zebra_stripes=True
            )
            yield table
            yield Label("", id="permissions-empty")
            yield Static("", id="permissions-summary")
            yield Static("", id="permissions-status")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_rules()

    def refresh_rules(self, select: Rule | None = None) -> None:
        table = self.query_one("#permission-rules", DataTable)
        keep = table.cursor_row
        table.clear(columns=True)
        self.shown = self.editor.entries()
        widest = max((len(e.rule.text) + (len(e.note) + 2 if e.note else 0) for e in self.shown), default=4)
        table.add_column("effect", width=6, key="effect")
        table.add_column("rule", width=min(max(widest, 4), 200), key="rule")
        table.add_column("scope", width=22, key="scope")
        for entry in self.shown:
            rule_cell = Content.assemble(
                entry.rule.text, (f"  {entry.note}", "$text-warning") if entry.note else ""
            )
            table.add_row(
                Content.styled(entry.rule.effect, _EFFECT_STYLES[entry.rule.effect]),
                rule_cell,
                Content.styled(SCOPE_WORDS.get(entry.source, entry.source), "$text-muted"),
            )
        if select is not None:
            for index, entry in enumerate(self.shown):
                if entry.rule.text == select.text and entry.rule.scope == select.scope:
                    keep = index
        if self.shown:
            table.move_cursor(row=min(max(keep, 0), len(self.shown) - 1))
        table.display = bool(self.shown)
        empty = self.query_one("#permissions-empty", Label)
        empty.display = not self.shown
        empty.update("No rules yet: every call that changes something asks. Press a to add one.")
        self.query_one("#permissions-summary", Static).update("\n".join(self.editor.summary()))
        self.refresh_bindings()

    def _say(self, message: str | None, error: bool = False) -> None:
        status = self.query_one("#permissions-status", Static)
        status.set_class(error, "-error")
        status.update(message or "")

    @property
    def current(self) -> RuleEntry | None:
        table = self.query_one("#permission-rules", DataTable)
        if not self.shown or table.cursor_row < 0 or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("edit", "delete"):
            entry = self.current if self.is_mounted else None
            return entry is not None and entry.editable
        if action == "trust":
            return self.editor.project_untrusted()
        return True

    def on_data_table_row_highlighted(self) -> None:
        self.refresh_bindings()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_edit()

    @work(exclusive=True, group="permissions-edit")
    async def action_add(self) -> None:
        rule = await self.app.push_screen_wait(RuleEditScreen(None))
        if rule is None:
            return
        error = await self.editor.add(rule)
        self._say(error or f"Added: {rule.effect} {rule.text} ({rule.scope})", bool(error))
        self.refresh_rules(select=rule)

    @work(exclusive=True, group="permissions-edit")
    async def action_edit(self) -> None:
        entry = self.current
        if entry is None or not entry.editable:
            return
        rule = await self.app.push_screen_wait(RuleEditScreen(entry.rule))
        if rule is None or rule == entry.rule:
            return
        error = await self.editor.replace(entry, rule)
        self._say(error or f"Changed to: {rule.effect} {rule.text} ({rule.scope})", bool(error))
        self.refresh_rules(select=rule)

    async def action_delete(self) -> None:
        entry = self.current
        if entry is None or not entry.editable:
            return
        error = await self.editor.remove(entry)
        self._say(error or f"Deleted: {entry.rule.effect} {entry.rule.text}", bool(error))
        self.refresh_rules()

    async def action_trust(self) -> None:
        error = await self.editor.trust_project()
        self._say(error or "The project file is trusted as it is now: its allow rules apply.", bool(error))
        self.refresh_rules()

    def action_close(self) -> None:
        self.dismiss(None)
