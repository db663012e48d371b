"""An HTTP MCP server that answers 401: the reason and the challenge are kept, the panel says so."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from turnstone_tui.mcp.config import ServerConfig
from turnstone_tui.mcp.manager import ServerState
from turnstone_tui.widgets.mcp_panel import server_label

pytestmark = pytest.mark.timeout(60)

CHALLENGE = (
    'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", scope="files:read"'
)


class _Unauthorized(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def _deny(self) -> None:
        body = b'{"error": "invalid_token"}'
        self.send_response(401)
        self.send_header("WWW-Authenticate", CHALLENGE)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._deny()

    def do_GET(self) -> None:  # noqa: N802
        self._deny()


@pytest.fixture
def unauthorized_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


async def test_401_is_reported_as_needs_login(make_manager, unauthorized_url: str) -> None:
    manager = make_manager([ServerConfig("remote", "http", url=unauthorized_url)])
    await manager.start()
    await manager.wait_ready(30)
    status = manager.status("remote")
    assert status is not None and status.state is ServerState.FAILED and status.needs_login
    assert status.error is not None
    assert status.error.startswith(
        "needs login: the server answered 401 Unauthorized (WWW-Authenticate: Bearer"
    )
    assert 'scope="files:read"' in status.error
    assert "needs login" in server_label(status).plain
    result = await manager.call_tool("mcp__remote__anything", {})
    assert result.is_error and result.text.startswith("MCP server 'remote' is failed: needs login: ")
    assert result.text.endswith("Use /mcp refresh remote to reconnect.")
