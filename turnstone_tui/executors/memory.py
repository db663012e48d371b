"""memory: typed, scoped memories in SQLite (save / get / search / delete / list).

Scopes: ``global`` (every session), ``workstream`` (this session only: scope_id = session id),
``user`` (follows the local user: scope_id = the OS login name; with one user per terminal it is
visible everywhere, like global, but says whose preference it is).

``memory_prompt_section`` picks the memories that go into the system prompt at session start:
feedback first, then user preferences, then project and reference memories; within a type the
most recently updated first. Feedback and user memories change how the assistant should behave
in every session, so they win over project facts when the budget is short.
"""

from __future__ import annotations

import getpass
import re
import time
from typing import TYPE_CHECKING, Any

from ..core.bm25 import BM25Index
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, ToolResult

if TYPE_CHECKING:
    from ..storage.db import Storage

TYPES = ("user", "project", "feedback", "reference")
SCOPES = ("global", "workstream", "user")
ACTIONS = ("save", "get", "search", "delete", "list")
MAX_CONTENT_CHARS = 20_000
MAX_NAME_CHARS = 100
DEFAULT_LIMIT = 20
PROMPT_TYPE_ORDER = {"feedback": 0, "user": 1, "project": 2, "reference": 3}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def local_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "user"


def scope_id_for(scope: str, session_id: str) -> str:
    if scope == "workstream":
        return session_id
    if scope == "user":
        return local_user()
    return ""


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def format_memory(row: dict[str, Any], *, full: bool = True) -> str:
    head = f"{row['name']} [{row['type']}, {row['scope']}] (updated {_when(row['updated'])})"
    desc = f"\n  {row['description']}" if row.get("description") else ""
    content = row["content"] if full else _clip(row["content"], 200)
    return f"{head}{desc}\n  {content}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def find_visible(storage: Storage, name: str, session_id: str, scope: str | None) -> dict | None:
    """The memory ``name`` this session can see: the given scope, else workstream > user > global."""
    scopes = (scope,) if scope else ("workstream", "user", "global")
    for s in scopes:
        row = await storage.get_memory(name, scope=s, scope_id=scope_id_for(s, session_id))
        if row:
            return row
    return None


def rank_memories(rows: list[dict[str, Any]], query: str, limit: int) -> list[dict[str, Any]]:
    index = BM25Index([f"{r['name']} {r['name']} {r['description']} {r['content']}" for r in rows])
    return [rows[i] for i, _score in index.search(query, limit)]


async def memory_prompt_section(storage: Storage, session_id: str, limit: int = 10) -> str:
    """Memories for the system prompt at session start ("" when there are none)."""
    rows = await storage.list_memories(visible_to=session_id)
    if not rows:
        return ""
    rows.sort(key=lambda r: (PROMPT_TYPE_ORDER.get(r["type"], 9), -r["updated"]))
    chosen = rows[:limit]
    lines = ["## Memories (saved in earlier sessions; use the memory tool to update them)"]
    for r in chosen:
        desc = f" ({_clip(r['description'], 120)})" if r.get("description") else ""
        lines.append(f"- [{r['type']}] {r['name']}{desc}: {_clip(r['content'], 400)}")
    if len(rows) > len(chosen):
        lines.append(f"({len(rows) - len(chosen)} more: memory action=search or list)")
    return "\n".join(lines)


class StoredMemories:
    """The memories saved in storage, as a session's MemorySource."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    async def prompt_section(self, session_id: str) -> str:
        return await memory_prompt_section(self.storage, session_id)


def _validate(args: dict[str, Any]) -> str | None:
    action = args.get("action")
    if action not in ACTIONS:
        return f"action must be one of {', '.join(ACTIONS)}"
    if args.get("type") is not None and args["type"] not in TYPES:
        return f"type must be one of {', '.join(TYPES)}"
    if args.get("scope") is not None and args["scope"] not in SCOPES:
        return f"scope must be one of {', '.join(SCOPES)}"
    limit = args.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        return "limit must be a positive integer"
    name = args.get("name")
    if action in ("save", "get", "delete"):
        if not isinstance(name, str) or not name.strip():
            return f"memory {action} needs a 'name'"
        if len(name) > MAX_NAME_CHARS or not _NAME.match(name):
            return "name must be a short identifier (letters, digits, _ . -), e.g. preferred_test_runner"
    if action == "save":
        content = require_str(args, "content")
        if content is None or not content.strip():
            return "memory save needs 'content'"
        if len(content) > MAX_CONTENT_CHARS:
            return f"content is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}"
        if args.get("description") is not None and not isinstance(args["description"], str):
            return "description must be a string"
    if action == "search" and not require_str(args, "query"):
        return "memory search needs a 'query'"
    return None


async def prepare_memory(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    problem = _validate(args)
    if problem:
        return error_item(call_id, "memory", args, problem)
    if ctx.storage is None:
        return error_item(call_id, "memory", args, "memory is unavailable: no database is open")
    storage = ctx.storage
    action: str = args["action"]
    name = str(args.get("name") or "").strip()
    scope: str | None = args.get("scope")
    limit: int = min(int(args.get("limit", DEFAULT_LIMIT)), 200)

    async def execute(ectx: ExecContext) -> ToolResult:
        sid = ctx.session_id
        if action == "save":
            s = scope or "global"
            replaced = await storage.save_memory(
                name,
                str(args["content"]),
                description=str(args.get("description") or ""),
                type=str(args.get("type") or "project"),
                scope=s,
                scope_id=scope_id_for(s, sid),
            )
            return ToolResult(f"Memory {name!r} {'updated' if replaced else 'saved'} ({s} scope).")
        if action == "get":
            row = await find_visible(storage, name, sid, scope)
            if row is None:
                return ToolResult(f"No memory named {name!r}.", is_error=True)
            return ToolResult(format_memory(row), structured=row)
        if action == "delete":
            row = await find_visible(storage, name, sid, scope)
            if row is None:
                return ToolResult(f"No memory named {name!r} to delete.", is_error=True)
            await storage.delete_memory(name, scope=row["scope"], scope_id=row["scope_id"])
            return ToolResult(f"Memory {name!r} deleted ({row['scope']} scope).")
        rows = await storage.list_memories(visible_to=sid, type=args.get("type"))
        if scope:
            rows = [r for r in rows if r["scope"] == scope]
        if action == "search":
            rows = rank_memories(rows, str(args["query"]), limit)
            if not rows:
                return ToolResult(f"No memories match {args['query']!r}.")
        else:
            rows = rows[:limit]
            if not rows:
                return ToolResult("No memories saved yet.")
        body = "\n".join(format_memory(r, full=action == "search") for r in rows)
        return ToolResult(f"{len(rows)} memor{'y' if len(rows) == 1 else 'ies'}:\n{body}")

    summary = {
        "save": f"save {name!r}",
        "get": f"get {name!r}",
        "delete": f"delete {name!r}",
        "search": f"search {args.get('query')!r}",
        "list": "list",
    }[action]
    preview = str(args.get("content") or "") if action == "save" else ""
    return PreparedItem(
        call_id, "memory", args, f"memory {summary}", preview=preview, needs_approval=False, execute=execute
    )


PREPARERS: dict[str, Preparer] = {"memory": prepare_memory}
