"""Logging in to an MCP server in the browser: what happens, the URL to copy, and a way out.

Shown while ``McpManager.login`` runs (``app/mcp_login.py``): first "opening your browser", then
the authorization URL (wrapped, selectable; ``c`` copies it to the clipboard) and whether a browser
was opened. ``esc`` gives up (the caller cancels the login and its loopback listener).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.resources import styles_dir


class McpLoginScreen(ModalScreen[bool]):
    """Dismissed with True when the user gave up (esc), with False when the login ended."""

    CSS_PATH = styles_dir() / "mcp_login.tcss"
    AUTO_FOCUS = "#mcp-login-url"

    BINDINGS = [
        Binding("c", "copy_url", "Copy the URL"),
        Binding("escape", "give_up", "Cancel"),
    ]

    def __init__(self, server: str) -> None:
        super().__init__()
        self.server = server
        self.url = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-login-dialog"):
            yield Static(
                Content.styled("Asking the server where to log in…", "$text-muted"), id="mcp-login-status"
            )
            url = Static("", id="mcp-login-url", markup=False)
            url.can_focus = True
            url.display = False
            yield url
            yield Static("", id="mcp-login-wait")

    def on_mount(self) -> None:
        dialog = self.query_one("#mcp-login-dialog")
        dialog.border_title = f"Log in to MCP server '{self.server}'"
        dialog.border_subtitle = "c copy URL · esc cancel"

    def show_url(self, url: str, opened: bool) -> None:
        """The authorization URL is known; ``opened``: a browser was started with it."""
        self.url = url
        status = (
            "Your browser was opened to log in. If it did not open, open this URL:"
            if opened
            else "Open this URL in your browser to log in:"
        )
        self.query_one("#mcp-login-status", Static).update(status)
        url_view = self.query_one("#mcp-login-url", Static)
        url_view.update(url)
        url_view.display = True
        self.query_one("#mcp-login-wait", Static).update(
            "Waiting for the browser to come back to turnstone-tui… (this closes by itself)"
        )

    def action_copy_url(self) -> None:
        if self.url:
            self.app.copy_to_clipboard(self.url)
            self.notify("The login URL is on the clipboard.", timeout=3)

    def action_give_up(self) -> None:
        self.dismiss(True)
