"""Opening the authorization URL in the user's browser, when there is one that will not take the terminal.

Python's ``webbrowser`` falls back to console browsers (lynx, w3m...) that would run in the
foreground, over the TUI. So the browser is opened only where a graphical one can be expected:
macOS, Windows, an X11/Wayland display, or a browser the user named in ``$BROWSER``. The URL is
always shown as well, to copy.
"""

from __future__ import annotations

import asyncio
import os
import sys
import webbrowser


def graphical_browser_expected() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"))


async def open_in_browser(url: str) -> bool:
    """Open ``url`` (in a thread: some launchers block); False when no browser was opened."""
    if not graphical_browser_expected():
        return False
    try:
        return bool(await asyncio.to_thread(webbrowser.open, url))
    except Exception:  # a broken launcher must not break the login: the URL is shown anyway
        return False
