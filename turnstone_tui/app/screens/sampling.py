"""An MCP server asks to use the user's model (``sampling/createMessage``): two human-in-the-loop steps.

:class:`SamplingApprovalScreen` shows the server, its system prompt, the messages and the token
limit: ``y`` runs them on the current model, ``n``/``esc`` refuses. :class:`SampleReviewScreen`
shows the model's answer in an editor before it goes back: ``ctrl+s`` sends it (as edited),
``esc`` denies it.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from ...core.display import visible
from ...core.resources import styles_dir
from ...mcp.asks import SampleResult, SamplingRequest
from ...widgets.ordered_keys import OrderedTextArea

MESSAGE_PREVIEW_CHARS = 4000


class SamplingApprovalScreen(ModalScreen[bool]):
    CSS_PATH = styles_dir() / "sampling.tcss"
    AUTO_FOCUS = "#sampling-approve"

    BINDINGS = [
        Binding("y", "approve", "Run on my model"),
        Binding("n", "deny", "Refuse"),
        Binding("escape", "deny", "Refuse", show=False),
    ]

    def __init__(self, request: SamplingRequest, model: str) -> None:
        super().__init__()
        self.request = request
        self.model = model

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="sampling-dialog", classes="sampling-dialog"):
            yield Static(
                Content.assemble(
                    ("model ", "$text-muted"),
                    (self.model or "?", "bold"),
                    ("  ·  max tokens ", "$text-muted"),
                    (str(request.max_tokens), "bold"),
                ),
                id="sampling-meta",
            )
            with VerticalScroll(id="sampling-messages"):
                if request.system_prompt:
                    yield Static(Content.styled("system", "bold $text-warning"), classes="sampling-role")
                    yield Static(
                        visible(request.system_prompt[:MESSAGE_PREVIEW_CHARS]),
                        classes="sampling-text",
                        markup=False,
                    )
                for message in request.messages:
                    yield Static(Content.styled(message.role, "bold $text-accent"), classes="sampling-role")
                    yield Static(
                        visible(message.text[:MESSAGE_PREVIEW_CHARS]), classes="sampling-text", markup=False
                    )
            with Horizontal(classes="sampling-buttons"):
                yield Button("Run on my model", id="sampling-approve", variant="warning")
                yield Button("Refuse", id="sampling-deny")

    def on_mount(self) -> None:
        dialog = self.query_one("#sampling-dialog")
        dialog.border_title = f"{self.request.server} wants to use your model"
        dialog.border_subtitle = "y run · n refuse"

    def action_approve(self) -> None:
        self.dismiss(True)

    def action_deny(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#sampling-approve")
    def _approve_pressed(self) -> None:
        self.action_approve()

    @on(Button.Pressed, "#sampling-deny")
    def _deny_pressed(self) -> None:
        self.action_deny()


class SampleReviewScreen(ModalScreen[str | None]):
    CSS_PATH = styles_dir() / "sampling.tcss"
    AUTO_FOCUS = "#sample-text"

    BINDINGS = [
        Binding("ctrl+s", "send", "Send to server", priority=True),
        Binding("escape", "deny", "Deny", priority=True),
    ]

    def __init__(self, request: SamplingRequest, result: SampleResult) -> None:
        super().__init__()
        self.request = request
        self.result = result

    def compose(self) -> ComposeResult:
        with Vertical(id="sample-dialog", classes="sampling-dialog"):
            yield Static(
                Content.assemble(
                    ("answered by ", "$text-muted"),
                    (self.result.model, "bold"),
                    ("  ·  edit before sending if you like", "$text-muted"),
                ),
                id="sample-meta",
            )
            yield OrderedTextArea(self.result.text, id="sample-text", soft_wrap=True, show_line_numbers=False)
            with Horizontal(classes="sampling-buttons"):
                yield Button("Send", id="sample-send", variant="primary")
                yield Button("Deny", id="sample-deny")

    def on_mount(self) -> None:
        dialog = self.query_one("#sample-dialog")
        dialog.border_title = f"Send this answer to {self.request.server}?"
        dialog.border_subtitle = "ctrl+s send · esc deny"

    def action_send(self) -> None:
        self.dismiss(self.query_one("#sample-text", TextArea).text)

    def action_deny(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#sample-send")
    def _send_pressed(self) -> None:
        self.action_send()

    @on(Button.Pressed, "#sample-deny")
    def _deny_pressed(self) -> None:
        self.action_deny()
