"""A real MCP server (SDK ``MCPServer``) that asks things of its client, for the client-side tests.

Run as a script: ``python asking_server.py [--transport stdio|http] [--port N]``.

Tools:
- ``book_table``: elicitation form (string with format, integer bounds, boolean, titled enum,
  defaults); answers with what came back.
- ``open_page``: URL-mode elicitation.
- ``summarize``: ``sampling/createMessage`` with the text; answers with the model's reply.
- ``show_roots``: ``roots/list``; answers with the URIs.
- ``steps``: reports progress ``n`` times (with messages) and logs at info/warning/error.
"""

from __future__ import annotations

import argparse
import asyncio

import mcp_types as mt
from mcp.server.mcpserver import Context, MCPServer

FORM_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2, "default": "Ada"},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "guests": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 8, "default": 2},
        "outside": {"type": "boolean", "title": "Sit outside", "default": True},
        "time": {
            "type": "string",
            "title": "Time",
            "oneOf": [
                {"const": "18", "title": "6 pm"},
                {"const": "20", "title": "8 pm"},
            ],
            "default": "20",
        },
    },
    "required": ["name", "email", "guests"],
}


LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


def build_server() -> MCPServer:
    server = MCPServer("asking", instructions="asks its client for input, samples and roots")
    level = {"min": "debug"}

    async def set_level(_ctx: object, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        level["min"] = params.level  # logging/setLevel: the client's choice filters what we send
        return mt.EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", mt.SetLevelRequestParams, set_level)

    async def log(ctx: Context, at: str, text: str) -> None:
        if LEVELS.index(at) >= LEVELS.index(level["min"]):
            await ctx.log(at, text)  # type: ignore[arg-type]

    @server.tool(description="Ask the user to fill in a booking form.")
    async def book_table(ctx: Context) -> str:
        result = await ctx.request_context.session.elicit_form(
            message="Book a table", requested_schema=FORM_SCHEMA, related_request_id=ctx.request_id
        )
        if result.action != "accept":
            return f"booking {result.action}"
        content = result.content or {}
        return "booked: " + ", ".join(f"{k}={content[k]!r}" for k in sorted(content))

    @server.tool(description="Send the user to a web page.")
    async def open_page(url: str, ctx: Context) -> str:
        result = await ctx.elicit_url(message="Please sign the form", url=url, elicitation_id="e-1")
        return f"page {result.action}"

    @server.tool(description="Summarize text with the client's model.")
    async def summarize(text: str, ctx: Context) -> str:
        try:
            result = await ctx.request_context.session.create_message(
                messages=[
                    mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=text)),
                ],
                max_tokens=77,
                system_prompt="Summarize in one line.",
            )
        except Exception as exc:
            return f"sampling failed: {exc}"
        content = result.content
        reply = content.text if isinstance(content, mt.TextContent) else str(content)
        return f"summary ({result.model}): {reply}"

    @server.tool(description="List the client's roots.", annotations=mt.ToolAnnotations(read_only_hint=True))
    async def show_roots(ctx: Context) -> str:
        result = await ctx.request_context.session.list_roots()
        return "\n".join(str(root.uri) for root in result.roots) or "(no roots)"

    @server.tool(
        description="Work in steps, reporting progress and logging.",
        annotations=mt.ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    async def steps(count: int, ctx: Context, pause: float = 0.0) -> str:
        await log(ctx, "info", "starting the steps")
        for i in range(1, count + 1):
            await ctx.report_progress(i, count, f"step {i} of {count}")
            if pause:
                await asyncio.sleep(pause)
        await log(ctx, "warning", "steps almost done")
        await log(ctx, "error", "a step complained")
        return f"did {count} steps"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = build_server()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
