"""A real MCP server whose tools declare an outputSchema: one keeps to it, one breaks it (its
structuredContent reports the sum as a string where the schema says integer)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

server = MCPServer("schema")


class Sum(BaseModel):
    sum: int


@server.tool(description="Add two integers; the structured result keeps to the schema.")
def good_sum(a: int, b: int) -> Sum:
    return Sum(sum=a + b)


@server.tool(description="Add two integers; the structured result breaks the schema.")
def bad_sum(a: int, b: int) -> Annotated[CallToolResult, Sum]:
    text = str(a + b)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"sum": text})


if __name__ == "__main__":
    server.run("stdio")
