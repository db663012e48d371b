"""``turnstone-tui mcp list``: connect to every configured server and print what it offers."""

from __future__ import annotations

from typing import TextIO

from ..config import Config, ConfigError
from ..core.mcp_bridge import ServerState, ServerStatus
from .manager import McpManager


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or "—"


def format_tool_table(statuses: list[ServerStatus]) -> str:
    """``/mcp``: the connected servers' tools as a Markdown table (name, server, read-only hint,
    description), then the servers that are not connected and why."""
    connected = [s for s in statuses if s.state is ServerState.CONNECTED]
    tools = [(status.name, tool) for status in connected for tool in status.tools]
    lines = [f"**MCP tools ({len(tools)})**", ""]
    if tools:
        lines += ["| tool | server | read-only | description |", "|---|---|---|---|"]
        for server, tool in tools:
            hint = {True: "yes", False: "no", None: "—"}[tool.read_only]
            lines.append(f"| `{tool.qualified_name}` | {server} | {hint} | {_cell(tool.description)} |")
    else:
        lines.append("No tools: no connected server offers any.")
    others = [s for s in statuses if s.state is not ServerState.CONNECTED]
    if others:
        lines.append("")
        lines += [
            f"- {s.name}: {s.state.value}" + (f" ({_cell(s.error)})" if s.error else "") for s in others
        ]
    return "\n".join(lines)


def format_status(status: ServerStatus) -> list[str]:
    """The lines ``mcp list`` prints for one server."""
    head = f"{status.name} [{status.transport}] {status.state.value}"
    if status.state is ServerState.CONNECTED and status.server_name:
        version = f" {status.server_version}" if status.server_version else ""
        head += f" - {status.server_name}{version}, protocol {status.protocol_version}"
    lines = [head, f"  target: {status.target}"]
    if status.state is not ServerState.CONNECTED:
        lines.append(f"  reason: {status.error or 'not connected'}")
        return lines
    lines.append(f"  tools ({len(status.tools)}):")
    lines.extend(f"    {t.qualified_name}  {t.description}".rstrip() for t in status.tools)
    lines.append(f"  resources ({len(status.resources)}):")
    lines.extend(
        f"    {r.uri}  {r.description or r.name}{' (template)' if r.template else ''}".rstrip()
        for r in status.resources
    )
    lines.append(f"  prompts ({len(status.prompts)}):")
    for p in status.prompts:
        args = ", ".join(a.name + ("" if a.required else "?") for a in p.arguments)
        lines.append(f"    {p.qualified_name}({args})  {p.description}".rstrip())
    return lines


async def run_mcp_list(cfg: Config, mcp_config_path: str | None, out: TextIO) -> int:
    """Print each server's state (and reason), tools, resources and prompts.

    Returns 0 when every server connected, 1 otherwise (also for a bad config or no servers).
    """
    try:
        manager = McpManager.from_config(cfg, mcp_config_path)
    except ConfigError as exc:
        out.write(f"error: {exc}\n")
        return 1
    if not manager.server_names:
        out.write("No MCP servers configured ([mcp.servers.<name>] in config.toml, or --mcp-config FILE).\n")
        return 1
    try:
        await manager.start()
        await manager.wait_ready(cfg.mcp.connect_timeout + 5)
        statuses = manager.statuses()
    finally:
        await manager.aclose()
    connected = 0
    for i, status in enumerate(statuses):
        if i:
            out.write("\n")
        out.write("\n".join(format_status(status)) + "\n")
        connected += status.state is ServerState.CONNECTED
    out.write(f"\n{connected}/{len(statuses)} servers connected\n")
    return 0 if connected == len(statuses) else 1
