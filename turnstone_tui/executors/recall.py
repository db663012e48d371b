"""recall: full-text search (SQLite FTS5) over the stored conversations of every session."""

from __future__ import annotations

import time
from typing import Any

from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, ToolResult

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def format_hit(hit: dict[str, Any], current_session: str) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit["created"]))
    session = hit["session_id"]
    label = f"{hit['session_name']!r} ({session})" if hit.get("session_name") else session
    if session == current_session:
        label += ", this session"
    role = hit["role"] + (f" {hit['name']}" if hit.get("name") else "")
    snippet = " ".join(str(hit.get("snippet") or "").split())
    return f"[{when}] session {label} · {role}: {snippet}"


async def prepare_recall(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    query = require_str(args, "query")
    if query is None or not query.strip():
        return error_item(call_id, "recall", args, "recall needs a non-empty 'query'")
    limit = args.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        return error_item(call_id, "recall", args, "limit must be a positive integer")
    if ctx.storage is None:
        return error_item(call_id, "recall", args, "recall is unavailable: no database is open")
    storage = ctx.storage
    limit = min(limit, MAX_LIMIT)

    async def execute(ectx: ExecContext) -> ToolResult:
        hits = await storage.search_messages(query, limit=limit)
        if not hits:
            return ToolResult(f"No past messages match {query!r}.")
        lines = [f"{len(hits)} match{'' if len(hits) == 1 else 'es'} for {query!r} (best first):"]
        lines.extend(format_hit(h, ctx.session_id) for h in hits)
        return ToolResult("\n".join(lines), structured=hits)

    return PreparedItem(call_id, "recall", args, f"recall {query!r}", needs_approval=False, execute=execute)


PREPARERS: dict[str, Preparer] = {"recall": prepare_recall}
