"""OAuth for HTTP MCP servers against real partners: the test authorization server and the MCP
server it protects (tests/helpers/mcp_servers/oauth_servers.py), both on 127.0.0.1.

The browser is ``browse()``: it follows the authorization URL with httpx, as a browser would,
to the loopback redirect listener.
"""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import time
from pathlib import Path

import pytest

from tests.helpers.mcp_servers import OAuthServers, browse
from turnstone_tui.mcp.auth.login import LoginError
from turnstone_tui.mcp.auth.store import TokenStore
from turnstone_tui.mcp.manager import ServerState

pytestmark = pytest.mark.timeout(120)


class Browser:
    """Stands in for the user's browser: every URL shown is followed in a task."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.tasks: list[asyncio.Task[int]] = []

    def __call__(self, url: str) -> None:
        self.urls.append(url)
        self.tasks.append(asyncio.create_task(browse(url)))


async def _logged_in(make_manager, servers: OAuthServers, auth_dir: Path, **oauth: object):  # noqa: ANN202
    manager = make_manager([servers.config("secure", **oauth)], auth_dir=auth_dir)
    await manager.start()
    await manager.wait_ready(30)
    browser = Browser()
    report = await manager.login("secure", browser)
    return manager, browser, report


async def test_needs_login_then_browser_login_connects(
    make_manager, oauth_servers: OAuthServers, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth_dir = tmp_path / "auth"
    manager = make_manager([oauth_servers.config("secure")], auth_dir=auth_dir)
    await manager.start()
    await manager.wait_ready(30)
    status = manager.status("secure")
    assert status is not None and status.state is ServerState.FAILED and status.needs_login, status
    assert "resource_metadata=" in (status.error or "")
    assert "/mcp login secure" in (status.error or "")
    assert oauth_servers.events("register") == []  # connecting alone never registers or opens a browser

    browser = Browser()
    report = await manager.login("secure", browser)
    assert report.startswith("Logged in to MCP server 'secure' in the browser")
    assert report.endswith("connected: 3 tools"), report
    assert [await t for t in browser.tasks] == [200]
    status = manager.status("secure")
    assert status is not None and status.state is ServerState.CONNECTED and not status.needs_login
    result = await manager.call_tool("mcp__secure__whoami", {})
    assert not result.is_error and result.text.startswith("protected hello to client-"), result.text

    # Discovery, dynamic registration, PKCE S256 with the resource parameter (RFC 8707).
    (register,) = oauth_servers.events("register")
    assert register["auth_method"] == "none"  # a public client, as the server allows
    (authorize,) = oauth_servers.events("authorize")
    assert authorize["client_id"] == register["client_id"]
    assert authorize["code_challenge_method"] == "S256" and authorize["code_challenge"]
    assert authorize["resource"] == oauth_servers.url
    assert authorize["scope"] == "mcp:read offline_access"  # scopes_supported, plus refresh
    assert authorize["redirect_uri"].startswith("http://127.0.0.1:")
    (token,) = oauth_servers.events("token")
    assert token["grant"] == "authorization_code" and token["pkce"] is True and "error" not in token
    assert token["resource"] == oauth_servers.url

    # The token file: 0600 in a 0700 directory, bound to the URL; the token is in no log.
    store_path = auth_dir / "secure.json"
    assert stat.S_IMODE(store_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(auth_dir.stat().st_mode) == 0o700
    saved = json.loads(store_path.read_text())
    assert saved["url"] == oauth_servers.url
    access = saved["tokens"]["access_token"]
    assert access not in caplog.text and saved["tokens"]["refresh_token"] not in caplog.text
    assert access not in report


async def test_token_survives_restart_and_expired_token_is_refreshed(
    make_manager, oauth_servers: OAuthServers, tmp_path: Path
) -> None:
    auth_dir = tmp_path / "auth"
    first, _, _ = await _logged_in(make_manager, oauth_servers, auth_dir)
    await first.aclose()

    # A restart: a new manager reads the stored token and connects without any login.
    second = make_manager([oauth_servers.config("secure")], auth_dir=auth_dir)
    await second.start()
    await second.wait_ready(30)
    assert second.status("secure").state is ServerState.CONNECTED
    await second.aclose()
    assert len(oauth_servers.events("authorize")) == 1

    # The stored token expired (its recorded expiry is past): refreshed before it is sent.
    path = auth_dir / "secure.json"
    data = json.loads(path.read_text())
    old_access = data["tokens"]["access_token"]
    data["expires_at"] = time.time() - 5
    path.write_text(json.dumps(data))
    oauth_servers.expire_tokens()
    third = make_manager([oauth_servers.config("secure")], auth_dir=auth_dir)
    await third.start()
    await third.wait_ready(30)
    assert third.status("secure").state is ServerState.CONNECTED
    assert (await third.call_tool("mcp__secure__whoami", {})).text.startswith("protected hello")
    await third.aclose()
    refreshes = [e for e in oauth_servers.events("token") if e["grant"] == "refresh_token"]
    assert len(refreshes) == 1 and "error" not in refreshes[0]
    assert refreshes[0]["resource"] == oauth_servers.url
    assert len(oauth_servers.events("authorize")) == 1  # no new login
    assert json.loads(path.read_text())["tokens"]["access_token"] != old_access

    # The server expired the token though our record says it is fresh: the 401 is answered
    # with the refresh token, not a login.
    oauth_servers.expire_tokens()
    fourth = make_manager([oauth_servers.config("secure")], auth_dir=auth_dir)
    await fourth.start()
    await fourth.wait_ready(30)
    assert fourth.status("secure").state is ServerState.CONNECTED, fourth.status("secure")
    refreshes = [e for e in oauth_servers.events("token") if e["grant"] == "refresh_token"]
    assert len(refreshes) == 2
    assert len(oauth_servers.events("authorize")) == 1


async def test_token_for_another_resource_is_refused(
    make_manager, oauth_servers: OAuthServers, tmp_path: Path
) -> None:
    auth_dir = tmp_path / "auth"
    other = oauth_servers.mint("http://127.0.0.1:9/other-mcp")
    store = TokenStore("secure", oauth_servers.url, auth_dir)
    from mcp.shared.auth import OAuthToken

    await store.set_tokens(OAuthToken.model_validate(other))
    manager = make_manager([oauth_servers.config("secure")], auth_dir=auth_dir)
    await manager.start()
    await manager.wait_ready(30)
    status = manager.status("secure")
    assert status.state is ServerState.FAILED and status.needs_login, status
    # The same token for the right resource is taken: the refusal was about the audience.
    right = oauth_servers.mint(oauth_servers.url)
    await store.set_tokens(OAuthToken.model_validate(right))
    await manager.refresh("secure")
    assert manager.status("secure").state is ServerState.CONNECTED


async def test_tokens_are_not_sent_to_another_url(oauth_servers: OAuthServers, tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthToken

    store = TokenStore("secure", oauth_servers.url, tmp_path)
    await store.set_tokens(OAuthToken(access_token="at-secret", expires_in=60, refresh_token="rt-secret"))
    moved = TokenStore("secure", "https://elsewhere.example/mcp", tmp_path)
    assert await moved.get_tokens() is None and moved.expires_at() is None
    assert (await store.get_tokens()).access_token == "at-secret"
    assert "at-secret" not in repr(store)


async def test_step_up_scope_is_asked_at_the_next_login(
    make_manager, oauth_servers: OAuthServers, tmp_path: Path
) -> None:
    auth_dir = tmp_path / "auth"
    manager, _, _ = await _logged_in(make_manager, oauth_servers, auth_dir)
    denied = await manager.call_tool("mcp__secure__admin_reset", {})
    assert denied.is_error and denied.text == (
        "MCP server 'secure' refused tool 'admin_reset': it needs more permission "
        "(scope 'mcp:read mcp:admin'); the user can grant it by logging in again: /mcp login secure "
        "(l in the MCP panel)"
    )
    assert manager.status("secure").state is ServerState.CONNECTED  # other tools still work
    assert not (await manager.call_tool("mcp__secure__whoami", {})).is_error
    assert TokenStore("secure", oauth_servers.url, auth_dir).wanted_scope() == "mcp:read mcp:admin"
    assert len(oauth_servers.events("authorize")) == 1  # a connection never starts a login itself

    browser = Browser()
    report = await manager.login("secure", browser)
    assert "connected" in report
    authorize = oauth_servers.events("authorize")[-1]
    assert set(authorize["scope"].split()) == {"mcp:read", "mcp:admin", "offline_access"}
    assert (await manager.call_tool("mcp__secure__admin_reset", {})).text == "admin reset done"
    assert TokenStore("secure", oauth_servers.url, auth_dir).wanted_scope() == ""


async def test_login_errors_are_clear(make_manager, oauth_servers: OAuthServers, tmp_path: Path) -> None:
    from tests.helpers.mcp_servers import stdio_server

    manager = make_manager([oauth_servers.config("secure"), stdio_server("local")], auth_dir=tmp_path)
    with pytest.raises(LoginError, match="no MCP server named 'nope'"):
        await manager.login("nope", print)
    with pytest.raises(LoginError, match="only HTTP servers log in"):
        await manager.login("local", print)


async def test_client_credentials_connect_without_a_person(make_manager, tmp_path: Path) -> None:
    servers = OAuthServers("--client-id", "robot", "--client-secret", "robot-secret")
    try:
        config = servers.config(
            "secure", client_id="robot", client_secret="robot-secret", grant="client_credentials"
        )
        manager = make_manager([config], auth_dir=tmp_path)
        await manager.start()
        await manager.wait_ready(30)
        assert manager.status("secure").state is ServerState.CONNECTED, manager.status("secure")
        assert (await manager.call_tool("mcp__secure__whoami", {})).text == "protected hello to robot"
        (token,) = servers.events("token")
        assert token["grant"] == "client_credentials" and token["auth"] == "client_secret_basic"
        assert servers.events("register") == [] and servers.events("authorize") == []
    finally:
        servers.stop()


async def test_pre_registered_client_uses_the_advertised_auth_method(make_manager, tmp_path: Path) -> None:
    """No dynamic registration; the server takes only client_secret_post: the secret goes in the body."""
    servers = OAuthServers(
        "--no-dcr",
        "--auth-methods",
        "client_secret_post",
        "--client-id",
        "app",
        "--client-secret",
        "app-secret",
        "--client-auth-method",
        "client_secret_post",
    )
    try:
        manager, browser, report = await _logged_in(
            make_manager, servers, tmp_path, client_id="app", client_secret="app-secret"
        )
        assert report.endswith("connected: 3 tools"), report
        assert servers.events("register") == []
        (authorize,) = servers.events("authorize")
        assert authorize["client_id"] == "app"
        (token,) = servers.events("token")
        assert token["auth"] == "client_secret_post" and token["pkce"] is True and "error" not in token
        assert "app-secret" not in (tmp_path / "secure.json").read_text()  # the config's secret stays there
    finally:
        servers.stop()


async def test_step_up_is_tried_once_per_scope(tmp_path: Path) -> None:
    """An interactive provider re-authorizes on 403 insufficient_scope; when the server never grants
    the scope, it does not ask again and again (the limit)."""
    import httpx2

    from turnstone_tui.mcp.auth.loopback import LoopbackRedirect
    from turnstone_tui.mcp.auth.provider import BrowserOAuth
    from turnstone_tui.mcp.auth.settings import DEFAULT

    stingy = OAuthServers("--grantable", "mcp:read,offline_access")
    loopback = LoopbackRedirect()
    await loopback.start()
    browser = Browser()

    async def show(url: str) -> None:
        browser(url)

    try:
        store = TokenStore("secure", stingy.url, tmp_path)
        auth = BrowserOAuth(
            stingy.url,
            DEFAULT,
            store,
            redirect_uri=loopback.redirect_uri,
            show_url=show,
            wait_for_code=loopback.wait,
        )
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            first = await http.post(stingy.url, json=init, headers=headers)
            assert first.status_code == 200
            headers["mcp-session-id"] = first.headers["mcp-session-id"]
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "admin_reset"}}
            assert (await http.post(stingy.url, json=call, headers=headers)).status_code == 403
            assert len(stingy.events("authorize")) == 2  # the login, then one step-up
            assert "mcp:admin" in stingy.events("authorize")[-1]["scope"]
            assert (await http.post(stingy.url, json=call, headers=headers)).status_code == 403
            assert len(stingy.events("authorize")) == 2  # the same scope is not asked for again
    finally:
        await loopback.close()
        stingy.stop()


async def test_two_instances_share_a_rotating_refresh_token(
    make_manager, oauth_servers: OAuthServers, tmp_path: Path
) -> None:
    """Two turnstone-tui processes, one token file: the server rotates refresh tokens, so the second
    one's refresh is refused; it takes the tokens the first one stored instead of needing a login."""
    auth_dir = tmp_path / "auth"
    first, _, _ = await _logged_in(make_manager, oauth_servers, auth_dir)
    second = make_manager([oauth_servers.config("secure")], auth_dir=auth_dir)
    await second.start()
    await second.wait_ready(30)
    assert second.status("secure").state is ServerState.CONNECTED
    oauth_servers.expire_tokens()
    assert not (await first.call_tool("mcp__secure__whoami", {})).is_error  # refreshes, rotates
    result = await second.call_tool("mcp__secure__whoami", {})
    assert not result.is_error, result.text
    grants = [e for e in oauth_servers.events("token") if e["grant"] == "refresh_token"]
    assert [e.get("error") for e in grants] == [None, "invalid_grant"]
    assert len(oauth_servers.events("authorize")) == 1


async def test_client_id_metadata_document_before_dynamic_registration(make_manager, tmp_path: Path) -> None:
    """The server supports both: the configured Client ID Metadata Document URL is the client_id and
    nothing is registered (the spec's order: pre-registered, then CIMD, then dynamic registration)."""
    servers = OAuthServers("--cimd")
    document = "https://turnstone.example/oauth/client.json"
    try:
        manager, _, report = await _logged_in(make_manager, servers, tmp_path, client_metadata_url=document)
        assert report.endswith("connected: 3 tools"), report
        assert servers.events("register") == []
        (authorize,) = servers.events("authorize")
        assert authorize["client_id"] == document and authorize["code_challenge_method"] == "S256"
        (token,) = servers.events("token")
        assert token["auth"] == "none" and token["pkce"] is True
        assert (await manager.call_tool("mcp__secure__whoami", {})).text == f"protected hello to {document}"
    finally:
        servers.stop()


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_calls_to_a_logged_in_server_run_in_parallel(make_manager, tmp_path: Path, mode: str) -> None:
    """The SDK's provider holds a lock from sending a request until its answer's headers: a server
    that answers JSON (headers come with the result) would get one call at a time. Two calls of
    ``rendezvous`` only both say "met" when the server sees them at the same time."""
    servers = OAuthServers(*(["--json-response"] if mode == "json" else []))
    try:
        manager = make_manager([servers.config("secure")], auth_dir=tmp_path, call_timeout=60.0)
        await manager.start()
        await manager.wait_ready(30)
        await manager.login("secure", Browser())
        results = await asyncio.gather(
            manager.call_tool("mcp__secure__rendezvous", {}), manager.call_tool("mcp__secure__rendezvous", {})
        )
        assert [r.text for r in results] == ["met", "met"]
    finally:
        servers.stop()


async def test_a_server_never_logged_in_to_gets_no_oauth_provider(tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthToken

    from turnstone_tui.mcp.auth.provider import BrowserOAuth, ClientCredentialsOAuth
    from turnstone_tui.mcp.auth.settings import parse_oauth
    from turnstone_tui.mcp.config import ServerConfig
    from turnstone_tui.mcp.server_conn import ServerConnection

    url = "http://127.0.0.1:9/mcp"

    def conn(**oauth: object) -> ServerConnection:
        return ServerConnection(
            ServerConfig("secure", "http", url=url, oauth=parse_oauth(oauth or None, "t")),
            connect_timeout=5,
            call_timeout=5,
            refresh_interval=0,
            on_state=lambda c: None,
            on_update=lambda *a: None,
            auth_dir=tmp_path,
        )

    assert conn()._auth() is None  # plain HTTP servers keep their old path
    robot = conn(client_id="robot", client_secret="s", grant="client_credentials")
    assert isinstance(robot._auth(), ClientCredentialsOAuth)  # no person needed: always ready
    await TokenStore("secure", url, tmp_path).set_tokens(OAuthToken(access_token="at-x", expires_in=60))
    assert isinstance(conn()._auth(), BrowserOAuth)


async def test_a_revoked_login_turns_the_server_to_needs_login(
    make_manager, oauth_servers: OAuthServers, tmp_path: Path
) -> None:
    manager, _, _ = await _logged_in(make_manager, oauth_servers, tmp_path)
    oauth_servers.revoke_tokens()  # access and refresh tokens: nothing left to refresh with
    result = await manager.call_tool("mcp__secure__whoami", {})
    assert result.is_error and result.text == (
        "MCP server 'secure' refused tool 'whoami': the login expired or was revoked; log in again: "
        "/mcp login secure (l in the MCP panel)"
    )
    status = manager.status("secure")
    assert status.state is ServerState.FAILED and status.needs_login, status
    assert (await manager.login("secure", Browser())).endswith("connected: 3 tools")
    assert not (await manager.call_tool("mcp__secure__whoami", {})).is_error
