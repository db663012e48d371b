"""Show a resumed conversation's stored messages in the chat view (compactly, newest last)."""

from __future__ import annotations

import json
from typing import Any

from ..widgets.chat_messages import AssistantMessage, InfoMessage, UserMessage
from ..widgets.chat_view import ChatView


def _tool_line(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    name = str(function.get("name", "tool"))
    raw = function.get("arguments") or ""
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw else {}
    except json.JSONDecodeError:
        args = {}
    detail = args.get("command") or args.get("path") or args.get("query") if isinstance(args, dict) else ""
    text = f"⚙ {name}" + (f": {detail}" if detail else "")
    return text if len(text) <= 200 else text[:199] + "…"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


async def replay_messages(chat: ChatView, messages: list[dict[str, Any]], *, limit: int = 200) -> None:
    """Mount the last ``limit`` widgets' worth of ``messages`` (user, answers, tool calls)."""
    widgets = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = _text_of(message.get("content"))
            if text:
                widgets.append(UserMessage(text))
        elif role == "assistant":
            text = _text_of(message.get("content"))
            if text.strip():
                widgets.append(AssistantMessage(text, finished=True))
            for call in message.get("tool_calls") or []:
                widgets.append(InfoMessage(_tool_line(call), classes="-tool-replay"))
    skipped = len(widgets) - limit
    if skipped > 0:
        widgets = [InfoMessage(f"… {skipped} earlier items not shown")] + widgets[skipped:]
    if widgets:
        await chat.add(*widgets)
        await chat.add(InfoMessage("— resumed —", classes="-divider"))
