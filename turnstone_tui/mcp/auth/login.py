"""A browser login to one HTTP MCP server, shared by ``turnstone-tui mcp login``, ``/mcp login`` and ``l``.

It listens on a loopback port, sends the server an ``initialize`` without a token, and lets the SDK
provider run the flow from the 401: the authorization URL goes to ``show_url`` (which opens the
browser and shows the URL to copy), the redirect brings the code back, the tokens land in the
server's token file. The caller then reconnects the server, which picks the tokens up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

from .loopback import LoopbackRedirect
from .provider import BrowserOAuth, ClientCredentialsOAuth
from .settings import OAuthSettings
from .store import TokenStore

log = logging.getLogger(__name__)

LOGIN_TIMEOUT = 300.0  # seconds the user has to finish in the browser
_PROBE_VERSION = "2025-11-25"

ShowUrl = Callable[[str], Awaitable[None] | None]


class LoginError(Exception):
    """The login did not complete; the message says why, for the user."""


def _initialize_body() -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": _PROBE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "turnstone-tui", "version": "0.1.0"},
        },
    }


async def login(
    name: str,
    url: str,
    settings: OAuthSettings,
    store: TokenStore,
    show_url: ShowUrl,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = LOGIN_TIMEOUT,  # noqa: ASYNC109 - the browser part is bounded here
) -> str:
    """Log in to the server; returns what to tell the user. LoginError when it fails."""
    if not settings.enabled:
        raise LoginError(f"MCP server '{name}': OAuth is turned off for it (oauth = false)")
    loopback = LoopbackRedirect()
    wanted_port = settings.redirect_port or store.redirect_port()
    try:
        await loopback.start(wanted_port)
    except OSError as exc:
        if settings.redirect_port:
            raise LoginError(
                f"MCP server '{name}': cannot listen on the redirect port {wanted_port}: {exc.strerror}"
            ) from None
        await loopback.start(0)
    try:
        if loopback.port != store.redirect_port():
            if not settings.client_id:
                store.forget_client()  # registered for another redirect URI
            store.set_redirect_port(loopback.port)
        shown: list[str] = []

        async def on_url(authorization_url: str) -> None:
            shown.append(authorization_url)
            result = show_url(authorization_url)
            if result is not None:
                await result

        async def wait_for_code():  # noqa: ANN202
            try:
                async with asyncio.timeout(timeout):
                    return await loopback.wait()
            except TimeoutError:
                raise LoginError(
                    f"MCP server '{name}': no answer from the browser within {timeout:g}s"
                ) from None

        if settings.grant == "client_credentials":
            auth: httpx2.Auth = ClientCredentialsOAuth(url, settings, store, fresh=True)
        else:
            auth = BrowserOAuth(
                url,
                settings,
                store,
                redirect_uri=loopback.redirect_uri,
                show_url=on_url,
                wait_for_code=wait_for_code,
                fresh=True,
            )
        try:
            async with httpx2.AsyncClient(auth=auth, headers=headers or None, timeout=30.0) as http:
                response = await http.post(
                    url,
                    json=_initialize_body(),
                    headers={
                        "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": _PROBE_VERSION,
                    },
                )
                session = response.headers.get("mcp-session-id")
                if session:  # the probe's session is of no further use
                    with contextlib.suppress(httpx2.HTTPError):
                        await http.delete(url, headers={"mcp-session-id": session})
        except LoginError:
            raise
        except (OAuthFlowError, OAuthTokenError, OAuthRegistrationError) as exc:
            raise LoginError(f"MCP server '{name}': login failed: {exc}") from None
        except httpx2.HTTPError as exc:
            raise LoginError(f"MCP server '{name}': login failed: {type(exc).__name__}: {exc}") from None
        if response.status_code in (401, 403):
            raise LoginError(
                f"MCP server '{name}': the server still refuses the login ({response.status_code})"
            )
        if not shown and settings.grant != "client_credentials":
            return f"MCP server '{name}' did not ask for a login (it answered {response.status_code})"
        store.clear_wanted_scope()
        how = "with the client credentials" if settings.grant == "client_credentials" else "in the browser"
        return f"Logged in to MCP server '{name}' {how}; the token is stored in {store.path}"
    finally:
        await loopback.close()


def logout(name: str, store: TokenStore) -> str:
    """Forget the server's tokens and registration; what to tell the user."""
    if store.clear():
        return f"Logged out of MCP server '{name}': removed {store.path}"
    return f"MCP server '{name}': no stored login"
