"""The approval modal: every pending tool call of a batch, with previews, answered with one key.

Keys: ``y`` approve, ``n``/``esc`` deny, ``a`` approve and allow each call's suggested rule for this
session, ``space`` on a row cycles its "always allow <rule>" through off / this session / saved in the
project / saved for the user (the rule is the narrowest useful one: ``bash(npm run test:*)``,
``write_file(docs/**)``, ``web_fetch(domain:docs.python.org)``), ``x`` on a row (batches of two or
more) marks that one call to be skipped (denied) while the others are approved, ``tab`` moves into an
optional feedback line whose text goes back to the model with the decision. A row that runs code says
whether it runs in the sandbox.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, Input, Markdown, Static

from ...core.display import visible
from ...core.permissions import Rule, no_rule_reason, rule_reach, suggest_rules
from ...core.resources import styles_dir
from ...core.types import ApprovalDecision, PreparedItem
from ...widgets.diff_view import DiffView
from ...widgets.ordered_keys import OrderedInput

PREVIEW_MAX_CHARS = 20_000
_BLANK_RUN = re.compile(r"(?:\n[ \t]*){5,}")
_SPACE_RUN = re.compile(r"[ \t]{40,}")


def command_text(command: str) -> str:
    """A command as the row shows it: what could hide part of it written out (control and
    invisible characters, ``core.display.visible``), runs of 4+ blank lines and of 40+ spaces
    replaced by their count (the rest of the line, or of the command, would sit far out of view)."""
    text = visible(command)
    text = _BLANK_RUN.sub(lambda m: f"\n[... {m.group(0).count(chr(10)) - 1} blank lines ...]\n", text)
    return _SPACE_RUN.sub(lambda m: f" [... {len(m.group(0))} spaces ...] ", text)


def preview_cut(item: PreparedItem) -> int:
    """How many characters of the item's preview the row does not show (0: all of it)."""
    preview = item.preview or (str(item.args.get("command", "")) if item.preview_kind == "bash" else "")
    return max(0, len(preview) - PREVIEW_MAX_CHARS)


def preview_widget(item: PreparedItem) -> Widget:
    """The preview of one item, by ``preview_kind``; every kind through ``visible`` (a control
    character in a command, a path or a diff acted on the terminal: ESC[2K erased the line)."""
    preview = visible(item.preview[:PREVIEW_MAX_CHARS], crlf=item.preview_kind in ("diff", "markdown"))
    kind = item.preview_kind
    if kind == "bash":
        command = command_text((item.preview or str(item.args.get("command", "")))[:PREVIEW_MAX_CHARS])
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
            text = visible(json.dumps(item.args, indent=2, ensure_ascii=False, default=str))
        else:
            try:
                parsed = json.loads(item.preview[:PREVIEW_MAX_CHARS])
                text = visible(json.dumps(parsed, indent=2, ensure_ascii=False))
            except ValueError:
                pass
        return Static(highlight(text, language="json"), classes="approval-preview -json", markup=False)
    if kind == "markdown":
        return Markdown(preview, classes="approval-preview -markdown")
    if not preview.strip() and item.args:
        text = visible(json.dumps(item.args, indent=2, ensure_ascii=False, default=str))
        return Static(highlight(text, language="json"), classes="approval-preview -json", markup=False)
    return Static(preview, classes="approval-preview -text", markup=False)


ALWAYS_SCOPES = ("", "session", "project", "user")
"""What space cycles a row's "always" through: off, this session, the project's file, the user's file."""
_SCOPE_WORDS = {
    "session": "for this session",
    "project": "saved: project (.turnstone/permissions.toml)",
    "user": "saved: user (every project)",
}


class ApprovalRow(Vertical, can_focus=True):
    """One pending call: header, where it runs (sandboxed or not), the "always allow" rule, preview."""

    BINDINGS = [
        Binding("space", "toggle_always", "Always: off/session/project/user"),
        Binding("x", "toggle_skip", "Skip this call"),
        Binding("down,j", "move(1)", "Next", show=False),
        Binding("up,k", "move(-1)", "Previous", show=False),
    ]

    def __init__(self, item: PreparedItem, index: int, workspace: Path | None = None) -> None:
        super().__init__(classes="approval-row")
        self.item = item
        self.index = index
        self.label = item.approval_label or item.func_name
        self.rules = suggest_rules(item, workspace or Path.cwd())
        """The narrowest rule(s) that would let this call run without asking next time."""
        self._toggle = Static("", classes="approval-row--toggle", markup=False)
        self.scope = ""
        self.skipped = False

    def compose(self) -> ComposeResult:
        yield Static(
            Content.assemble(
                (f"{self.index + 1}. ", "$text-muted"),
                (visible(self.item.header or self.item.func_name).replace("\n", " "), "bold"),
            ),
            classes="approval-row--header",
            markup=False,
        )
        if self.item.sandbox_note:
            sandboxed = self.item.sandboxed
            yield Static(
                Content.assemble(
                    ("■ " if sandboxed else "▲ ", "$text-success" if sandboxed else "$text-warning"),
                    (visible(self.item.sandbox_note), "$text-muted" if sandboxed else "$text-warning"),
                ),
                classes="approval-row--sandbox " + ("-sandboxed" if sandboxed else "-unconfined"),
                markup=False,
            )
        yield self._toggle
        cut = preview_cut(self.item)
        if cut:
            yield Static(
                Content.styled(
                    f"▲ {cut:,} more characters are not shown: too long to review here "
                    "(deny it, or ask for a shorter one)",
                    "bold $text-warning",
                ),
                classes="approval-row--sandbox -unconfined",
            )
        with VerticalScroll(classes="approval-row--preview", can_focus=False):
            yield preview_widget(self.item)

    def on_mount(self) -> None:
        self.show_always()

    @property
    def rule_text(self) -> str:
        return visible(", ".join(rule.text for rule in self.rules)).replace("\n", "\\n")

    def show_always(self) -> None:
        self.set_class(bool(self.scope), "-always")
        if self.skipped:
            self._toggle.update(Content.styled("skipped (x to undo)", "bold $text-error"))
            return
        if not self.rules:
            self._toggle.update(
                Content.styled(f"no rule can allow this command: {no_rule_reason(self.item)}", "$text-muted")
            )
            return
        box = "[x]" if self.scope else "[ ]"
        reach = "; ".join(dict.fromkeys(r for r in map(rule_reach, self.rules) if r))
        self._toggle.update(
            Content.assemble(
                (box, "bold $text-success" if self.scope else "$text-muted"),
                " always allow ",
                (self.rule_text, "bold"),
                (f" ({reach})" if reach else "", "$text-warning"),
                (f"  {_SCOPE_WORDS[self.scope]}" if self.scope else "  (space)", "$text-muted"),
            )
        )

    def set_scope(self, scope: str) -> None:
        self.scope = scope if self.rules else ""
        self.show_always()

    def action_toggle_always(self) -> None:
        if not self.skipped:
            self.set_scope(ALWAYS_SCOPES[(ALWAYS_SCOPES.index(self.scope) + 1) % len(ALWAYS_SCOPES)])

    def action_toggle_skip(self) -> None:
        self.skipped = not self.skipped
        self.set_class(self.skipped, "-skipped")
        self.show_always()

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

    def __init__(
        self,
        items: list[PreparedItem],
        workspace: Path | None = None,
        answer: Callable[[ApprovalDecision], None] | None = None,
    ) -> None:
        super().__init__()
        self.items = list(items)
        self.workspace = workspace
        self._answer = answer
        self._dismissed = False

    def compose(self) -> ComposeResult:
        count = len(self.items)
        title = f"Approve {count} tool call{'s' if count != 1 else ''}?"
        with Vertical(id="approval-dialog") as dialog:
            dialog.border_title = title
            dialog.border_subtitle = "y approve · n deny · a always" + (" · x skip one" if count > 1 else "")
            with VerticalScroll(id="approval-items", can_focus=False):
                for index, item in enumerate(self.items):
                    yield ApprovalRow(item, index, self.workspace)
            with Horizontal(id="approval-feedback-row"):
                yield Static("feedback", id="approval-feedback-label")
                yield OrderedInput(
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
        if self._answer is None:
            self.dismiss(decision)
            return
        # The engine gets the answer first and the screen closes on the app's next turn: the
        # approved calls then start before the frame that redraws the screen under the modal
        # (closing first made them wait for that repaint).
        self._answer(decision)
        self.app.call_later(self.dismiss, decision)

    @property
    def skipped(self) -> list[str]:
        """Call ids marked with ``x``: denied while the rest of the batch is approved."""
        return [row.item.call_id for row in self.query(ApprovalRow) if row.skipped]

    def _approve(self, all_session: bool = False) -> None:
        skipped = self.skipped
        if len(skipped) == len(self.items):
            self.action_deny()
            return
        rules: list[tuple[str, Rule]] = []
        for row in self.query(ApprovalRow):
            scope = row.scope or ("session" if all_session else "")
            if row.skipped or not scope:  # "always" only for calls that were approved
                continue
            rules.extend((row.item.call_id, replace(rule, scope=scope)) for rule in row.rules)
        self._decide(
            ApprovalDecision(
                approved=True,
                feedback=self.feedback,
                per_call={call_id: False for call_id in skipped},
                rules=tuple(rules),
            )
        )

    # --- actions ------------------------------------------------------------------------
    def action_approve(self) -> None:
        self._approve()

    def action_approve_always(self) -> None:
        """Approve, and allow each call's suggested rule for this session (rows set to a saved scope keep it)."""
        self._approve(all_session=True)

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

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("approve", "deny", "approve_always"):
            # While typing feedback, these letters are text: hide them (enter/tab return to the list).
            focused = self.focused
            return not isinstance(focused, Input)
        return True
