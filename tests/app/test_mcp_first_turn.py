"""The first prompt waits (bounded, visibly, esc skips) for MCP servers still connecting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.conftest import APP_SIZE, make_config
from tests.app.helpers import infos, submit_now, wait_until
from tests.helpers.mcp_servers import asking_server, stdio_server
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.runtime import Runtime, RuntimeOptions

pytestmark = pytest.mark.timeout(180)


async def _runtime(server: ScriptedModelServer, tmp_path: Path, servers: dict, wait: float) -> Runtime:
    config = make_config(server, tmp_path)
    config.mcp.servers = servers
    config.mcp.first_turn_wait = wait
    config.tools.search = "off"  # every tool schema goes to the model (none deferred to tool_search)
    config.mcp.connect_timeout = 120
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    return await Runtime.create(config, options=RuntimeOptions(cwd=workdir, start_watches=False))


def _table(config) -> dict:
    return {"command": config.command, "args": list(config.args)}


async def test_first_turn_waits_for_connecting_servers(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    runtime = await _runtime(model_server, tmp_path, {"asking": _table(asking_server())}, 120)
    model_server.script([Reply.text("ready")])
    try:
        app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
        async with app.run_test(size=APP_SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready, 30, "the session")
            await submit_now(pilot, "hello")
            await wait_until(pilot, lambda: app.turns_finished == 1 and not app.busy, 120, "the turn")
            body = model_server.model_requests()[-1].body
            names = [t["function"]["name"] for t in body.get("tools", [])]
            assert "mcp__asking__book_table" in names
    finally:
        await runtime.aclose()


async def test_esc_goes_on_without_a_server_that_hangs(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    runtime = await _runtime(
        model_server, tmp_path, {"mute": _table(stdio_server("mute", "--mode", "hang"))}, 120
    )
    model_server.script([Reply.text("answered anyway")])
    try:
        app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
        async with app.run_test(size=APP_SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready, 30, "the session")
            await submit_now(pilot, "hello")
            await wait_until(
                pilot,
                lambda: any(
                    "waiting up to 120s for MCP server(s) still connecting: mute" in t for t in infos(app)
                ),
                30,
            )
            assert not model_server.model_requests()
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.turns_finished == 1 and not app.busy, 60, "the turn")
            assert any("going on without MCP server(s) still connecting: mute" in t for t in infos(app))
            assert not any("waiting up to" in t for t in infos(app))  # the notice went away
    finally:
        await runtime.aclose()
