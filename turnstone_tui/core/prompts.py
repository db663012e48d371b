"""The system prompt: instructions, environment, project instructions (AGENTS.md), memories, MCP catalogue and the active skill."""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

BASE_INSTRUCTIONS = """\
You are turnstone, an AI agent working in the user's terminal. You can run tools: bash commands,
reading, writing and editing files, searching, math, man pages, the web, memory, watches and
sub-agents. The user approves tool calls that change things before they run.

Guidelines:
- Be direct and concise. Use Markdown for structure when it helps.
- Read a file before editing it; prefer edit_file for small changes and write_file for new files.
- Several independent tool calls may be issued at once; they run in parallel.
- When a tool is denied, do not retry it unchanged: read the user's feedback and adapt.
- Use plan_agent for larger changes so the user can review the plan first."""

SUBAGENT_INSTRUCTIONS = {
    "task": """\
You are a task sub-agent of turnstone. Complete the task you are given autonomously with your tools,
then reply with a concise report of what you did and what you found (your final message is returned
to the main agent).""",
    "plan": """\
You are a planning sub-agent of turnstone. Explore with your read-only tools, then reply with a
structured implementation plan in Markdown: goal, context found, numbered steps (files and changes),
risks and how to verify. Your final message is the plan.""",
}


def environment_section(cwd: Path, model: str) -> str:
    today = datetime.date.today().isoformat()
    return (
        f"<environment>\nworking directory: {cwd}\nplatform: {platform.system()} {platform.release()}\n"
        f"date: {today}\nmodel: {model}\n</environment>"
    )


def build_system_prompt(
    *,
    cwd: Path,
    model: str,
    agent_kind: str = "main",
    memories: str = "",
    instructions: str = "",
    mcp_catalog: str = "",
    skill: tuple[str, str] | None = None,
) -> str:
    parts = [SUBAGENT_INSTRUCTIONS.get(agent_kind, BASE_INSTRUCTIONS), environment_section(cwd, model)]
    if instructions:
        parts.append(instructions)
    if memories:
        parts.append(memories)
    if mcp_catalog:
        parts.append(mcp_catalog)
    if skill:
        name, content = skill
        parts.append(f'<active-skill name="{name}">\n{content}\n</active-skill>')
    return "\n\n".join(parts)
