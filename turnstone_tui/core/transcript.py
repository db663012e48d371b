"""A stored conversation as a Markdown document (``/export``), and the last answer (``/copy``)."""

from __future__ import annotations

import json
import re
from typing import Any

from .checkpoints import UNDO_NOTE_KIND
from .mentions import strip_attachments
from .permissions import MODE_NOTE_KIND

MAX_RESULT_CHARS = 20_000
"""A tool result longer than this is cut in the export (the database keeps it whole)."""


def message_text(content: Any) -> str:
    """The text of a stored message's content (a string, or the text parts of a part list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def fenced(text: str, language: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def _call_block(call: dict[str, Any], result: dict[str, Any] | None) -> str:
    function = call.get("function") or {}
    name = str(function.get("name", "tool"))
    raw = function.get("arguments") or ""
    try:
        arguments = json.dumps(json.loads(raw), indent=2, ensure_ascii=False) if raw else "{}"
    except (json.JSONDecodeError, TypeError):
        arguments = str(raw)
    parts = [f"**Tool call: `{name}`**", "", fenced(arguments, "json")]
    if result is None:
        parts += ["", "_(no result stored)_"]
    else:
        text = message_text(result.get("content"))
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + f"\n… ({len(text) - MAX_RESULT_CHARS} more characters)"
        label = "Error" if result.get("is_error") else "Result"
        parts += ["", f"{label}:", "", fenced(text or "(empty)")]
    return "\n".join(parts)


def transcript_markdown(messages: list[dict[str, Any]], *, title: str, model: str = "") -> str:
    """The conversation as the user saw it: prompts, answers, tool calls with their results."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    sections = [f"# {title}"]
    if model:
        sections.append(f"Model: `{model}`")
    for message in messages:
        role = message.get("role")
        if role == "user":
            if message.get("kind") == MODE_NOTE_KIND:
                continue
            if message.get("kind") == UNDO_NOTE_KIND:
                sections.append("> " + message_text(message.get("content")).strip().replace("\n", "\n> "))
                continue
            text, attached = strip_attachments(message_text(message.get("content")))
            block = [f"## You\n\n{text.strip()}"]
            if attached:
                block.append("Attached: " + ", ".join(f"`{path}`" for path in attached))
            sections.append("\n\n".join(block))
        elif role == "assistant":
            text = message_text(message.get("content")).strip()
            calls = message.get("tool_calls") or []
            if not text and not calls:
                continue
            block = ["## turnstone"]
            if text:
                block.append(text)
            block += [_call_block(call, results.get(call.get("id"))) for call in calls]
            sections.append("\n\n".join(block))
    return "\n\n".join(sections) + "\n"


def last_answer(messages: list[dict[str, Any]]) -> str:
    """The text of the newest assistant message that has any."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            text = message_text(message.get("content")).strip()
            if text:
                return text
    return ""
