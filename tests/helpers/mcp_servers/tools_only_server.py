"""A real MCP server (the SDK's low-level Server) that declares the tools capability only: no
resources, no prompts. A client must not ask it for resources or prompts."""

from __future__ import annotations

import anyio
import mcp_types as mt
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx: object, params: object) -> mt.ListToolsResult:
    tool = mt.Tool(
        name="ping",
        description="Say pong.",
        input_schema={"type": "object", "properties": {}},
    )
    return mt.ListToolsResult(tools=[tool])


async def call_tool(ctx: object, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text="pong")])


server = Server("tools-only", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
