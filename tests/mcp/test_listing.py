"""``turnstone-tui mcp list``: what a user checking their MCP setup sees."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tests.helpers.mcp_servers import DEMO
from turnstone_tui.config import Config
from turnstone_tui.mcp.listing import run_mcp_list

pytestmark = pytest.mark.timeout(90)


def _config(servers: dict) -> Config:
    cfg = Config()
    cfg.mcp.servers = servers
    cfg.mcp.connect_timeout = 5.0
    return cfg


async def test_all_connected_exit_zero() -> None:
    cfg = _config({"demo": {"command": sys.executable, "args": [str(DEMO), "--name", "demo"]}})
    out = io.StringIO()
    code = await run_mcp_list(cfg, None, out)
    text = out.getvalue()
    assert code == 0, text
    assert text.startswith("demo [stdio] connected - demo, protocol ")
    assert "  tools (10):\n    mcp__demo__echo  Echo the text back.\n" in text
    assert "  resources (3):\n" in text
    assert "    notes://{topic}  A note by topic (template)\n" in text
    assert "  prompts (2):\n    mcp__demo__greet(name)  Greet someone by name.\n" in text
    assert text.endswith("\n1/1 servers connected\n")


async def test_failed_server_shows_reason_exit_one(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "broken": {"command": sys.executable, "args": [str(DEMO), "--mode", "exit"]},
                    "demo": {"command": sys.executable, "args": [str(DEMO), "--name", "demo"]},
                }
            }
        )
    )
    out = io.StringIO()
    code = await run_mcp_list(_config({}), str(path), out)
    text = out.getvalue()
    assert code == 1
    assert "broken [stdio] failed\n" in text
    assert "  reason: the server process exited; stderr: demo server: refusing to start (bad setup)\n" in text
    assert "demo [stdio] connected" in text
    assert text.endswith("\n1/2 servers connected\n")


async def test_bad_config_and_no_servers(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"a__b": {"command": "x"}}}))
    out = io.StringIO()
    assert await run_mcp_list(_config({}), str(path), out) == 1
    text = out.getvalue()
    assert text.startswith("a__b [stdio] failed\n"), text
    assert "  reason: disabled: " in text and "'a__b' must not contain '__'" in text

    out = io.StringIO()
    assert await run_mcp_list(_config({}), None, out) == 1
    assert "No MCP servers configured" in out.getvalue()
