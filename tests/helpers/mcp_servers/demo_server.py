"""A real MCP server for tests and the bench, written with the SDK's ``MCPServer``.

Run as a script: ``python demo_server.py [--transport stdio|http] [--port N] [--extra-tools N]
[--mode normal|hang|garbage|exit|chatty]``.

Tools: echo, add (structured output), image, embedded, fail (isError), slow, crash (exits the process
mid-call), add_tool (registers a tool at run time and sends tools/list_changed).
Resources: docs://readme (text), docs://logo.png (binary), template notes://{topic}.
Prompts: greet(name), review(code); with --skill-prompts also pr_checklist() (no arguments: the
skill tool offers it as a skill). add_prompt registers one at run time and sends prompts/list_changed.
Subscriptions: resources/subscribe is served (handshake era; subscriptions/listen at 2026-07-28);
with --live-resources, a touch_readme tool changes docs://readme and sends notifications/resources/updated for it.
Completion: completion/complete offers names for greet's ``name`` (those starting with the typed
value, from NAMES) and topics for notes://{topic}.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
import time

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, Prompt, UserMessage
from mcp_types import (
    Completion,
    EmbeddedResource,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SubscribeRequestParams,
    TextResourceContents,
    ToolAnnotations,
    UnsubscribeRequestParams,
)

# A 1x1 transparent PNG.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


NAMES = ("Alice", "Alfred", "Bob", "Carol")


def build_server(
    name: str,
    extra_tools: int,
    skill_prompts: bool = False,
    live_resources: bool = False,
    extra_resources: int = 0,
    extra_prompts: int = 0,
) -> MCPServer:
    server = MCPServer(name, instructions="demo server for turnstone-tui tests")
    readme_edits = [0]
    subscribed: set[str] = set()

    async def on_subscribe(ctx: object, params: SubscribeRequestParams) -> EmptyResult:
        subscribed.add(params.uri)
        return EmptyResult()

    async def on_unsubscribe(ctx: object, params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed.discard(params.uri)
        return EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)

    async def touch_readme(ctx: Context) -> str:
        readme_edits[0] += 1
        await ctx.notify_resource_updated("docs://readme")  # 2026-07-28: subscriptions/listen
        if "docs://readme" in subscribed:  # handshake era: only to a client that subscribed
            await ctx.session.send_resource_updated("docs://readme")
        return f"readme edited ({readme_edits[0]}); subscribed: {sorted(subscribed)}"

    if live_resources:
        server.tool(description="Change docs://readme and tell subscribers it changed.")(touch_readme)

    @server.completion()
    async def complete(ref: object, argument: object, context: object) -> Completion | None:
        value = str(getattr(argument, "value", ""))
        if (
            isinstance(ref, PromptReference)
            and ref.name == "greet"
            and getattr(argument, "name", "") == "name"
        ):
            return Completion(values=[n for n in NAMES if n.lower().startswith(value.lower())])
        if isinstance(ref, ResourceTemplateReference):
            return Completion(values=[t for t in ("python", "rust") if t.startswith(value)])
        return None

    @server.tool(description="Echo the text back.", annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        return f"echo: {text}"

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    @server.tool(description="Return a tiny PNG image.")
    def image() -> Image:
        return Image(data=PNG_1X1, format="png")

    @server.tool(description="Return an embedded text resource.")
    def embedded() -> list[EmbeddedResource]:
        contents = TextResourceContents(uri="docs://inline", mime_type="text/plain", text="inline body")
        return [EmbeddedResource(type="resource", resource=contents)]

    @server.tool(description="Always fails.")
    def fail(reason: str = "boom") -> str:
        raise ValueError(f"failed on purpose: {reason}")

    @server.tool(description="Sleep, then answer.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(
        description="Exit the server process in the middle of the call.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    def crash() -> str:
        sys.stderr.write("demo server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(description="Register a new tool at run time and (unless notify=false) announce it.")
    async def add_tool(tool_name: str, ctx: Context, notify: bool = True) -> str:
        def dynamic(text: str = "") -> str:
            return f"{tool_name} says {text}"

        server.add_tool(dynamic, name=tool_name, description=f"Dynamically added tool {tool_name}.")
        if notify:
            await ctx.notify_tools_changed()  # 2026-07-28 clients: subscriptions/listen
            await ctx.session.send_tool_list_changed()  # handshake-era clients: plain notification
        return f"added {tool_name}"

    @server.tool(description="Register a new prompt at run time and announce it.")
    async def add_prompt(prompt_name: str, ctx: Context, takes_topic: bool = True) -> str:
        def dynamic_prompt(topic: str) -> str:
            return f"{prompt_name} about {topic}"

        def plain_prompt() -> str:
            return f"Follow the {prompt_name} routine."

        function = dynamic_prompt if takes_topic else plain_prompt
        server.add_prompt(Prompt.from_function(function, name=prompt_name, description="Added at run time."))
        await ctx.notify_prompts_changed()
        await ctx.session.send_prompt_list_changed()
        return f"added prompt {prompt_name}"

    @server.tool(description="Return the X-Test request header (HTTP only).")
    def whoami(ctx: Context) -> str:
        request = ctx.request_context.request  # the Starlette request over HTTP
        headers = getattr(request, "headers", None) or {}
        return f"x-test={headers.get('x-test', '')}"

    for i in range(extra_tools):

        def make(i: int = i):
            def extra(query: str) -> str:
                return f"extra {i}: {query}"

            return extra

        server.add_tool(make(), name=f"tool_{i:03d}", description=f"Extra tool number {i} for {name}.")

    @server.resource("docs://readme", name="readme", description="Project readme", mime_type="text/plain")
    def readme() -> str:
        edits = f" (edited {readme_edits[0]} times)" if readme_edits[0] else ""
        return f"# {name}\nThe demo readme{edits}."

    @server.resource("docs://logo.png", name="logo", description="Logo image", mime_type="image/png")
    def logo() -> bytes:
        return PNG_1X1

    @server.resource("notes://{topic}", name="note", description="A note by topic", mime_type="text/plain")
    def note(topic: str) -> str:
        return f"note about {topic}"

    @server.prompt(description="Greet someone by name.")
    def greet(name: str) -> str:
        return f"Please greet {name} warmly."

    @server.prompt(description="Review a piece of code.")
    def review(code: str) -> list[Message]:
        return [UserMessage(f"Review this code:\n{code}"), AssistantMessage("I will review it.")]

    def numbered(text: str):  # a handler without parameters (a resource URI has no variables)
        def handler() -> str:
            return text

        return handler

    for i in range(extra_resources):
        server.resource(f"extra://{i:03d}", name=f"extra_{i:03d}", description=f"Extra resource {i}")(
            numbered(f"extra resource {i}")
        )
    for i in range(extra_prompts):
        server.add_prompt(
            Prompt.from_function(
                numbered(f"extra prompt {i}"), name=f"extra_{i:03d}", description=f"Extra {i}."
            )
        )

    if skill_prompts:

        @server.prompt(description="Checklist for reviewing a pull request.")
        def pr_checklist() -> str:
            return "Check the tests, the error handling and the names before approving."

    return server


def hang_forever() -> None:
    """Read stdin and never answer (a server that never completes initialize)."""
    for _line in sys.stdin:
        pass
    time.sleep(3600)


def send_garbage() -> None:
    """Answer every line with something that is not JSON-RPC."""
    for _line in sys.stdin:
        sys.stdout.write("this is not json at all\n")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="demo")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--extra-tools", type=int, default=0)
    parser.add_argument(
        "--skill-prompts", action="store_true", help="add pr_checklist(), a prompt without arguments"
    )
    parser.add_argument(
        "--live-resources", action="store_true", help="add touch_readme(), which changes docs://readme"
    )
    parser.add_argument("--extra-resources", type=int, default=0)
    parser.add_argument("--extra-prompts", type=int, default=0)
    parser.add_argument("--mode", choices=["normal", "hang", "garbage", "exit", "chatty"], default="normal")
    args = parser.parse_args()
    if args.mode == "hang":
        hang_forever()
        return
    if args.mode == "garbage":
        send_garbage()
        return
    if args.mode == "exit":
        sys.stderr.write("demo server: refusing to start (bad setup)\n")
        sys.exit(2)
    server = build_server(
        args.name,
        args.extra_tools,
        args.skill_prompts,
        args.live_resources,
        args.extra_resources,
        args.extra_prompts,
    )
    if args.mode == "chatty":  # a banner on stdout before serving, as many real servers print
        sys.stdout.write("demo server starting up, listening on stdio\n")
        sys.stdout.flush()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
