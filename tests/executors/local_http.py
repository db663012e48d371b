"""Test helpers for the web, notify and agent tool tests: a real HTTP server on 127.0.0.1 and a ToolContext."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.core.registry import default_registry
from turnstone_tui.core.tools import ToolContext
from turnstone_tui.core.types import ExecContext, PreparedItem, ToolResult


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Response:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)


Route = Callable[[Request], Response]


class LocalServer:
    """A threaded HTTP server on 127.0.0.1; ``routes`` maps a path to a function of the request."""

    def __init__(self, routes: dict[str, Route] | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.requests: list[Request] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                owner.requests.append(req)
                route = owner.routes.get(self.path.split("?")[0])
                resp = route(req) if route else Response(404, "not found")
                data = resp.body.encode() if isinstance(resp.body, str) else resp.body
                self.send_response(resp.status)
                headers = {"Content-Type": "text/html; charset=utf-8", **resp.headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _handle  # noqa: N815
            do_POST = _handle  # noqa: N815

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host_port}"

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def make_ctx(tmp_path: Path, **overrides: Any) -> ToolContext:
    config = Config()
    config.db_path = str(tmp_path / "turnstone.db")  # keeps plans (beside the database) in tmp_path
    values: dict[str, Any] = {
        "config": config,
        "registry": default_registry(),
        "cwd": tmp_path,
        "session_id": "sess1",
        "ui": RecordingUI(),
    }
    values.update(overrides)
    return ToolContext(**values)


async def run_item(item: PreparedItem) -> ToolResult:
    """Execute a prepared item the way the pipeline does (after approval)."""
    assert item.error is None, item.error
    assert item.execute is not None
    return await item.execute(ExecContext(item.call_id, lambda line, stream: None))
