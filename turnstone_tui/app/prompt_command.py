"""``/prompt``: use an MCP prompt from the prompt line, with its arguments completed by the server.

``/prompt mcp__docs__review code=...`` gets the prompt (``prompts/get``) and sends its text as the
user's message. Completion: the first word completes prompt names; later words complete the
prompt's argument names (``name=``) and then their values from the server's
``completion/complete`` (with the arguments already typed as context), as Claude Code offers MCP
prompts as slash commands.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ..core.mcp_bridge import McpBridge, PromptInfo

if TYPE_CHECKING:
    from .app import TurnstoneApp

MAX_NAME_COMPLETIONS = 50


def _mcp(app: TurnstoneApp) -> McpBridge | None:
    runtime = app.runtime
    return runtime.mcp if runtime is not None else None


def _find(mcp: McpBridge, name: str) -> PromptInfo | None:
    """A prompt by its qualified name, or by its own name when only one server has it."""
    prompts = mcp.prompts()
    exact = [p for p in prompts if p.qualified_name == name]
    if exact:
        return exact[0]
    by_own_name = [p for p in prompts if p.name == name]
    return by_own_name[0] if len(by_own_name) == 1 else None


def _argument_hint(info: PromptInfo) -> str:
    return " ".join(f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in info.arguments)


def complete_prompt_names(app: TurnstoneApp, partial: str) -> list[tuple[str, str, bool]]:
    """``(qualified name, description, reopen)``: prompts whose name starts with (else contains)
    ``partial``; a prompt with arguments keeps completing after it is chosen."""
    mcp = _mcp(app)
    if mcp is None:
        return []
    prompts = sorted(mcp.prompts(), key=lambda p: p.qualified_name)
    starts = [p for p in prompts if p.qualified_name.startswith(partial) or p.name.startswith(partial)]
    contains = [p for p in prompts if partial and partial in p.qualified_name and p not in starts]
    return [
        (p.qualified_name, " ".join(filter(None, [p.description, _argument_hint(p)])), bool(p.arguments))
        for p in [*starts, *contains][:MAX_NAME_COMPLETIONS]
    ]


def _split(argument: str) -> list[str]:
    try:
        return shlex.split(argument)
    except ValueError:  # an open quote while typing
        return argument.split()


async def complete_prompt_arguments(app: TurnstoneApp, argument: str) -> list[tuple[str, str, bool]]:
    """Completions for the last word of ``argument`` (after the prompt's name): argument names not
    given yet (``name=``), or, after ``name=``, the server's suggested values."""
    mcp = _mcp(app)
    if mcp is None:
        return []
    words = argument.split(" ")
    info = _find(mcp, words[0])
    if info is None:
        return []
    last = words[-1]
    given = dict(w.split("=", 1) for w in _split(" ".join(words[1:-1])) if "=" in w)
    if "=" not in last:
        return [
            (f"{a.name}=", a.description + (" (required)" if a.required else ""), True)
            for a in info.arguments
            if a.name not in given and a.name.startswith(last)
        ]
    name, value = last.split("=", 1)
    if name not in {a.name for a in info.arguments}:
        return []
    values = await mcp.complete_prompt_argument(info.qualified_name, name, value, given)
    return [(f"{name}={shlex.quote(v)}", "", False) for v in values]


def parse_prompt_arguments(info: PromptInfo, words: list[str]) -> dict[str, str]:
    """``name=value`` words, or bare words for the arguments in order; ValueError when wrong."""
    names = [a.name for a in info.arguments]
    values: dict[str, str] = {}
    positional = 0
    for word in words:
        name, eq, value = word.partition("=")
        if eq and name in names:
            values[name] = value
            continue
        while positional < len(names) and names[positional] in values:
            positional += 1
        if positional >= len(names):
            raise ValueError(f"{info.qualified_name} takes no more arguments (got {word!r})")
        values[names[positional]] = word
        positional += 1
    missing = [a.name for a in info.arguments if a.required and a.name not in values]
    if missing:
        raise ValueError(f"{info.qualified_name} needs {', '.join(f'{m}=…' for m in missing)}")
    return values


def prompt_list(mcp: McpBridge) -> str:
    prompts = sorted(mcp.prompts(), key=lambda p: p.qualified_name)
    if not prompts:
        return "No MCP prompts: no connected server offers any."
    lines = [
        "**MCP prompts** (`/prompt NAME [arg=value ...]`; tab completes names, arguments and values):",
        "",
    ]
    for p in prompts:
        hint = _argument_hint(p)
        lines.append(
            f"- `{p.qualified_name}`"
            + (f" {hint}" if hint else "")
            + (f" — {p.description}" if p.description else "")
        )
    return "\n".join(lines)


async def run_prompt(app: TurnstoneApp, argument: str) -> None:
    mcp = _mcp(app)
    if mcp is None:
        await app.chat.add_error("/prompt: no MCP servers are configured.")
        return
    if not argument:
        await app.chat.add_markdown_info(prompt_list(mcp))
        return
    name, *words = _split(argument)
    info = _find(mcp, name)
    if info is None:
        await app.chat.add_error(f"/prompt: no MCP prompt named {name!r} (/prompt lists them)")
        return
    values = parse_prompt_arguments(info, words)
    result = await mcp.get_prompt(info.qualified_name, values)
    if result.is_error:
        await app.chat.add_error(f"/prompt: {result.text}")
        return
    text = result.text
    if text.startswith("[user]: ") and "\n\n[" not in text:  # one user message: its words alone
        text = text.removeprefix("[user]: ")
    app.send_prompt(text)
