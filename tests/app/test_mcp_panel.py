"""The MCP side panel against the real McpManager and real stdio MCP servers."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from turnstone_tui.core.mcp_bridge import ServerState
from turnstone_tui.mcp.config import ServerConfig
from turnstone_tui.mcp.manager import McpManager
from turnstone_tui.widgets.mcp_panel import McpPanel

pytestmark = pytest.mark.timeout(90)

DEMO = str(Path(__file__).resolve().parents[1] / "helpers" / "mcp_servers" / "demo_server.py")
FAILING = "import sys; sys.stderr.write('boom: missing token\\n'); sys.exit(3)"


def demo(name: str = "demo") -> ServerConfig:
    return ServerConfig(name, "stdio", command=sys.executable, args=(DEMO, "--name", name))


def failing(name: str = "broken") -> ServerConfig:
    return ServerConfig(name, "stdio", command=sys.executable, args=("-c", FAILING))


def fails_once(name: str, flag: Path) -> ServerConfig:
    """Fails on the first start (creating ``flag``), serves the demo server afterwards."""
    script = (
        "import os, sys, runpy\n"
        f"flag = {str(flag)!r}\n"
        "if not os.path.exists(flag):\n"
        "    open(flag, 'w').close(); sys.stderr.write('first start fails\\n'); sys.exit(1)\n"
        f"sys.argv = [{DEMO!r}, '--name', {name!r}]\n"
        f"runpy.run_path({DEMO!r}, run_name='__main__')\n"
    )
    return ServerConfig(name, "stdio", command=sys.executable, args=("-c", script))


class PanelHarness(App[None]):
    def __init__(self, manager: McpManager) -> None:
        super().__init__()
        self.manager = manager
        self.reports: list[tuple[str | None, str]] = []

    def compose(self) -> ComposeResult:
        yield McpPanel(self.manager)

    def on_mcp_panel_refreshed(self, event: McpPanel.Refreshed) -> None:
        self.reports.append((event.server, event.report))


@pytest.fixture
async def manager_factory() -> AsyncIterator[Callable[[dict[str, ServerConfig]], McpManager]]:
    managers: list[McpManager] = []

    def make(servers: dict[str, ServerConfig]) -> McpManager:
        manager = McpManager(servers, connect_timeout=20, call_timeout=20)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        await manager.aclose()


async def wait_until(predicate: Callable[[], bool], limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def label(panel: McpPanel, server: str) -> str:
    return panel._server_nodes[server].label.plain


async def test_connected_and_failed_servers_update_live_from_connecting(manager_factory) -> None:
    manager = manager_factory({"demo": demo(), "broken": failing()})
    app = PanelHarness(manager)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(McpPanel)
        await manager.start()  # the panel is already up: it must follow without any key press
        await pilot.pause()
        await wait_until(lambda: "connected" not in label(panel, "demo") and "tools" in label(panel, "demo"))
        await wait_until(lambda: "failed" in label(panel, "broken"))
        demo_status = manager.status("demo")
        assert demo_status is not None and demo_status.state is ServerState.CONNECTED
        tools = len(demo_status.tools)
        assert label(panel, "demo").startswith("● demo")
        assert f"{tools} tools" in label(panel, "demo")
        broken = panel._server_nodes["broken"]
        assert broken.is_expanded  # a failure opens itself to show the reason
        reason = broken.children[0].label.plain
        assert reason.startswith("⚠") and "boom: missing token" in reason
        # The demo server expands to its tool names.
        demo_node = panel._server_nodes["demo"]
        sections = {child.label.plain.split(" ")[0]: child for child in demo_node.children}
        assert {"Tools", "Resources", "Prompts"} <= set(sections)
        assert {leaf.label.plain for leaf in sections["Tools"].children} == {
            t.name for t in demo_status.tools
        }
        assert "docs://readme" in {leaf.label.plain for leaf in sections["Resources"].children}


async def test_list_changed_updates_the_counts_without_a_key_press(manager_factory) -> None:
    manager = manager_factory({"demo": demo()})
    await manager.start()
    await manager.wait_ready(20)
    app = PanelHarness(manager)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(McpPanel)
        await pilot.pause()
        before = len(manager.status("demo").tools)
        assert f"{before} tools" in label(panel, "demo")
        result = await manager.call_tool("mcp__demo__add_tool", {"tool_name": "late_tool"})
        assert not result.is_error, result.text
        await wait_until(lambda: f"{before + 1} tools" in label(panel, "demo"))
        tools_node = next(
            c for c in panel._server_nodes["demo"].children if c.label.plain.startswith("Tools")
        )
        assert "late_tool" in {leaf.label.plain for leaf in tools_node.children}


async def test_r_refreshes_the_focused_server(manager_factory) -> None:
    manager = manager_factory({"demo": demo(), "other": demo("other")})
    await manager.start()
    await manager.wait_ready(20)
    app = PanelHarness(manager)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(McpPanel)
        panel.server_tree.focus()
        await pilot.pause()
        panel.server_tree.move_cursor(panel._server_nodes["other"])
        await pilot.press("r")
        await wait_until(lambda: bool(app.reports))
        server, report = app.reports[0]
        assert server == "other"
        assert report.startswith("MCP refresh complete:") and "other" in report and "demo:" not in report
        assert panel.refresh_count == 1
        hint = str(panel.query_one("#mcp-hint").render())
        assert "other" in hint
        await pilot.press("R")
        await wait_until(lambda: len(app.reports) == 2)
        assert app.reports[1][0] is None and "demo" in app.reports[1][1] and "other" in app.reports[1][1]


async def test_c_reconnects_a_failed_server(manager_factory, tmp_path: Path) -> None:
    manager = manager_factory({"flaky": fails_once("flaky", tmp_path / "started-once")})
    await manager.start()
    await manager.wait_ready(20)
    assert manager.status("flaky").state is ServerState.FAILED
    app = PanelHarness(manager)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(McpPanel)
        panel.server_tree.focus()
        await pilot.pause()
        assert "failed" in label(panel, "flaky")
        panel.server_tree.move_cursor(panel._server_nodes["flaky"])
        await pilot.press("c")
        await wait_until(lambda: "tools" in label(panel, "flaky"))
        assert label(panel, "flaky").startswith("● flaky")
        # The row updates from the live status; the report comes when the action returns.
        await wait_until(lambda: bool(app.reports))
        assert "reconnected" in app.reports[-1][1]
        # The failure reason left with the failure.
        assert not any(c.label.plain.startswith("⚠") for c in panel._server_nodes["flaky"].children)


async def test_no_manager_says_so() -> None:
    class Empty(App[None]):
        def compose(self) -> ComposeResult:
            yield McpPanel(None)

    app = Empty()
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        assert "No MCP servers configured" in str(app.query_one("#mcp-hint").render())
        await pilot.press("r")  # nothing to refresh: no error


# --- looks and keys (issue 11 item 9) --------------------------------------------------------


def node_text(panel: McpPanel, node) -> str:  # type: ignore[no-untyped-def]
    """The node's line as drawn (guides, label, and any ellipsis)."""
    tree = panel.server_tree
    return tree.render_line(node.line - tree.scroll_offset.y).text


async def test_muted_text_uses_the_theme_not_black(manager_factory) -> None:
    manager = manager_factory({"demo": demo()})
    await manager.start()
    await manager.wait_ready(20)
    app = PanelHarness(manager)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(McpPanel)
        await pilot.pause()
        node = panel._server_nodes["demo"]
        node.expand()
        await pilot.pause()
        background = panel.server_tree.background_colors[1]
        muted = [
            span
            for child in node.children
            for span in child.label.spans
            if child.label.plain[span.start : span.end].strip()
        ]
        assert muted, "the info line and the section counts are muted spans"
        for span in muted:
            color = span.style.color  # type: ignore[union-attr]
            assert color is not None
            red, green, blue = color.get_truecolor()
            assert (red, green, blue) != (0, 0, 0)
            # readable: clearly lighter than the dark panel underneath
            assert (red + green + blue) / 3 > background.brightness * 255 + 60


async def test_a_long_failure_reason_ends_in_an_ellipsis_and_shows_whole_below(manager_factory) -> None:
    manager = manager_factory({"broken": failing()})
    await manager.start()
    await manager.wait_ready(20)
    app = PanelHarness(manager)
    async with app.run_test(size=(60, 30)) as pilot:
        panel = app.query_one(McpPanel)
        panel.styles.width = 40
        await pilot.pause()
        broken = panel._server_nodes["broken"]
        await wait_until(lambda: bool(broken.children))
        reason_node = broken.children[0]
        reason = str(manager.status("broken").error)
        assert "stderr:" in reason and "boom: missing token" in reason
        await pilot.pause()
        drawn = node_text(panel, reason_node).rstrip()
        assert drawn.endswith("…"), drawn
        panel.server_tree.move_cursor(broken)
        await pilot.pause()
        detail = str(panel.query_one("#mcp-detail").render())
        assert "boom: missing token" in " ".join(detail.split())


async def test_a_selected_tool_shows_its_description(manager_factory) -> None:
    manager = manager_factory({"demo": demo()})
    await manager.start()
    await manager.wait_ready(20)
    tool = manager.status("demo").tools[0]
    assert tool.description
    app = PanelHarness(manager)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(McpPanel)
        await pilot.pause()
        node = panel._server_nodes["demo"]
        node.expand()
        tools = next(c for c in node.children if c.label.plain.startswith("Tools"))
        tools.expand()
        await pilot.pause()
        leaf = next(c for c in tools.children if c.label.plain == tool.name)
        panel.server_tree.move_cursor(leaf)
        await pilot.pause()
        detail = " ".join(str(panel.query_one("#mcp-detail").render()).split())
        assert tool.name in detail and " ".join(tool.description.split())[:40] in detail


async def test_r_says_what_it_did(manager_factory) -> None:
    manager = manager_factory({"demo": demo()})
    await manager.start()
    await manager.wait_ready(20)
    app = PanelHarness(manager)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(McpPanel)
        await pilot.pause()
        assert panel.server_tree.has_focus  # opened panels take the keys at once
        await pilot.press("r")
        await wait_until(lambda: bool(app.reports))
        await pilot.pause()
        toasts = [n.message for n in app._notifications]
        assert any("demo" in message for message in toasts), toasts


async def test_f2_moves_focus_into_the_panel_and_back(model_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.app.conftest import make_config
    from turnstone_tui.app.app import TurnstoneApp
    from turnstone_tui.runtime import Runtime, RuntimeOptions

    workdir = tmp_path / "work"
    workdir.mkdir()
    mcp_file = tmp_path / "mcp.json"
    mcp_file.write_text(json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO]}}}))
    options = RuntimeOptions(cwd=workdir, start_mcp=True, start_watches=False, mcp_config_path=str(mcp_file))
    runtime = await Runtime.create(make_config(model_server, tmp_path), options=options)
    try:
        app = TurnstoneApp(runtime, cwd=workdir)
        async with app.run_test(size=(120, 30)) as pilot:
            await asyncio.wait_for(app.wait_ready(), 20)
            await runtime.mcp.wait_ready(20)  # type: ignore[union-attr]
            await pilot.pause()
            assert app.focused is app.prompt
            await pilot.press("f2")
            await wait_until(
                lambda: bool(app.query(McpPanel)) and app.query_one(McpPanel).server_tree.has_focus
            )
            await pilot.press("f2")
            await pilot.pause()
            assert not app.query_one(McpPanel).display and app.focused is app.prompt
            await pilot.press("f2")
            await pilot.pause()
            assert app.query_one(McpPanel).server_tree.has_focus
    finally:
        await runtime.aclose()


async def test_f2_with_no_servers_says_how_to_add_one(model_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """F2 did nothing at all when no server was configured (its binding was hidden)."""
    from tests.app.conftest import make_config
    from turnstone_tui.app.app import TurnstoneApp
    from turnstone_tui.runtime import Runtime, RuntimeOptions

    workdir = tmp_path / "work"
    workdir.mkdir()
    options = RuntimeOptions(cwd=workdir, start_mcp=True, start_watches=False)
    runtime = await Runtime.create(make_config(model_server, tmp_path), options=options)
    try:
        app = TurnstoneApp(runtime, cwd=workdir)
        async with app.run_test(size=(120, 30)) as pilot:
            await asyncio.wait_for(app.wait_ready(), 20)
            await pilot.press("f2")
            await wait_until(lambda: bool(app._notifications))
            toasts = [n.message for n in app._notifications]
            assert any("No MCP servers are configured" in t and "--mcp-config" in t for t in toasts), toasts
            assert not app.query(McpPanel)
            assert app.focused is app.prompt
    finally:
        await runtime.aclose()
