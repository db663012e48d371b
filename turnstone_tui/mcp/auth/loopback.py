"""The loopback redirect of a browser login (RFC 8252 §7.3): a one-shot HTTP listener on 127.0.0.1.

The authorization server sends the browser to ``http://127.0.0.1:<port>/callback?code=...&state=...``;
the listener answers with a short page and hands the code and state to the OAuth flow (which checks
the state). Only that path counts; anything else (a favicon request) gets 404. Bounded: one request
line and headers of at most 16 KiB, a few seconds to send them.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult

CALLBACK_PATH = "/callback"
_MAX_HEAD = 16 * 1024
_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>turnstone-tui</title></head>"
    "<body style='font-family:sans-serif;margin:3em'><h2>{title}</h2><p>{text}</p></body></html>"
)


class LoopbackRedirect:
    """Listens for the one redirect of a login; ``wait()`` returns its code and state."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def start(self, port: int = 0) -> None:
        """Bind 127.0.0.1:port (0: a free port). OSError when the port is taken."""
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def wait(self) -> AuthorizationCodeResult:
        """The next redirect's code and state (a step-up in the same session waits for another)."""
        assert self._result is not None, "start() first"
        result = await asyncio.shield(self._result)
        self._result = asyncio.get_running_loop().create_future()
        return result

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        if self._result is not None and not self._result.done():
            self._result.cancel()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(10):
                head = await reader.readuntil(b"\r\n\r\n")
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        if len(head) > _MAX_HEAD:
            await self._respond(writer, 431, "Request too large", "")
            return
        try:
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        except ValueError:
            await self._respond(writer, 400, "Bad request", "")
            return
        url = urlsplit(target)
        if method != "GET" or url.path != CALLBACK_PATH:
            await self._respond(writer, 404, "Not found", "")
            return
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        result = self._result
        if "error" in query:
            reason = query["error"] + (
                f": {query['error_description']}" if "error_description" in query else ""
            )
            await self._respond(writer, 400, "Login failed", f"The server said {reason}.")
            if result is not None and not result.done():
                result.set_exception(OAuthFlowError(f"the authorization server refused the login ({reason})"))
            return
        if "code" not in query:
            await self._respond(writer, 400, "Login failed", "The redirect carried no authorization code.")
            return
        await self._respond(
            writer, 200, "Logged in", "turnstone-tui has the authorization; you can close this tab."
        )
        if result is not None and not result.done():
            result.set_result(
                AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))
            )

    @staticmethod
    async def _respond(writer: asyncio.StreamWriter, status: int, title: str, text: str) -> None:
        body = _PAGE.format(title=html.escape(title), text=html.escape(text)).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 431: "Request Header Fields Too Large"}
        writer.write(
            f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()
