"""Add or edit one permission rule: its text, effect and scope. Dismisses with the Rule or None.

Keys: type the rule, ``tab`` to the effect and scope choices (arrows move, ``space``/``enter`` pick),
``ctrl+s`` (or ``enter`` in the rule line) saves, ``esc`` cancels. A rule that does not parse is not
accepted: the reason shows under the line.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, RadioButton, RadioSet, Static

from ...core.permissions import EFFECTS, Rule, RuleError, parse_rule
from ...core.resources import styles_dir
from ...widgets.ordered_keys import OrderedInput

EDITABLE_SCOPES = ("session", "project", "user")


class RuleEditScreen(ModalScreen[Rule | None]):
    CSS_PATH = styles_dir() / "rule_edit.tcss"
    AUTO_FOCUS = "#rule-text"
    BINDINGS = [
        Binding("ctrl+s", "save", "Save"),
        Binding("escape", "cancel", "Cancel", key_display="esc"),
    ]

    def __init__(self, rule: Rule | None) -> None:
        super().__init__()
        self.rule = rule

    def compose(self) -> ComposeResult:
        rule = self.rule
        with Vertical(id="rule-edit-dialog") as dialog:
            dialog.border_title = "Edit rule" if rule else "Add rule"
            dialog.border_subtitle = "enter/ctrl+s save · tab next · esc cancel"
            yield OrderedInput(
                value=rule.text if rule else "",
                placeholder="bash(npm run test:*)   read_file(src/**)   web_fetch(domain:docs.python.org)",
                id="rule-text",
            )
            yield Static("", id="rule-error")
            with Horizontal(id="rule-choices"):
                with Vertical():
                    yield Label("effect")
                    with RadioSet(id="rule-effect"):
                        for effect in EFFECTS:
                            yield RadioButton(effect, value=(rule.effect if rule else "allow") == effect)
                with Vertical():
                    yield Label("scope")
                    with RadioSet(id="rule-scope"):
                        current = rule.scope if rule and rule.scope in EDITABLE_SCOPES else "project"
                        for scope in EDITABLE_SCOPES:
                            yield RadioButton(scope, value=current == scope)
        yield Footer()

    def _choice(self, selector: str, options: tuple[str, ...]) -> str:
        radio = self.query_one(selector, RadioSet)
        index = radio.pressed_index
        return options[index] if 0 <= index < len(options) else options[0]

    @on(Input.Submitted, "#rule-text")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save()

    @on(Input.Changed, "#rule-text")
    def _changed(self) -> None:
        self.query_one("#rule-error", Static).update("")

    def action_save(self) -> None:
        text = self.query_one("#rule-text", Input).value
        effect = self._choice("#rule-effect", EFFECTS)
        scope = self._choice("#rule-scope", EDITABLE_SCOPES)
        try:
            rule = parse_rule(text, effect, scope)
        except RuleError as exc:
            self.query_one("#rule-error", Static).update(str(exc))
            self.query_one("#rule-text", Input).focus()
            return
        self.dismiss(rule)

    def action_cancel(self) -> None:
        self.dismiss(None)
