"""The approval modal: every pending tool call of a batch, with previews, answered with one key.

Keys: ``y`` approve, ``n``/``esc`` deny, ``a`` approve and always allow every tool of the batch,
``space`` on a row toggles "always" for that row's tool (approval label), ``x`` on a row (batches of
two or more) marks that one call to be skipped (denied) while the others are approved, ``tab``
moves into an optional feedback line whose text goes back to the model with the decision.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, Input, Markdown, Static

from ...core.resources import styles_dir
from ...core.types import ApprovalDecision, PreparedItem
from ...widgets.diff_view import DiffView

PREVIEW_MAX_CHARS = 20_000


def distinct_labels(items: Iterable[PreparedItem]) -> list[str]:
    """Approval labels in first-seen order."""
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item.approval_label or item.func_name, None)
    return list(seen)


def preview_widget(item: PreparedItem) -> Widget:
    """The preview of one item, by ``preview_kind``."""
    preview = item.preview[:PREVIEW_MAX_CHARS]
    kind = item.preview_kind
    if kind == "bash":
        command = preview or str(item.args.get("command", ""))
        return Static(highlight(command, language="bash"), classes="approval-preview -bash", markup=False)
    if kind == "diff":
        if preview.strip():
            return DiffView(
                preview,
                item.args.get("path") if isinstance(item.args.get("path"), str) else None,
                max_lines=300,
                classes="approval-preview -diff",
            )
        return Static(Content.styled("(no changes)", "dim italic"), classes="approval-preview")
    if kind == "json":
        text = preview
        if not text.strip():
            text = json.dumps(item.args, indent=2, ensure_ascii=False, default=str)
        else:
            try:
                text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            except ValueError:
                pass
        return Static(highlight(text, language="json"), classes="approval-preview -json", markup=False)
    if kind == "markdown":
        return Markdown(preview, classes="approval-preview -markdown")
    if not preview.strip() and item.args:
        text = json.dumps(item.args, indent=2, ensure_ascii=False, default=str)
        return Static(highlight(text, language="json"), classes="approval-preview -json", markup=False)
    return Static(preview, classes="approval-preview -text", markup=False)


class ApprovalRow(Vertical, can_focus=True):
    """One pending call: header, "always allow" toggle, preview."""

    BINDINGS = [
        Binding("space", "toggle_always", "Toggle always"),
        Binding("x", "toggle_skip", "Skip this call"),
        Binding("down,j", "move(1)", "Next", show=False),
        Binding("up,k", "move(-1)", "Previous", show=False),
    ]

    class ToggleAlways(Message):
        def __init__(self, label: str) -> None:
            super().__init__()
            self.label = label

    def __init__(self, item: PreparedItem, index: int) -> None:
        super().__init__(classes="approval-row")
        self.item = item
        self.index = index
        self.label = item.approval_label or item.func_name
        self._toggle = Static("", classes="approval-row--toggle", markup=False)
        self._always = False
        self.skipped = False

    def compose(self) -> ComposeResult:
        with Horizontal(classes="approval-row--head"):
            yield Static(
                Content.assemble(
                    (f"{self.index + 1}. ", "$text-muted"), (self.item.header or self.item.func_name, "bold")
                ),
                classes="approval-row--header",
                markup=False,
            )
            yield self._toggle
        with VerticalScroll(classes="approval-row--preview", can_focus=False):
            yield preview_widget(self.item)

    def on_mount(self) -> None:
        self.set_always(self._always)

    def set_always(self, value: bool) -> None:
        self._always = value
        self.set_class(value, "-always")
        if self.skipped:
            self._toggle.update(Content.styled("skipped (x to undo)", "bold $text-error"))
            return
        box = "[x]" if value else "[ ]"
        self._toggle.update(
            Content.assemble(
                (box, "bold $text-success" if value else "$text-muted"), f" always allow {self.label}"
            )
        )

    def action_toggle_always(self) -> None:
        self.post_message(self.ToggleAlways(self.label))

    def action_toggle_skip(self) -> None:
        self.skipped = not self.skipped
        self.set_class(self.skipped, "-skipped")
        self.set_always(self._always)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_skip":
            screen = self.screen
            return isinstance(screen, ApprovalScreen) and len(screen.items) > 1
        return True

    def action_move(self, step: int) -> None:
        rows = list(self.screen.query(ApprovalRow))
        target = rows[(rows.index(self) + step) % len(rows)]
        target.focus()

    def on_click(self, event: events.Click) -> None:
        if event.widget is self._toggle:
            self.action_toggle_always()
        self.focus()


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    """Ask once for a batch of prepared items; dismisses with an `ApprovalDecision`."""

    CSS_PATH = styles_dir() / "approval.tcss"
    AUTO_FOCUS = "ApprovalRow"

    BINDINGS = [
        Binding("y", "approve", "Approve"),
        Binding("n", "deny", "Deny"),
        Binding("a", "approve_always", "Approve + always"),
        Binding("tab", "feedback", "Feedback", priority=True),
        Binding("shift+tab", "feedback", "Feedback", show=False, priority=True),
        Binding("escape", "cancel", "Deny", key_display="esc"),
    ]

    def __init__(self, items: list[PreparedItem]) -> None:
        super().__init__()
        self.items = list(items)
        self.labels = distinct_labels(self.items)
        self.always: set[str] = set()
        self._dismissed = False

    def compose(self) -> ComposeResult:
        count = len(self.items)
        title = f"Approve {count} tool call{'s' if count != 1 else ''}?"
        with Vertical(id="approval-dialog") as dialog:
            dialog.border_title = title
            dialog.border_subtitle = "y approve · n deny · a always" + (" · x skip one" if count > 1 else "")
            with VerticalScroll(id="approval-items", can_focus=False):
                for index, item in enumerate(self.items):
                    yield ApprovalRow(item, index)
            with Horizontal(id="approval-feedback-row"):
                yield Static("feedback", id="approval-feedback-label")
                yield Input(
                    placeholder="optional note for the model (tab to edit, enter when done)",
                    id="approval-feedback",
                )
        yield Footer()

    # --- values -------------------------------------------------------------------------
    @property
    def feedback(self) -> str | None:
        text = self.query_one("#approval-feedback", Input).value.strip()
        return text or None

    def _decide(self, decision: ApprovalDecision) -> None:
        if self._dismissed:
            return
        self._dismissed = True
        self.dismiss(decision)

    @property
    def skipped(self) -> list[str]:
        """Call ids marked with ``x``: denied while the rest of the batch is approved."""
        return [row.item.call_id for row in self.query(ApprovalRow) if row.skipped]

    def _approve(self, always: Iterable[str]) -> None:
        skipped = self.skipped
        if len(skipped) == len(self.items):
            self.action_deny()
            return
        kept = {item.approval_label or item.func_name for item in self.items if item.call_id not in skipped}
        self._decide(
            ApprovalDecision(
                approved=True,
                feedback=self.feedback,
                # "always" only for tools of calls that were approved
                always=frozenset(label for label in always if label in kept),
                per_call={call_id: False for call_id in skipped},
            )
        )

    # --- actions ------------------------------------------------------------------------
    def action_approve(self) -> None:
        self._approve(self.always)

    def action_approve_always(self) -> None:
        self._approve(self.labels)

    def action_deny(self) -> None:
        self._decide(ApprovalDecision(approved=False, feedback=self.feedback))

    def action_cancel(self) -> None:
        self.action_deny()

    def action_feedback(self) -> None:
        feedback = self.query_one("#approval-feedback", Input)
        if feedback.has_focus:
            self._focus_rows()
        else:
            feedback.focus()

    def _focus_rows(self) -> None:
        rows = list(self.query(ApprovalRow))
        if rows:
            rows[0].focus()

    @on(Input.Submitted, "#approval-feedback")
    def _feedback_done(self, event: Input.Submitted) -> None:
        event.stop()
        self._focus_rows()

    @on(ApprovalRow.ToggleAlways)
    def _toggle_always(self, event: ApprovalRow.ToggleAlways) -> None:
        event.stop()
        if event.label in self.always:
            self.always.discard(event.label)
        else:
            self.always.add(event.label)
        for row in self.query(ApprovalRow):
            row.set_always(row.label in self.always)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("approve", "deny", "approve_always"):
            # While typing feedback, these letters are text: hide them (enter/tab return to the list).
            focused = self.focused
            return not isinstance(focused, Input)
        return True
