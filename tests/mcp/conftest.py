"""Fixtures for the MCP client tests: real demo servers over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from tests.helpers.mcp_servers import HttpDemoServer
from turnstone_tui.mcp.config import ServerConfig
from turnstone_tui.mcp.manager import McpManager


@pytest.fixture
def http_demo() -> Iterator[HttpDemoServer]:
    server = HttpDemoServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def make_manager() -> AsyncIterator[Callable[..., McpManager]]:
    """Build McpManagers with small timeouts; every one is closed at the end of the test."""
    made: list[McpManager] = []

    def make(servers: list[ServerConfig], **kw: float) -> McpManager:
        kw.setdefault("connect_timeout", 10.0)
        kw.setdefault("call_timeout", 10.0)
        manager = McpManager({s.name: s for s in servers}, **kw)
        made.append(manager)
        return manager

    yield make
    await asyncio.gather(*(m.aclose() for m in made))
