"""Tool search: BM25 over tool names and descriptions, deferral of MCP tools, expansion, the tool itself."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.executors.local_http import make_ctx, run_item
from turnstone_tui.core.registry import default_registry
from turnstone_tui.core.tool_search import (
    TOOL_SEARCH_SCHEMA,
    ToolSearchIndex,
    ToolSearchManager,
    schema_name,
)
from turnstone_tui.executors.tool_search import PREPARERS

pytestmark = pytest.mark.timeout(30)

SERVICES = [
    "github",
    "slack",
    "jira",
    "calendar",
    "drive",
    "postgres",
    "stripe",
    "notion",
    "linear",
    "sentry",
    "figma",
    "zendesk",
    "hubspot",
    "dropbox",
    "twilio",
    "datadog",
    "pagerduty",
    "confluence",
    "gitlab",
    "asana",
]
VERBS = ["create", "list", "delete", "update", "get"]
OBJECTS = ["issue", "message", "event", "file", "record"]


def schema(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {}},
        },
    }


def synthetic_mcp_tools(count: int = 500) -> list[dict[str, Any]]:
    tools = []
    for service, verb, obj in itertools.islice(itertools.product(SERVICES, VERBS, OBJECTS), count):
        tools.append(
            schema(
                f"mcp__{service}__{verb}_{obj}",
                f"{verb.capitalize()} a {obj} in {service.capitalize()} through its API.",
            )
        )
    n = 0
    while len(tools) < count:
        tools.append(schema(f"mcp__misc__tool_{n}", f"Generic helper number {n} for miscellaneous chores."))
        n += 1
    return tools


def test_index_finds_tools_by_name_parts_and_description() -> None:
    index = ToolSearchIndex(synthetic_mcp_tools())
    assert len(index) == 500
    assert index.search("create github issue", 3)[0] == "mcp__github__create_issue"
    assert all(
        n.startswith("mcp__slack__") and n.endswith("_message") for n in index.search("slack message", 5)
    )
    assert set(index.search("pagerduty", 25)) == {f"mcp__pagerduty__{v}_{o}" for v in VERBS for o in OBJECTS}
    # The exact tool name wins.
    assert index.search("mcp__stripe__delete_record", 5)[0] == "mcp__stripe__delete_record"
    assert index.search("zzz nothing like it", 5) == []


def test_manager_defers_mcp_tools_above_the_threshold_and_keeps_expanded() -> None:
    builtins = default_registry().TOOLS
    mcp = synthetic_mcp_tools()
    manager = ToolSearchManager(builtins, mcp, mode="auto", threshold=20, max_results=5)
    assert manager.active
    visible = [schema_name(s) for s in manager.visible_schemas()]
    assert visible == [schema_name(s) for s in builtins] + ["tool_search"]
    assert manager.deferred_count == 500
    found = manager.search("jira issue delete")
    assert schema_name(found[0]) == "mcp__jira__delete_issue" and len(found) == 5
    assert manager.expand(["mcp__jira__delete_issue", "not_a_tool", "bash"]) == ["mcp__jira__delete_issue"]
    assert manager.expand(["mcp__jira__delete_issue"]) == []  # already visible
    assert "mcp__jira__delete_issue" in [schema_name(s) for s in manager.visible_schemas()]
    # A refresh keeps expanded tools that still exist and drops the ones that vanished.
    manager.expand(["mcp__slack__get_file"])
    manager.rebuild([s for s in mcp if schema_name(s) != "mcp__slack__get_file"])
    assert manager.expanded == {"mcp__jira__delete_issue"}


def test_modes_and_threshold() -> None:
    builtins = default_registry().TOOLS
    few = synthetic_mcp_tools(3)
    assert not ToolSearchManager(builtins, few, mode="auto", threshold=30).active
    assert ToolSearchManager(builtins, few, mode="auto", threshold=len(builtins) + 3).active
    assert ToolSearchManager(builtins, few, mode="on", threshold=1000).active
    off = ToolSearchManager(builtins, synthetic_mcp_tools(), mode="off")
    assert not off.active and len(off.visible_schemas()) == len(builtins) + 500
    assert not ToolSearchManager(builtins, [], mode="on").active  # nothing to defer
    with pytest.raises(ValueError):
        ToolSearchManager(builtins, few, mode="sometimes")  # type: ignore[arg-type]


async def test_the_tool_expands_what_it_finds(tmp_path: Path) -> None:
    manager = ToolSearchManager(default_registry().TOOLS, synthetic_mcp_tools(), threshold=20, max_results=3)
    ctx = make_ctx(tmp_path, tool_search=manager)
    item = await PREPARERS["tool_search"](ctx, "s1", {"query": "calendar event create"})
    assert not item.needs_approval
    result = await run_item(item)
    assert not result.is_error
    assert result.text.startswith("Found 3 tool(s), now available")
    assert result.structured[0] == "mcp__calendar__create_event"
    assert "mcp__calendar__create_event: Create a event in Calendar" in result.text
    visible = {schema_name(s) for s in manager.visible_schemas()}
    assert set(result.structured) <= visible
    more = await run_item(await PREPARERS["tool_search"](ctx, "s2", {"query": "stripe", "max_results": 10}))
    assert len(more.structured) == 10
    none = await run_item(await PREPARERS["tool_search"](ctx, "s3", {"query": "qwxzv"}))
    assert "No tools match" in none.text


async def test_the_tool_refuses_bad_input_and_inactive_search(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert (await PREPARERS["tool_search"](ctx, "s", {"query": ""})).error
    assert (await PREPARERS["tool_search"](ctx, "s", {"query": "x", "max_results": 0})).error
    result = await run_item(await PREPARERS["tool_search"](ctx, "s", {"query": "x"}))
    assert result.is_error and "not active" in result.text


def test_schema_shape() -> None:
    fn = TOOL_SEARCH_SCHEMA["function"]
    assert TOOL_SEARCH_SCHEMA["type"] == "function" and fn["name"] == "tool_search"
    assert fn["parameters"]["required"] == ["query"]


def test_built_in_tools_come_before_mcp_tools() -> None:
    """MCP tools are appended after the built-ins (which keep their natural priority), with or
    without tool search."""
    builtins = default_registry().TOOLS
    mcp = synthetic_mcp_tools()
    builtin_names = [schema_name(s) for s in builtins]
    off = ToolSearchManager(builtins, mcp, mode="off", threshold=20, max_results=5)
    assert [schema_name(s) for s in off.visible_schemas()] == builtin_names + [schema_name(s) for s in mcp]
    on = ToolSearchManager(builtins, mcp, mode="on", threshold=20, max_results=5)
    on.expand(["mcp__jira__delete_issue"])
    names = [schema_name(s) for s in on.visible_schemas()]
    assert names[: len(builtin_names)] == builtin_names
    assert names[len(builtin_names) :] == ["tool_search", "mcp__jira__delete_issue"]
