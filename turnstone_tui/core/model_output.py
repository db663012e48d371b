"""The boundary where model output enters the engine.

Whatever a model (or a broken server) sends — lone UTF-16 surrogates in text, duplicate or
missing tool-call ids, arguments too large or too deep to handle — is made safe here, before it
is stored, printed or sent back in a later request. Nothing in here raises on any input.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from .types import ToolCall

_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_NAME_CHARS = 256  # a tool name longer than this is not a tool name


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (valid surrogate pairs are joined).

    A lone surrogate cannot be encoded as UTF-8: SQLite, the terminal and the API client all
    raise on it. JSON escapes such as ``"\\ud800"`` produce one as soon as they are decoded.
    """
    if not isinstance(text, str):
        text = str(text)
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any) -> Any:
    """A JSON-like value with every string (keys too) passed through ``clean_text``."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


def fresh_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def unique_call_ids(calls: list[ToolCall], taken: Iterable[str] = ()) -> list[ToolCall]:
    """Give every call an id of its own: missing, repeated or already-used ids are replaced.

    Two calls sharing one id would both run and both be answered with one result; a call
    without an id cannot be answered at all. ``taken`` holds the ids used earlier in the
    conversation (a reused id makes the whole history invalid for some APIs).
    """
    seen = set(taken)
    out: list[ToolCall] = []
    for call in calls:
        call_id = clean_text(call.id or "").strip()
        if not call_id or call_id in seen or len(call_id) > MAX_NAME_CHARS:
            call_id = fresh_call_id()
        seen.add(call_id)
        out.append(
            ToolCall(id=call_id, name=clean_name(call.name), arguments=clean_text(call.arguments or ""))
        )
    return out


def clean_name(name: str) -> str:
    name = clean_text(name or "").strip()
    if len(name) > MAX_NAME_CHARS:
        return name[:MAX_NAME_CHARS]
    return name


def used_call_ids(messages: Iterable[dict[str, Any]]) -> set[str]:
    """Every tool-call id already in a conversation."""
    ids: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id"):
                ids.add(str(call["id"]))
    return ids
