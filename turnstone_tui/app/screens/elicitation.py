"""An MCP server asks the user for input (``elicitation/create``): a form, or a URL to open.

Form mode: one row per schema property (text/number inputs, a switch for booleans, a select for a
single choice, a selection list for several), pre-filled with the schema's defaults. ``ctrl+s``
(or the Accept button) validates and sends; ``ctrl+d`` declines; ``esc`` cancels. Errors are
shown under the field and nothing is sent until the form is valid.

URL mode: shows the server's message and the URL; ``enter``/Open accepts (the browser is opened
after the answer), ``ctrl+d`` declines, ``esc`` cancels.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, SelectionList, Static, Switch

from ...core.display import visible
from ...core.resources import styles_dir
from ...mcp.asks import ElicitationAnswer, ElicitationRequest
from ...mcp.elicit_form import FormField, initial_value, validate


def _input_type(field: FormField) -> str:
    return {"integer": "integer", "number": "number"}.get(field.kind, "text")


def field_widget(field: FormField) -> Widget:
    """The input widget for one field, pre-filled; its id is ``field-<name>``."""
    wid = f"field-{field.name}"
    value = initial_value(field)
    if field.kind == "boolean":
        return Switch(value=bool(value), id=wid)
    if field.kind == "enum":
        options = [(label, option) for option, label in field.options]
        return Select(
            options,
            value=value if value is not None else Select.BLANK,
            allow_blank=not field.required or value is None,
            prompt="choose…",
            id=wid,
        )
    if field.kind == "multi":
        return SelectionList[str](*[(label, v, v in value) for v, label in field.options], id=wid)
    placeholder = field.format or ("number" if field.kind in ("number", "integer") else "")
    return Input(value=str(value), type=_input_type(field), placeholder=placeholder, id=wid)  # type: ignore[arg-type]


class ElicitationScreen(ModalScreen[ElicitationAnswer]):
    CSS_PATH = styles_dir() / "elicitation.tcss"
    AUTO_FOCUS = "#elicit-fields Input, #elicit-fields Switch, #elicit-fields Select, #elicit-open"

    BINDINGS = [
        Binding("ctrl+s", "accept", "Accept", priority=True),
        Binding("ctrl+d", "decline", "Decline", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]

    def __init__(self, request: ElicitationRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="elicit-dialog"):
            yield Static(visible(request.message), id="elicit-message", markup=False)
            if request.mode == "url":
                yield Static(
                    Content.assemble(
                        ("Open this page in your browser?\n", "$text-muted"), (visible(request.url), "bold")
                    ),
                    id="elicit-url",
                )
            else:
                with VerticalScroll(id="elicit-fields"):
                    for field in request.fields:
                        with Vertical(classes="elicit-row", id=f"row-{field.name}"):
                            title = Content.assemble(
                                (visible(field.title), "bold"),
                                (" *" if field.required else "", "$text-error"),
                            )
                            yield Label(title, classes="elicit-title")
                            if field.description:
                                yield Static(
                                    visible(field.description), classes="elicit-description", markup=False
                                )
                            yield field_widget(field)
                            hint = field.hint()
                            yield Static(
                                Content.styled(hint, "$text-muted") if hint else "",
                                classes="elicit-hint",
                                id=f"hint-{field.name}",
                            )
            with Horizontal(id="elicit-buttons"):
                if request.mode == "url":
                    yield Button("Open", id="elicit-open", variant="primary")
                else:
                    yield Button("Accept", id="elicit-accept", variant="primary")
                yield Button("Decline", id="elicit-decline")
                yield Button("Cancel", id="elicit-cancel")

    def on_mount(self) -> None:
        dialog = self.query_one("#elicit-dialog")
        dialog.border_title = f"{self.request.server} asks"
        dialog.border_subtitle = "ctrl+s accept · ctrl+d decline · esc cancel"

    # --- values ---------------------------------------------------------------------------

    def raw_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for field in self.request.fields:
            widget = self.query_one(f"#field-{field.name}")
            if isinstance(widget, Switch):
                values[field.name] = widget.value
            elif isinstance(widget, Select):
                values[field.name] = None if widget.value is Select.BLANK else widget.value
            elif isinstance(widget, SelectionList):
                values[field.name] = list(widget.selected)
            elif isinstance(widget, Input):
                values[field.name] = widget.value
        return values

    def _show_errors(self, errors: dict[str, str]) -> None:
        for field in self.request.fields:
            row = self.query_one(f"#row-{field.name}")
            hint = self.query_one(f"#hint-{field.name}", Static)
            error = errors.get(field.name)
            row.set_class(bool(error), "-invalid")
            if error:
                hint.update(Content.styled(error, "$text-error"))
            else:
                text = field.hint()
                hint.update(Content.styled(text, "$text-muted") if text else "")

    # --- answers --------------------------------------------------------------------------

    def action_accept(self) -> None:
        if self.request.mode == "url":
            self.dismiss(ElicitationAnswer("accept"))
            return
        content, errors = validate(self.request.fields, self.raw_values())
        self._show_errors(errors)
        if errors:
            first = next(f for f in self.request.fields if f.name in errors)
            self.query_one(f"#field-{first.name}").focus()
            return
        self.dismiss(ElicitationAnswer("accept", content))

    def action_decline(self) -> None:
        self.dismiss(ElicitationAnswer("decline"))

    def action_cancel(self) -> None:
        self.dismiss(ElicitationAnswer("cancel"))

    @on(Button.Pressed, "#elicit-accept, #elicit-open")
    def _accept_pressed(self) -> None:
        self.action_accept()

    @on(Button.Pressed, "#elicit-decline")
    def _decline_pressed(self) -> None:
        self.action_decline()

    @on(Button.Pressed, "#elicit-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_accept()
