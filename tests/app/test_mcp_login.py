"""``l`` in the MCP panel and ``/mcp login`` / ``/mcp logout`` in the real app, against the OAuth test
servers (tests/helpers/mcp_servers/oauth_servers.py). The browser is ``webbrowser.open`` replaced by
a function that follows the URL with httpx, as a browser would (to the app's loopback listener)."""

from __future__ import annotations

import webbrowser
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.app.conftest import APP_SIZE, make_config
from tests.app.helpers import start, wait_until
from tests.helpers.mcp_servers import OAuthServers
from tests.helpers.model_server import ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.mcp_login import McpLoginScreen
from turnstone_tui.core.mcp_bridge import ServerState
from turnstone_tui.runtime import Runtime, RuntimeOptions
from turnstone_tui.widgets.chat_messages import InfoMessage
from turnstone_tui.widgets.mcp_panel import McpPanel

pytestmark = pytest.mark.timeout(120)


class Browser:
    """What webbrowser.open became: it notes the URL and the screen the app showed meanwhile."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.screens: list[str] = []
        self.app: TurnstoneApp | None = None

    def open(self, url: str, new: int = 0, autoraise: bool = True) -> bool:
        self.urls.append(url)
        self.screens.append(type(self.app.screen).__name__ if self.app is not None else "")
        httpx.get(url, follow_redirects=True, timeout=30)
        return True


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Browser:
    """webbrowser.open follows the URL with httpx; a display is there, so the app opens it."""
    stand_in = Browser()
    monkeypatch.setattr(webbrowser, "open", stand_in.open)
    monkeypatch.setenv("DISPLAY", ":0")
    return stand_in


@pytest.fixture
async def secure_runtime(
    model_server: ScriptedModelServer,
    tmp_path: Path,
    oauth_servers: OAuthServers,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Runtime]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config = make_config(model_server, tmp_path)
    config.mcp.servers = {"secure": {"type": "http", "url": oauth_servers.url}}
    workdir = tmp_path / "work"
    workdir.mkdir()
    runtime = await Runtime.create(config, options=RuntimeOptions(cwd=workdir, start_watches=False))
    await runtime.mcp.wait_ready(60)
    try:
        yield runtime
    finally:
        await runtime.aclose()


def _infos(app: TurnstoneApp) -> list[str]:
    return [m.text for m in app.query(InfoMessage)]


async def test_l_in_the_panel_logs_in_and_the_server_turns_connected(
    secure_runtime: Runtime, oauth_servers: OAuthServers, browser: Browser, tmp_path: Path
) -> None:
    mcp = secure_runtime.mcp
    assert mcp.status("secure").needs_login
    app = browser.app = TurnstoneApp(secure_runtime, cwd=secure_runtime.options.cwd)
    async with app.run_test(size=APP_SIZE) as pilot:
        await start(pilot)
        await pilot.press("f2")
        await wait_until(pilot, lambda: bool(app.query(McpPanel)), 10, "the MCP panel")
        panel = app.query_one(McpPanel)
        assert "needs login" in str(panel.server_tree.root.children[0].label)
        await pilot.press("l")
        await wait_until(
            pilot,
            lambda: mcp.status("secure").state is ServerState.CONNECTED,
            60,
            "connected after the login",
        )
        assert browser.screens == ["McpLoginScreen"]  # the login screen was up while the browser was
        await wait_until(
            pilot, lambda: not isinstance(app.screen, McpLoginScreen), 10, "the login screen to close"
        )
        assert len(browser.urls) == 1 and browser.urls[0].startswith(f"{oauth_servers.issuer}/authorize?")
        await wait_until(
            pilot, lambda: "3 tools" in str(panel.server_tree.root.children[0].label), 10, "the panel's row"
        )
        await wait_until(pilot, lambda: any("Logged in to MCP server 'secure'" in s for s in _infos(app)), 10)
        assert mcp.has_tool("mcp__secure__whoami")

        # /mcp logout forgets the token: the server needs a login again.
        app.run_slash_command("/mcp logout secure")
        await wait_until(
            pilot, lambda: any("Logged out of MCP server 'secure'" in s for s in _infos(app)), 30
        )
        await wait_until(pilot, lambda: mcp.status("secure").needs_login, 30, "needs login again")
        assert not (tmp_path / "data" / "turnstone" / "mcp-auth" / "secure.json").exists()

        # /mcp login does the same as l.
        app.run_slash_command("/mcp login secure")
        await wait_until(pilot, lambda: mcp.status("secure").state is ServerState.CONNECTED, 60, "connected")
        assert len(browser.urls) == 2


async def test_esc_on_the_login_screen_cancels(
    secure_runtime: Runtime, oauth_servers: OAuthServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No browser here (no display): the screen shows the URL to copy; esc gives up cleanly."""
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    called: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: called.append(url) or True)
    app = TurnstoneApp(secure_runtime, cwd=secure_runtime.options.cwd)
    async with app.run_test(size=APP_SIZE) as pilot:
        await start(pilot)
        app.run_slash_command("/mcp login secure")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, McpLoginScreen) and bool(app.screen.url),
            30,
            "the URL shown",
        )
        screen = app.screen
        assert isinstance(screen, McpLoginScreen) and screen.url.startswith(
            f"{oauth_servers.issuer}/authorize?"
        )
        assert called == []  # no graphical browser expected: webbrowser is not asked
        await pilot.press("escape")
        await wait_until(pilot, lambda: any("cancelled" in s for s in _infos(app)), 10, "the cancel notice")
        assert secure_runtime.mcp.status("secure").needs_login
        assert oauth_servers.events("token") == []
