"""Real MCP servers for the MCP client tests and the bench (scripts, plus helpers to start them)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from turnstone_tui.mcp.config import ServerConfig

from .demo_server import PNG_1X1

__all__ = [
    "OAuthServers",
    "browse",
    "ASKING",
    "DEMO",
    "asking_server",
    "PNG_1X1",
    "HttpDemoServer",
    "free_port",
    "stdio_server",
    "wait_for",
]

DEMO = Path(__file__).resolve().parent / "demo_server.py"
ASKING = Path(__file__).resolve().parent / "asking_server.py"
OAUTH = Path(__file__).resolve().parent / "oauth_servers.py"


def asking_server(name: str = "asking") -> ServerConfig:
    """A ServerConfig for the server that asks its client (elicitation, sampling, roots, progress, logs)."""
    return ServerConfig(name, "stdio", command=sys.executable, args=(str(ASKING),))


def stdio_server(name: str, *args: str, protocol: str = "legacy") -> ServerConfig:
    """A ServerConfig that starts the demo server as a stdio subprocess."""
    return ServerConfig(
        name,
        "stdio",
        command=sys.executable,
        args=(str(DEMO), "--name", name, *args),
        protocol=protocol,  # type: ignore[arg-type]
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpDemoServer:
    """The demo server as a streamable-HTTP subprocess on a free 127.0.0.1 port."""

    def __init__(self, *args: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(DEMO),
                "--name",
                "web",
                "--transport",
                "http",
                "--port",
                str(self.port),
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("HTTP demo server exited at startup")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("HTTP demo server did not start listening")

    @classmethod
    def on_port(cls, port: int) -> HttpDemoServer:
        return cls(port=port)

    def config(self, name: str = "web") -> ServerConfig:
        return ServerConfig(name, "http", url=self.url)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


async def wait_for(predicate: Callable[[], bool], within: float = 10.0) -> None:
    """Poll until predicate() is true (for events that arrive in the background)."""
    deadline = time.monotonic() + max(within, 30.0)  # generous: behaviour, not speed
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def _wait_listening(proc: subprocess.Popen[bytes], ports: list[int], what: str) -> None:
    deadline = time.monotonic() + 30
    pending = list(ports)
    while pending and time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited at startup")
        try:
            with socket.create_connection(("127.0.0.1", pending[0]), timeout=0.2):
                pending.pop(0)
        except OSError:
            time.sleep(0.05)
    if pending:
        proc.kill()
        raise RuntimeError(f"{what} did not start listening")


class OAuthServers:
    """The test authorization server and the MCP server it protects (oauth_servers.py), on 127.0.0.1."""

    def __init__(self, *args: str) -> None:
        self.as_port, self.rs_port = free_port(), free_port()
        self.issuer = f"http://127.0.0.1:{self.as_port}"
        self.url = f"http://127.0.0.1:{self.rs_port}/mcp"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(OAUTH),
                "--as-port",
                str(self.as_port),
                "--rs-port",
                str(self.rs_port),
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(self.proc, [self.as_port, self.rs_port], "the OAuth test servers")

    def config(self, name: str = "secure", **oauth: object) -> ServerConfig:
        from turnstone_tui.mcp.auth.settings import parse_oauth

        return ServerConfig(name, "http", url=self.url, oauth=parse_oauth(oauth or None, name))

    def events(self, kind: str | None = None) -> list[dict[str, object]]:
        import httpx

        events = httpx.get(f"{self.issuer}/test/events", timeout=10).json()
        return [e for e in events if kind is None or e["event"] == kind]

    def expire_tokens(self) -> None:
        import httpx

        httpx.post(f"{self.issuer}/test/expire", timeout=10).raise_for_status()

    def revoke_tokens(self) -> None:
        import httpx

        httpx.post(f"{self.issuer}/test/revoke", timeout=10).raise_for_status()

    def mint(self, resource: str, scope: str = "mcp:read") -> dict[str, object]:
        import httpx

        response = httpx.post(
            f"{self.issuer}/test/mint", params={"resource": resource, "scope": scope}, timeout=10
        )
        return response.json()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


async def browse(url: str) -> int:
    """What a browser does with an authorization URL here: follow the redirects (to the loopback
    listener) and return the last status."""
    import httpx

    async with httpx.AsyncClient(follow_redirects=True, timeout=30) as http:
        response = await http.get(url)
    return response.status_code
