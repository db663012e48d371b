"""The MCP tool family preparers (executors/mcp_tools.py) with a real McpManager and demo server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.mcp_servers import stdio_server
from turnstone_tui.config import Config
from turnstone_tui.core.protocol import NullUI
from turnstone_tui.core.registry import default_registry
from turnstone_tui.core.tools import ToolContext
from turnstone_tui.core.types import ExecContext
from turnstone_tui.executors.mcp_tools import PREPARERS, prepare_mcp_tool
from turnstone_tui.mcp.manager import McpManager

pytestmark = pytest.mark.timeout(90)


def _ctx(tmp_path: Path, mcp: McpManager | None) -> ToolContext:
    return ToolContext(
        config=Config(), registry=default_registry(), cwd=tmp_path, session_id="s", ui=NullUI(), mcp=mcp
    )


def _exec(call_id: str) -> ExecContext:
    return ExecContext(call_id=call_id, emit_lines=lambda lines, stream: None)


@pytest.fixture
async def demo_manager(make_manager) -> McpManager:
    manager = make_manager([stdio_server("demo")])
    await manager.start()
    await manager.wait_ready(20)
    return manager


async def test_mcp_tool_item(tmp_path: Path, demo_manager: McpManager) -> None:
    ctx = _ctx(tmp_path, demo_manager)
    args = {"a": 5, "b": 6}
    item = await prepare_mcp_tool(ctx, "c1", "mcp__demo__add", args)
    assert item.error is None
    assert item.needs_approval
    assert item.header == "mcp: demo › add"
    assert item.preview_kind == "json"
    assert json.loads(item.preview) == args and "\n" in item.preview
    assert item.approval_label == "mcp__demo__add"
    assert item.execute is not None
    result = await item.execute(_exec("c1"))
    assert result.structured == {"sum": 11} and not result.is_error


async def test_mcp_tool_errors(tmp_path: Path, demo_manager: McpManager) -> None:
    item = await prepare_mcp_tool(_ctx(tmp_path, None), "c1", "mcp__demo__add", {})
    assert item.error is not None and "no MCP server provides tool 'mcp__demo__add'" in item.error
    assert not item.needs_approval and item.execute is None

    item = await prepare_mcp_tool(_ctx(tmp_path, demo_manager), "c2", "mcp__demo__missing", {})
    assert item.error == "no MCP server provides tool 'mcp__demo__missing'"

    item = await prepare_mcp_tool(_ctx(tmp_path, demo_manager), "c3", "not_mcp", {})
    assert item.error is not None and "not an MCP tool name" in item.error


async def test_read_resource_and_use_prompt(tmp_path: Path, demo_manager: McpManager) -> None:
    ctx = _ctx(tmp_path, demo_manager)
    item = await PREPARERS["read_resource"](ctx, "r1", {"uri": "docs://readme"})
    assert item.error is None and item.needs_approval
    assert "docs://readme" in item.header
    assert item.execute is not None
    assert (await item.execute(_exec("r1"))).text == "# demo\nThe demo readme."

    item = await PREPARERS["use_prompt"](ctx, "p1", {"name": "mcp__demo__greet", "arguments": {"name": "Bo"}})
    assert item.error is None and item.needs_approval
    assert item.header == "use_prompt: mcp__demo__greet"
    assert item.execute is not None
    assert (await item.execute(_exec("p1"))).text == "[user]: Please greet Bo warmly."

    bad = await PREPARERS["use_prompt"](ctx, "p2", {"name": "mcp__demo__greet", "arguments": {"name": ["x"]}})
    assert bad.error is not None and "must be a string" in bad.error
    unknown = await PREPARERS["use_prompt"](ctx, "p3", {"name": "mcp__demo__nope"})
    assert unknown.error == "no MCP server provides prompt 'mcp__demo__nope'"
    no_uri = await PREPARERS["read_resource"](ctx, "r2", {})
    assert no_uri.error is not None and "uri" in no_uri.error

    no_mcp = _ctx(tmp_path, None)
    assert "no MCP server provides resource" in (
        (await PREPARERS["read_resource"](no_mcp, "r3", {"uri": "x://y"})).error or ""
    )
    assert "no MCP server provides prompt" in (
        (await PREPARERS["use_prompt"](no_mcp, "p4", {"name": "mcp__a__b"})).error or ""
    )


async def test_results_are_truncated(tmp_path: Path, demo_manager: McpManager) -> None:
    ctx = _ctx(tmp_path, demo_manager)
    ctx.config.tools.truncation = 20
    item = await prepare_mcp_tool(ctx, "c1", "mcp__demo__echo", {"text": "x" * 200})
    assert item.execute is not None
    result = await item.execute(_exec("c1"))
    assert "truncated" in result.text and len(result.text) < 200
