"""Snapshots of what MCP servers can ask the user: the elicitation form and the sampling modals."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from turnstone_tui.app.screens.elicitation import ElicitationScreen
from turnstone_tui.app.screens.sampling import SampleReviewScreen, SamplingApprovalScreen
from turnstone_tui.mcp.asks import ElicitationRequest, SampleResult, SamplingMessage, SamplingRequest
from turnstone_tui.mcp.elicit_form import parse_schema

SIZE = (100, 34)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2, "default": "Ada"},
        "email": {
            "type": "string",
            "title": "Email",
            "format": "email",
            "description": "For the confirmation",
        },
        "guests": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 8, "default": 2},
        "outside": {"type": "boolean", "title": "Sit outside", "default": True},
        "time": {
            "type": "string",
            "title": "Time",
            "oneOf": [{"const": "18", "title": "6 pm"}, {"const": "20", "title": "8 pm"}],
            "default": "20",
        },
    },
    "required": ["name", "email", "guests"],
}

SAMPLING = SamplingRequest(
    server="notes",
    messages=(
        SamplingMessage("user", "Summarize the meeting notes: budget approved, launch moved to May."),
        SamplingMessage("assistant", "Do you want bullet points?"),
        SamplingMessage("user", "One line, please."),
    ),
    max_tokens=200,
    system_prompt="You summarize notes for a busy reader.",
)


class ScreenHarness(App[None]):
    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self._modal = screen

    def compose(self) -> ComposeResult:
        yield Static("the chat is behind the modal")

    def on_mount(self) -> None:
        self.push_screen(self._modal)
        self.call_after_refresh(self._steady_cursors)

    def _steady_cursors(self) -> None:
        for widget in self.screen.query("Input, TextArea"):
            widget.cursor_blink = False  # type: ignore[attr-defined]


def form_request() -> ElicitationRequest:
    return ElicitationRequest(
        server="bookings", message="Book a table for Friday", fields=parse_schema(SCHEMA), schema=SCHEMA
    )


def test_elicitation_form(snap_compare) -> None:
    assert snap_compare(ScreenHarness(ElicitationScreen(form_request())), terminal_size=SIZE)


def test_elicitation_form_with_errors(snap_compare) -> None:
    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        await pilot.press("ctrl+s")  # email is required and empty
        await pilot.pause()

    assert snap_compare(
        ScreenHarness(ElicitationScreen(form_request())), terminal_size=SIZE, run_before=run_before
    )


def test_elicitation_url_mode(snap_compare) -> None:
    request = ElicitationRequest(
        server="payments",
        message="Confirm the payment on the provider's page",
        mode="url",
        url="https://pay.example.com/confirm/abc123",
    )
    assert snap_compare(ScreenHarness(ElicitationScreen(request)), terminal_size=(100, 20))


def test_sampling_approval(snap_compare) -> None:
    assert snap_compare(ScreenHarness(SamplingApprovalScreen(SAMPLING, "scripted-model")), terminal_size=SIZE)


def test_sample_review(snap_compare) -> None:
    result = SampleResult("Budget approved; the launch moves to May.", "scripted-model")
    assert snap_compare(ScreenHarness(SampleReviewScreen(SAMPLING, result)), terminal_size=(100, 24))


# --- the MCP panel: a server that needs login, and a server's log view ---------------------


class FixedServers:
    """The panel's data source (`ManagerLike`) with fixed statuses and logs, so the picture is stable."""

    def __init__(self) -> None:
        from turnstone_tui.core.mcp_bridge import ProgressInfo, ServerState, ServerStatus, ToolInfo
        from turnstone_tui.mcp.client_side import LogEntry

        self._statuses = [
            ServerStatus(
                "notes",
                ServerState.CONNECTED,
                None,
                [
                    ToolInfo("mcp__notes__search", "search", "Search notes"),
                    ToolInfo("mcp__notes__add", "add", ""),
                ],
                [],
                [],
                "stdio",
                "python notes_server.py",
                progress=(ProgressInfo("search", 2, 5, "indexing"),),
                log_count=3,
            ),
            ServerStatus(
                "tracker",
                ServerState.FAILED,
                'needs login: the server answered 401 Unauthorized (WWW-Authenticate: Bearer scope="issues:read")',
                [],
                [],
                [],
                "http",
                "https://mcp.tracker.example/mcp",
                needs_login=True,
            ),
        ]
        self._logs = [
            LogEntry(0.0, "info", "", "index opened (1,204 notes)"),
            LogEntry(0.0, "warning", "", "3 notes have no title"),
            LogEntry(0.0, "error", "", "could not read notes/broken.md: invalid UTF-8"),
        ]

    def statuses(self) -> list[Any]:
        return self._statuses

    def add_listener(self, cb: Any) -> Any:
        return lambda: None

    async def refresh(self, server: str | None = None) -> str:
        return ""

    def logs(self, server: str) -> list[Any]:
        return self._logs if server == "notes" else []


class PanelHarness(App[None]):
    def compose(self) -> ComposeResult:
        from turnstone_tui.widgets.mcp_panel import McpPanel

        yield Static("the chat")
        yield McpPanel(FixedServers())  # type: ignore[arg-type]


def test_mcp_panel_needs_login_and_log_view(snap_compare) -> None:
    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        await pilot.press("v")  # the focused (first) server's log
        await pilot.pause()

    assert snap_compare(PanelHarness(), terminal_size=(100, 24), run_before=run_before)


# --- logging in to an HTTP server: the screen with the URL to copy -------------------------

LOGIN_URL = (
    "https://auth.tracker.example/authorize?response_type=code&client_id=client-3f9a2c"
    "&redirect_uri=http%3A%2F%2F127.0.0.1%3A43817%2Fcallback&state=Zm9vYmFy"
    "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"
    "&resource=https%3A%2F%2Fmcp.tracker.example%2Fmcp&scope=issues%3Aread+offline_access"
)


def test_mcp_login_screen(snap_compare) -> None:
    from turnstone_tui.app.screens.mcp_login import McpLoginScreen

    screen = McpLoginScreen("tracker")

    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        screen.show_url(LOGIN_URL, opened=False)
        await pilot.pause()

    assert snap_compare(ScreenHarness(screen), terminal_size=(100, 24), run_before=run_before)
