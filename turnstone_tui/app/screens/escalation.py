"""Run it again OUTSIDE the sandbox? Asked when an approved command failed because of the sandbox.

``y`` runs the same command again without the sandbox, ``n``/``esc`` does not (the model is told that
it failed in the sandbox and the user declined). There is no "always": each escape from the sandbox
is one decision about one command. The command is shown as the approval rows show it (control and
invisible characters written out), with the line of output that shows the sandbox's refusal.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.display import visible
from ...core.resources import styles_dir
from ...core.types import EscalationRequest
from .approval import PREVIEW_MAX_CHARS, command_text

WARNING = "It runs OUTSIDE the sandbox: full access to your files and network."


class EscalationScreen(ModalScreen[bool]):
    CSS_PATH = styles_dir() / "escalation.tcss"
    AUTO_FOCUS = "#escalation-command"

    BINDINGS = [
        Binding("y", "run_outside", "Run outside the sandbox"),
        Binding("n,escape", "decline", "Don't run"),
    ]

    def __init__(self, request: EscalationRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        command = request.command
        cut = max(0, len(command) - PREVIEW_MAX_CHARS)
        with Vertical(id="escalation-dialog"):
            yield Static(
                Content.assemble(
                    ("The sandbox refused this command: ", "bold"),
                    (visible(request.cause), "$text-muted"),
                ),
                id="escalation-cause",
            )
            yield Static(
                Content.assemble(("✗ ", "$text-error"), (visible(request.failure), "$text-error")),
                id="escalation-failure",
            )
            with VerticalScroll(id="escalation-command"):
                yield Static(
                    highlight(command_text(command[:PREVIEW_MAX_CHARS]), language="bash"),
                    markup=False,
                )
                if cut:
                    yield Static(
                        Content.styled(f"[... {cut:,} more characters not shown ...]", "$text-warning")
                    )
            yield Static(Content.styled(f"▲ {WARNING}", "bold $text-warning"), id="escalation-warning")

    def on_mount(self) -> None:
        dialog = self.query_one("#escalation-dialog")
        dialog.border_title = "Run it again OUTSIDE the sandbox?"
        dialog.border_subtitle = "y run outside the sandbox · n / esc don't"

    def action_run_outside(self) -> None:
        self.dismiss(True)

    def action_decline(self) -> None:
        self.dismiss(False)
