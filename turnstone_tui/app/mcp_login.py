"""``l`` in the MCP panel and ``/mcp login NAME``: log in to an HTTP MCP server in the browser.

The manager runs the OAuth flow (``McpManager.login``); this shows the login screen, opens the
browser (``webbrowser``, where a graphical one can be expected) and shows the URL to copy, then
reports in the chat. ``esc`` on the screen cancels the login (its loopback listener closes).
The server reconnects with the new token, so the panel turns connected by itself.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.worker import Worker

from ..mcp.auth.browser import open_in_browser
from ..mcp.auth.login import LoginError
from .screens.mcp_login import McpLoginScreen

if TYPE_CHECKING:
    from .app import TurnstoneApp


def start_mcp_login(app: TurnstoneApp, server: str) -> Worker[None] | None:
    """Start the login as a worker (one at a time); None when there is no MCP to log in to."""
    runtime = app.runtime
    if runtime is None or runtime.mcp is None:
        app.notify("No MCP servers are configured.", severity="warning")
        return None
    return app.run_worker(_login(app, server), group="mcp-login", exclusive=True, exit_on_error=False)


async def _login(app: TurnstoneApp, server: str) -> None:
    runtime = app.need_runtime()
    assert runtime.mcp is not None
    screen = McpLoginScreen(server)
    task = asyncio.current_task()
    gave_up = False

    def closed(cancelled: bool | None) -> None:
        nonlocal gave_up
        if cancelled and task is not None and not task.done():
            gave_up = True
            task.cancel()

    await app.push_screen(screen, callback=closed)

    async def show(url: str) -> None:
        opened = await open_in_browser(url)
        if screen.is_attached:
            screen.show_url(url, opened)

    try:
        report = await runtime.mcp.login(server, show)
    except LoginError as exc:
        await app.chat.add_error(str(exc))
        return
    except asyncio.CancelledError:
        if gave_up:
            await app.chat.add_info(f"Login to MCP server '{server}' cancelled.")
            return
        raise
    finally:
        if screen.is_attached and app.screen is screen:
            screen.dismiss(False)
    await app.chat.add_info(report)
    app.refresh_status()
