"""skill: find (BM25) and activate markdown skills from ``<config dir>/skills/*.md``.

A skill file:

    ---
    name: code-review
    description: Review a change for bugs and style
    tags: [review, git]
    category: engineering
    ---
    Markdown instructions for the model...

The frontmatter is the simple YAML subset ``key: value`` and ``key: [a, b]`` (quotes optional),
parsed here without a YAML dependency. Without frontmatter the file name is the skill name.
``load`` calls ``ctx.on_skill_loaded(name, content)`` (the session swaps the skill part of the
system prompt) and records ``ctx.active_skill``. ``{{model}}``, ``{{ws_id}}`` and ``{{node_id}}`` in
the content become the model name, the session id and this machine's name (turnstone's node is
the server a workstream runs on; here it is the local host).

MCP prompts that need no arguments are skills too (turnstone's prompt-to-skill sync, locally): they
are read from the connected servers' live prompt lists, so they appear when a server connects or
announces a new prompt and go when it drops one; they are read-only (their text lives on the
server, expanded on load) and a local skill of the same name wins.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..config import config_dir
from ..core.bm25 import BM25Index
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, ToolResult

log = logging.getLogger(__name__)

MAX_SKILL_BYTES = 256 * 1024
SEARCH_RESULTS = 10
# How a skill becomes active, reported by search: a local file is loaded as written, by name; an MCP
# prompt is fetched from its server and expanded when it is loaded.
ACTIVATION_NAMED = "named"
ACTIVATION_MCP_PROMPT = "mcp-prompt"

# A rough screen of what a skill asks the model to do, shown before the user approves a load.
_HIGH_RISK = re.compile(
    r"(curl|wget)[^\n|]*\|\s*(sudo\s+)?(ba|z)?sh\b|rm\s+-[a-z]*r[a-z]*f|ignore (all )?(previous|prior) instructions"
    r"|(send|upload|post)\b[^\n]{0,40}\b(api[_ ]?key|token|password|credential|secret)s?\b|mkfs|dd\s+if=",
    re.I,
)
_MEDIUM_RISK = re.compile(
    r"\bsudo\b|chmod\s+777|\.ssh/|\.env\b|\b(api[_ ]?key|password|secret|token)s?\b|git\s+push\s+(-f|--force)",
    re.I,
)


def assess_risk(content: str) -> str:
    """low / medium / high: a pattern screen of the skill's instructions (not a guarantee)."""
    if _HIGH_RISK.search(content):
        return "high"
    if _MEDIUM_RISK.search(content):
        return "medium"
    return "low"


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    tags: tuple[str, ...]
    category: str
    content: str  # ("" for an MCP prompt until it is loaded)
    path: Path | None = None  # the file of a local skill
    mcp_prompt: str | None = None  # the qualified prompt name of a skill from an MCP server
    server: str = ""

    @property
    def activation(self) -> str:
        return ACTIVATION_MCP_PROMPT if self.mcp_prompt else ACTIVATION_NAMED


def skills_dir(ctx: ToolContext) -> Path:
    return Path(ctx.skills_dir) if ctx.skills_dir else config_dir() / "skills"


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(fields, body). ``tags: [a, b]`` and ``tags: a, b`` give lists; other values are strings."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text
    fields: dict[str, Any] = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if value.startswith("[") and value.endswith("]"):
            fields[key] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        elif key == "tags":
            fields[key] = [_unquote(v) for v in value.split(",") if v.strip()]
        else:
            fields[key] = _unquote(value)
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return fields, body


def load_skill_file(path: Path) -> Skill | None:
    try:
        if path.stat().st_size > MAX_SKILL_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields, body = parse_frontmatter(text)
    tags = fields.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    return Skill(
        name=str(fields.get("name") or path.stem).strip(),
        description=str(fields.get("description") or ""),
        tags=tuple(str(t) for t in tags),
        category=str(fields.get("category") or ""),
        content=body.strip(),
        path=path,
    )


def list_skills(directory: Path) -> list[Skill]:
    if not directory.is_dir():
        return []
    skills = [s for p in sorted(directory.glob("*.md")) if (s := load_skill_file(p)) is not None]
    return sorted(skills, key=lambda s: s.name.lower())


def mcp_skills(ctx: ToolContext, local: list[Skill]) -> list[Skill]:
    """The MCP prompts offered as skills, less those a local skill of the same name overrides."""
    if ctx.mcp is None:
        return []
    local_names = {skill.name.lower() for skill in local}
    skills = []
    for ref in ctx.mcp.skill_prompts():
        if ref.name.lower() in local_names:
            log.warning(
                "MCP prompt %s (%s) skipped as a skill: a local skill has its name", ref.name, ref.server
            )
            continue
        skills.append(
            Skill(
                name=ref.name,
                description=ref.description,
                tags=("mcp",),
                category=f"mcp:{ref.server}",
                content="",
                mcp_prompt=ref.qualified_name,
                server=ref.server,
            )
        )
    return skills


async def available_skills(ctx: ToolContext) -> tuple[list[Skill], Path]:
    """Local skills and MCP prompt skills, by name; and the local skills' folder."""
    directory = skills_dir(ctx)
    local = await asyncio.to_thread(list_skills, directory)
    return sorted([*local, *mcp_skills(ctx, local)], key=lambda s: s.name.lower()), directory


def find_skill(skills: list[Skill], name: str) -> Skill | None:
    wanted = name.strip().lower()
    for skill in skills:
        if skill.name.lower() == wanted or (skill.path is not None and skill.path.stem.lower() == wanted):
            return skill
    return None


def search_skills(skills: list[Skill], query: str, k: int = SEARCH_RESULTS) -> list[Skill]:
    if not query.strip():
        return skills[:k]
    docs = [f"{s.name} {s.name} {s.description} {' '.join(s.tags)} {s.category}" for s in skills]
    return [skills[i] for i, _ in BM25Index(docs).search(query, k)]


def node_id() -> str:
    """This machine's name: the local equivalent of the turnstone node a workstream runs on."""
    return socket.gethostname() or "localhost"


def render(skill: Skill, ctx: ToolContext) -> str:
    variables = {
        "{{model}}": ctx.config.model.name or "",
        "{{ws_id}}": ctx.session_id,
        "{{node_id}}": node_id(),
    }
    content = skill.content
    for placeholder, value in variables.items():
        content = content.replace(placeholder, value)
    return content


def _line(skill: Skill) -> str:
    tags = " ".join(f"#{t}" for t in skill.tags)
    # An MCP skill's text is fetched on load, where its risk is assessed.
    risk = "read-only, risk assessed on load" if skill.mcp_prompt else f"risk {assess_risk(skill.content)}"
    extra = ", ".join(x for x in (skill.category, tags, risk, f"activation {skill.activation}") if x)
    return f"- {skill.name}: {skill.description or '(no description)'}" + (f" [{extra}]" if extra else "")


async def prepare_skill(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    action = args.get("action")
    if action not in ("load", "search"):
        return error_item(call_id, "skill", args, "action must be load or search")
    if action == "search":
        query = args.get("query") or ""
        if not isinstance(query, str):
            return error_item(call_id, "skill", args, "query must be a string")

        async def run_search(ectx: ExecContext) -> ToolResult:
            skills, directory = await available_skills(ctx)
            if not skills:
                return ToolResult(f"No skills installed (add markdown files to {directory}).")
            found = search_skills(skills, query)
            if not found:
                return ToolResult(
                    f"No skill matches {query!r}. Installed: {', '.join(s.name for s in skills)}"
                )
            head = f"Skills matching {query!r}:" if query.strip() else f"{len(skills)} installed skill(s):"
            return ToolResult("\n".join([head, *map(_line, found)]), structured=[s.name for s in found])

        return PreparedItem(
            call_id, "skill", args, f"skill search {query!r}", needs_approval=False, execute=run_search
        )

    name = require_str(args, "name")
    if name is None or not name.strip():
        return error_item(call_id, "skill", args, "skill load needs a 'name'")
    skills, directory = await available_skills(ctx)
    skill = find_skill(skills, name)
    if skill is None:
        known = ", ".join(s.name for s in skills) or f"none installed in {directory}"
        return error_item(call_id, "skill", args, f"no skill named {name!r} (available: {known})")
    if skill.mcp_prompt is not None and ctx.mcp is not None:
        # Expanded now, so the user approves the text that will become part of the system prompt.
        expanded = await ctx.mcp.get_prompt(skill.mcp_prompt, {})
        if expanded.is_error:
            return error_item(call_id, "skill", args, f"MCP skill {skill.name!r}: {expanded.text}")
        skill = replace(skill, content=expanded.text)

    risk = assess_risk(skill.content)
    warning = f"WARNING: {risk} risk: review the instructions before approving.\n\n" if risk == "high" else ""

    async def run_load(ectx: ExecContext) -> ToolResult:
        content = render(skill, ctx)
        if ctx.on_skill_loaded is not None:
            ctx.on_skill_loaded(skill.name, content)
        previous = ctx.active_skill
        ctx.active_skill = skill.name
        replaced = f" (replacing {previous!r})" if previous and previous != skill.name else ""
        caution = (
            f"\nWarning: risk level {risk}: follow it only as far as the user intends."
            if risk == "high"
            else ""
        )
        return ToolResult(
            f"Skill {skill.name!r} activated{replaced}: {skill.description or '(no description)'} "
            f"(risk level: {risk})\nIts instructions are now part of the system prompt.{caution}"
        )

    body = f"{skill.description}\n\n{skill.content[:1500]}" if skill.description else skill.content[:1500]
    return PreparedItem(
        call_id=call_id,
        func_name="skill",
        args=args,
        header=f"skill load {skill.name!r} ({f'MCP: {skill.server}, ' if skill.mcp_prompt else ''}risk {risk})",
        preview=warning + body,
        preview_kind="markdown",
        execute=run_load,
    )


PREPARERS: dict[str, Preparer] = {"skill": prepare_skill}
