"""``/prompt``: an MCP prompt used from the prompt line, its argument values completed by the real
server's ``completion/complete``, and its text sent as the user's message."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.app.conftest import APP_SIZE, make_config
from tests.app.helpers import errors, start, wait_until
from tests.helpers.mcp_servers import DEMO
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.prompt_command import parse_prompt_arguments
from turnstone_tui.core.mcp_bridge import PromptArgumentInfo, PromptInfo
from turnstone_tui.runtime import Runtime, RuntimeOptions
from turnstone_tui.widgets.prompt_input import CompletionMenu

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def mcp_runtime(model_server: ScriptedModelServer, tmp_path: Path) -> AsyncIterator[Runtime]:
    config = make_config(model_server, tmp_path)
    config.mcp.servers = {"demo": {"command": sys.executable, "args": [str(DEMO), "--name", "demo"]}}
    workdir = tmp_path / "work"
    workdir.mkdir()
    runtime = await Runtime.create(config, options=RuntimeOptions(cwd=workdir, start_watches=False))
    await runtime.mcp.wait_ready(60)
    try:
        yield runtime
    finally:
        await runtime.aclose()


def menu_values(app: TurnstoneApp) -> list[str]:
    menu = app.query_one(CompletionMenu)
    return [c.replacement for c in menu.completions] if menu.display else []


async def test_manager_completes_prompt_arguments_from_the_server(mcp_runtime: Runtime) -> None:
    mcp = mcp_runtime.mcp
    assert await mcp.complete_prompt_argument("mcp__demo__greet", "name", "Al") == ["Alice", "Alfred"]
    assert await mcp.complete_prompt_argument("mcp__demo__greet", "name", "") == [
        "Alice",
        "Alfred",
        "Bob",
        "Carol",
    ]
    assert await mcp.complete_prompt_argument("mcp__demo__review", "code", "x") == []  # no suggestions
    assert await mcp.complete_prompt_argument("mcp__demo__nope", "name", "x") == []


async def test_slash_prompt_completes_names_arguments_and_values_then_sends_the_prompt(
    mcp_runtime: Runtime, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("Hello Alice!")])
    app = TurnstoneApp(mcp_runtime, cwd=mcp_runtime.options.cwd)
    async with app.run_test(size=APP_SIZE) as pilot:
        await start(pilot)
        await pilot.click("#prompt")
        for key in "/prompt gr":
            await pilot.press("space" if key == " " else key)
        await wait_until(pilot, lambda: menu_values(app) == ["mcp__demo__greet "], 20, "the prompt's name")
        await pilot.press("tab")  # accept: completion goes on with its arguments
        await wait_until(pilot, lambda: menu_values(app) == ["name="], 20, "the argument's name")
        await pilot.press("tab")
        # the values come from the server's completion/complete
        await wait_until(pilot, lambda: menu_values(app)[:2] == ["name=Alice ", "name=Alfred "], 20, "values")
        await pilot.press("B")
        await wait_until(pilot, lambda: menu_values(app) == ["name=Bob "], 20, "the narrowed values")
        await pilot.press("tab")
        assert app.prompt.text == "/prompt mcp__demo__greet name=Bob "
        await pilot.press("enter")
        await wait_until(pilot, lambda: model_server.model_requests(), 20, "the request")
        await wait_until(pilot, lambda: not app.busy, 20, "the turn to end")
        messages = model_server.model_requests()[0].body["messages"]
        assert messages[-1] == {"role": "user", "content": "Please greet Bob warmly."}

        # A missing required argument is said, nothing is sent.
        app.run_slash_command("/prompt mcp__demo__greet")
        await wait_until(pilot, lambda: any("needs name=" in e for e in errors(app)), 20, "the error")
        assert len(model_server.model_requests()) == 1


def test_arguments_by_name_or_in_order() -> None:
    info = PromptInfo(
        "mcp__s__p",
        "p",
        "",
        (PromptArgumentInfo("a", required=True), PromptArgumentInfo("b")),
    )
    assert parse_prompt_arguments(info, ["x", "y"]) == {"a": "x", "b": "y"}
    assert parse_prompt_arguments(info, ["b=2", "one"]) == {"b": "2", "a": "one"}
    with pytest.raises(ValueError, match="needs a="):
        parse_prompt_arguments(info, ["b=2"])
    with pytest.raises(ValueError, match="no more arguments"):
        parse_prompt_arguments(info, ["1", "2", "3"])
