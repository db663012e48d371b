"""``/mcp`` lists the connected MCP tools in the chat (as the spec's /mcp does); F2 keeps the panel."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.app.conftest import APP_SIZE, make_config
from tests.app.helpers import start, wait_until
from tests.helpers.mcp_servers import DEMO
from tests.helpers.model_server import ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.runtime import Runtime, RuntimeOptions
from turnstone_tui.widgets.chat_messages import AssistantMessage
from turnstone_tui.widgets.mcp_panel import McpPanel

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def mcp_runtime(model_server: ScriptedModelServer, tmp_path: Path) -> AsyncIterator[Runtime]:
    config = make_config(model_server, tmp_path)
    config.mcp.servers = {
        "demo": {"command": sys.executable, "args": [str(DEMO), "--name", "demo"]},
        "broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
    }
    workdir = tmp_path / "work"
    workdir.mkdir()
    runtime = await Runtime.create(config, options=RuntimeOptions(cwd=workdir, start_watches=False))
    await runtime.mcp.wait_ready(60)
    try:
        yield runtime
    finally:
        await runtime.aclose()


def info_blocks(app: TurnstoneApp) -> list[str]:
    return [m.source for m in app.query(AssistantMessage) if m.has_class("-info")]


async def test_slash_mcp_lists_the_connected_tools_and_f2_still_toggles_the_panel(
    mcp_runtime: Runtime,
) -> None:
    app = TurnstoneApp(mcp_runtime, cwd=mcp_runtime.options.cwd)
    async with app.run_test(size=APP_SIZE) as pilot:
        await start(pilot)
        app.run_slash_command("/mcp")
        await wait_until(pilot, lambda: any("MCP tools" in s for s in info_blocks(app)), 20, "the tool list")
        listing = next(s for s in info_blocks(app) if "MCP tools" in s)
        rows = {line.split("|")[1].strip(): line for line in listing.splitlines() if line.startswith("| `")}
        demo_tools = [t.qualified_name for t in mcp_runtime.mcp.status("demo").tools]
        assert f"**MCP tools ({len(demo_tools)})**" in listing
        assert sorted(rows) == sorted(f"`{name}`" for name in demo_tools)
        assert rows["`mcp__demo__echo`"] == "| `mcp__demo__echo` | demo | yes | Echo the text back. |"
        assert "| `mcp__demo__crash` | demo | no |" in rows["`mcp__demo__crash`"]
        assert "| `mcp__demo__add` | demo | — | Add two integers. |" == rows["`mcp__demo__add`"]
        assert "- broken: failed" in listing  # a server that did not connect is named, not hidden
        assert not app.query(McpPanel)  # /mcp no longer toggles the panel

        def panel_shown() -> bool:
            return any(panel.display for panel in app.query(McpPanel))

        await pilot.press("f2")
        await wait_until(pilot, panel_shown, 10, "the MCP panel")
        await pilot.press("f2")
        await wait_until(pilot, lambda: not panel_shown(), 10, "the panel to hide")


async def test_slash_tools_says_which_tool_search_tier_is_in_use(mcp_runtime: Runtime) -> None:
    app = TurnstoneApp(mcp_runtime, cwd=mcp_runtime.options.cwd)
    async with app.run_test(size=APP_SIZE) as pilot:
        await start(pilot)
        app.run_slash_command("/tools")
        await wait_until(
            pilot, lambda: any("**Tools**" in s for s in info_blocks(app)), 20, "the /tools text"
        )
        text = next(s for s in info_blocks(app) if "**Tools**" in s)
        mcp_count = len(mcp_runtime.mcp.tool_schemas())
        # 19 built-ins + the demo tools pass the threshold of 20: the MCP tools are deferred and the
        # OpenAI-protocol model gets the client-side tool_search function (20 tools sent).
        assert f"**Tools**: 20 sent to the model (19 built-in, {mcp_count} MCP)" in text
        assert "Tool search tier for `scripted-model`: client-side (the tool_search function)" in text
