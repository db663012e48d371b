"""structuredContent is validated against the tool's outputSchema (real MCP server): a result
that breaks it is a tool error naming the mismatch, the server stays connected, a good one goes
to the model with its structured value."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from turnstone_tui.core.mcp_bridge import ServerState
from turnstone_tui.mcp.config import ServerConfig
from turnstone_tui.mcp.manager import McpManager

pytestmark = pytest.mark.timeout(120)

SCHEMA_SERVER = Path(__file__).resolve().parents[1] / "helpers" / "mcp_servers" / "schema_server.py"


async def test_structured_content_is_checked_against_the_output_schema() -> None:
    config = ServerConfig("schema", "stdio", command=sys.executable, args=(str(SCHEMA_SERVER),))
    manager = McpManager({"schema": config}, connect_timeout=60, call_timeout=30)
    await manager.start()
    await manager.wait_ready(90)
    try:
        good = await manager.call_tool("mcp__schema__good_sum", {"a": 1, "b": 2})
        assert not good.is_error and good.structured == {"sum": 3}
        bad = await manager.call_tool("mcp__schema__bad_sum", {"a": 1, "b": 2})
        assert bad.is_error
        assert "does not match its outputSchema" in bad.text and "'3' is not of type 'integer'" in bad.text
        status = manager.status("schema")
        assert status is not None and status.state is ServerState.CONNECTED  # the reply, not the server
        again = await manager.call_tool("mcp__schema__good_sum", {"a": 2, "b": 2})
        assert again.structured == {"sum": 4}
    finally:
        await manager.aclose()
