"""MCP prompts without arguments are skills: searchable and loadable through the skill tool, live."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.executors.local_http import make_ctx, run_item
from tests.helpers.mcp_servers import stdio_server
from turnstone_tui.core.tools import ToolContext
from turnstone_tui.executors.skill import PREPARERS
from turnstone_tui.mcp.manager import McpManager

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def skill_manager(make_manager: Callable[..., McpManager]) -> McpManager:
    manager = make_manager([stdio_server("demo", "--skill-prompts")])
    await manager.start()
    await manager.wait_ready(20)
    return manager


def context(tmp_path: Path, manager: McpManager, loaded: list[tuple[str, str]] | None = None) -> ToolContext:
    skills = tmp_path / "skills"
    skills.mkdir(exist_ok=True)
    on_loaded = (lambda name, content: loaded.append((name, content))) if loaded is not None else None
    return make_ctx(tmp_path, skills_dir=skills, mcp=manager, on_skill_loaded=on_loaded)


async def search(ctx: ToolContext, query: str = "") -> list[str]:
    item = await PREPARERS["skill"](ctx, "s1", {"action": "search", "query": query})
    result = await run_item(item)
    return list(result.structured or [])


async def test_a_prompt_without_arguments_is_a_skill_and_loads_its_expanded_text(
    tmp_path: Path, skill_manager: McpManager
) -> None:
    loaded: list[tuple[str, str]] = []
    ctx = context(tmp_path, skill_manager, loaded)
    # greet(name) and review(code) need arguments: they stay use_prompt's.
    assert await search(ctx) == ["pr_checklist"]
    item = await PREPARERS["skill"](ctx, "s2", {"action": "search", "query": "pull request review"})
    listing = (await run_item(item)).text
    assert "pr_checklist: Checklist for reviewing a pull request." in listing
    assert "mcp:demo" in listing and "read-only" in listing and "activation mcp-prompt" in listing

    item = await PREPARERS["skill"](ctx, "s3", {"action": "load", "name": "pr_checklist"})
    assert item.error is None and item.needs_approval
    assert item.header == "skill load 'pr_checklist' (MCP: demo, risk low)"
    assert "Check the tests, the error handling and the names" in item.preview  # what is approved
    result = await run_item(item)
    assert "activated" in result.text and ctx.active_skill == "pr_checklist"
    assert loaded == [
        ("pr_checklist", "[user]: Check the tests, the error handling and the names before approving.")
    ]


async def test_a_local_skill_of_the_same_name_wins(tmp_path: Path, skill_manager: McpManager) -> None:
    loaded: list[tuple[str, str]] = []
    ctx = context(tmp_path, skill_manager, loaded)
    (tmp_path / "skills" / "pr_checklist.md").write_text("---\ndescription: my own checklist\n---\nMine.\n")
    item = await PREPARERS["skill"](ctx, "s1", {"action": "search", "query": ""})
    listing = await run_item(item)
    assert listing.structured == ["pr_checklist"] and "my own checklist" in listing.text
    assert "mcp:demo" not in listing.text
    item = await PREPARERS["skill"](ctx, "s2", {"action": "load", "name": "pr_checklist"})
    await run_item(item)
    assert loaded == [("pr_checklist", "Mine.")]


async def test_skills_follow_the_servers_prompt_list(tmp_path: Path, skill_manager: McpManager) -> None:
    ctx = context(tmp_path, skill_manager)
    await skill_manager.call_tool("mcp__demo__add_prompt", {"prompt_name": "standup", "takes_topic": False})
    for _ in range(200):  # prompts/list_changed arrives and the list is fetched again
        if "standup" in await search(ctx):
            break
        await asyncio.sleep(0.05)
    assert await search(ctx) == ["pr_checklist", "standup"]
    item = await PREPARERS["skill"](ctx, "s1", {"action": "load", "name": "standup"})
    assert "Follow the standup routine." in item.preview

    # A server that goes away takes its skills with it.
    await skill_manager.aclose()
    assert await search(ctx) == []
    item = await PREPARERS["skill"](ctx, "s2", {"action": "load", "name": "standup"})
    assert item.error is not None and "no skill named 'standup'" in item.error
