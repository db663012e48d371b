"""``/undo``: what putting back the newest turn's file changes will do, file by file, before it is done.

``y``/``enter`` undoes, ``n``/``esc`` keeps the files. Files that will be restored or deleted show
the diff from what is on disk now to what comes back; files left alone say why.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.checkpoints import UndoAction, UndoPlan
from ...core.display import visible
from ...core.resources import styles_dir
from ...widgets.diff_view import DiffView

_ACTION_TEXT = {
    UndoAction.RESTORE: ("restore", "$text-success"),
    UndoAction.DELETE: ("delete (the agent created it)", "$text-error"),
    UndoAction.CHANGED: ("left alone: changed since the agent wrote it", "$text-warning"),
    UndoAction.TOO_BIG: ("left alone: too big to have been kept", "$text-warning"),
    UndoAction.UNCHANGED: ("nothing to do: already as before", "$text-muted"),
}


def shown_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


class UndoScreen(ModalScreen[bool]):
    CSS_PATH = styles_dir() / "undo.tcss"
    AUTO_FOCUS = "#undo-files"

    BINDINGS = [
        Binding("y,enter", "undo", "Undo"),
        Binding("n,escape", "keep", "Keep the files"),
    ]

    def __init__(self, plan: UndoPlan, cwd: Path) -> None:
        super().__init__()
        self.plan = plan
        self.cwd = cwd

    def compose(self) -> ComposeResult:
        count = len(self.plan.applicable)
        with Vertical(id="undo-dialog"):
            yield Static(
                Content.assemble(
                    ("Turn: ", "$text-muted"),
                    (visible(self.plan.label or "(no prompt)"), "italic"),
                    "\n",
                    (f"{count} file{'s' if count != 1 else ''} will change. ", "bold"),
                    ("Changes made by bash commands are not tracked.", "$text-muted"),
                ),
                id="undo-summary",
            )
            with VerticalScroll(id="undo-files"):
                for step in self.plan.steps:
                    what, style = _ACTION_TEXT[step.action]
                    yield Static(
                        Content.assemble(
                            (visible(shown_path(step.path, self.cwd)), "bold"), "  ", (what, style)
                        ),
                        classes="undo-file",
                    )
                    if step.diff:
                        yield DiffView(visible(step.diff, crlf=True), step.path.name, classes="undo-diff")

    def on_mount(self) -> None:
        dialog = self.query_one("#undo-dialog")
        dialog.border_title = "Undo the last file changes?"
        dialog.border_subtitle = "y undo · n keep"

    def action_undo(self) -> None:
        self.dismiss(True)

    def action_keep(self) -> None:
        self.dismiss(False)
