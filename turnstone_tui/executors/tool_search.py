"""tool_search: the model looks up deferred MCP tools (the index lives in core/tool_search.py)."""

from __future__ import annotations

from typing import Any

from ..core.tool_search import MAX_SEARCH_RESULTS, TOOL_SEARCH_NAME, schema_description, schema_name
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, ToolResult


async def prepare_tool_search(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    query = require_str(args, "query")
    if query is None or not query.strip():
        return error_item(call_id, TOOL_SEARCH_NAME, args, "tool_search needs a non-empty 'query'")
    max_results = args.get("max_results")
    if max_results is not None and (
        isinstance(max_results, bool)
        or not isinstance(max_results, int)
        or not 1 <= max_results <= MAX_SEARCH_RESULTS
    ):
        return error_item(call_id, TOOL_SEARCH_NAME, args, "max_results must be an integer from 1 to 50")

    async def execute(ectx: ExecContext) -> ToolResult:
        manager = ctx.tool_search
        if manager is None or not manager.active or manager.tier != "client":
            return ToolResult(
                "tool_search is not active in this session: every tool is already listed.", True
            )
        found = manager.search(query, max_results)
        if not found:
            return ToolResult(
                f"No tools match {query!r}. Try other keywords (what the tool does, the service)."
            )
        names = [schema_name(s) for s in found]
        manager.expand(names)
        lines = [f"Found {len(found)} tool(s), now available to call:"]
        for schema in found:
            desc = " ".join(schema_description(schema).split())
            lines.append(f"- {schema_name(schema)}: {desc[:300]}")
        return ToolResult("\n".join(lines), structured=names)

    return PreparedItem(
        call_id, TOOL_SEARCH_NAME, args, f"tool_search {query!r}", needs_approval=False, execute=execute
    )


PREPARERS: dict[str, Preparer] = {TOOL_SEARCH_NAME: prepare_tool_search}
