"""MCP tool family: ``mcp__<server>__<tool>`` calls, ``read_resource`` and ``use_prompt``.

All of them need approval (the client cannot know an external tool is read-only). An MCP tool's
approval label is its full name, so "always" applies per tool. Results go through ``ctx.mcp``
(the McpManager) and are truncated with ``[tools] truncation``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.truncate import truncate_output
from ..core.types import ExecContext, PreparedItem, ToolResult

MCP_PREFIX = "mcp__"


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return repr(value)


def _truncated(ctx: ToolContext, result: ToolResult) -> ToolResult:
    limit = ctx.config.tools.truncation
    text = truncate_output(result.text, limit)
    if text is result.text:
        return result
    parts = result.content_parts
    if parts and parts[0].get("type") == "text":
        parts = [{"type": "text", "text": text}, *parts[1:]]
    return replace(result, text=text, content_parts=parts)


def _split(name: str) -> tuple[str, str] | None:
    if not name.startswith(MCP_PREFIX):
        return None
    server, sep, tool = name[len(MCP_PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


def _no_mcp(kind: str, what: str) -> str:
    return f"no MCP server provides {kind} '{what}' (no MCP servers are configured or connected)"


async def prepare_mcp_tool(ctx: ToolContext, call_id: str, name: str, args: dict[str, Any]) -> PreparedItem:
    """Any ``mcp__<server>__<tool>`` call: approval with the arguments as pretty JSON."""
    parts = _split(name)
    if parts is None:
        return error_item(call_id, name, args, f"'{name}' is not an MCP tool name (mcp__<server>__<tool>)")
    mcp = ctx.mcp
    if mcp is None:
        return error_item(call_id, name, args, _no_mcp("tool", name))
    if not mcp.has_tool(name):
        return error_item(call_id, name, args, f"no MCP server provides tool '{name}'")
    if not isinstance(args, dict):
        return error_item(call_id, name, {}, f"arguments for '{name}' must be a JSON object")
    server, tool = parts
    found = mcp.tool_server(name)
    if found:
        server, tool = found

    async def execute(ectx: ExecContext) -> ToolResult:
        ui = ctx.ui

        def progress(value: float, total: float | None, message: str | None) -> None:
            ui.on_tool_progress(ectx.call_id, value, total, message)

        return _truncated(ctx, await mcp.call_tool(name, args, on_progress=progress))

    info = mcp.tool_info(name)
    hint = info.hint_label() if info is not None else ""
    # Annotations are the server's claims: shown in the approval modal; trusted to skip the
    # question only when the user opted in ([mcp] auto_approve_read_only).
    trusted_read_only = hint == "read-only" and ctx.config.mcp.auto_approve_read_only
    return PreparedItem(
        call_id=call_id,
        func_name=name,
        args=args,
        header=f"mcp: {server} › {tool}" + (f"  [{hint}]" if hint else ""),
        preview=_pretty(args),
        preview_kind="json",
        needs_approval=not trusted_read_only,
        execute=execute,
        approval_label=name,
        read_only=hint == "read-only",
    )


async def prepare_read_resource(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    uri = require_str(args, "uri")
    if uri is None:
        return error_item(call_id, "read_resource", args, "read_resource needs a non-empty 'uri' string")
    mcp = ctx.mcp
    if mcp is None:
        return error_item(call_id, "read_resource", args, _no_mcp("resource", uri))
    server = mcp.resource_server(uri)
    if server is None:
        return error_item(call_id, "read_resource", args, f"no MCP server provides resource '{uri}'")

    async def execute(ectx: ExecContext) -> ToolResult:
        return _truncated(ctx, await mcp.read_resource(uri))

    return PreparedItem(
        call_id, "read_resource", args, f"read_resource: {uri} (mcp: {server})", preview=uri, execute=execute
    )


def _prompt_arguments(raw: Any) -> dict[str, str] | str:
    """The prompt arguments as strings, or the reason they are unusable."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return "'arguments' must be an object of string values"
    if not isinstance(raw, dict):
        return "'arguments' must be an object of string values"
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            out[str(key)] = value
        elif isinstance(value, (int, float, bool)):
            out[str(key)] = json.dumps(value)
        else:
            return f"argument '{key}' must be a string, got {type(value).__name__}"
    return out


async def prepare_use_prompt(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    name = require_str(args, "name")
    if name is None:
        return error_item(
            call_id, "use_prompt", args, "use_prompt needs a non-empty 'name' (mcp__<server>__<prompt>)"
        )
    arguments = _prompt_arguments(args.get("arguments"))
    if isinstance(arguments, str):
        return error_item(call_id, "use_prompt", args, arguments)
    mcp = ctx.mcp
    if mcp is None:
        return error_item(call_id, "use_prompt", args, _no_mcp("prompt", name))
    if not mcp.has_prompt(name):
        return error_item(call_id, "use_prompt", args, f"no MCP server provides prompt '{name}'")

    async def execute(ectx: ExecContext) -> ToolResult:
        return _truncated(ctx, await mcp.get_prompt(name, arguments))

    return PreparedItem(
        call_id=call_id,
        func_name="use_prompt",
        args=args,
        header=f"use_prompt: {name}",
        preview=_pretty(arguments) if arguments else "(no arguments)",
        preview_kind="json" if arguments else "text",
        execute=execute,
    )


PREPARERS: dict[str, Preparer] = {
    "read_resource": prepare_read_resource,
    "use_prompt": prepare_use_prompt,
}
