"""Show a resumed conversation's stored messages in the chat view (newest last).

Tool calls come back as finished tool cards holding their stored results (expand with enter), as
they looked when the conversation ran, not as bare one-liners.
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

from ..core.checkpoints import UNDO_NOTE_KIND
from ..core.mentions import strip_attachments
from ..core.outcomes import NOT_STORED_TEXT
from ..core.permissions import MODE_NOTE_KIND
from ..core.transcript import message_text
from ..core.types import (
    PLAN_CARD_KEY,
    PLAN_REVIEW_KIND,
    RESOURCE_UPDATE_KIND,
    PreparedItem,
    ProcessOutcome,
    ToolResult,
    ToolStatus,
)
from ..widgets.chat_history import Revive
from ..widgets.chat_messages import AssistantMessage, InfoMessage, UserMessage
from ..widgets.chat_view import ChatView
from ..widgets.tool_card import ToolCard


def _call_parts(call: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """(name, arguments, header line) of a stored tool call."""
    function = call.get("function") or {}
    name = str(function.get("name", "tool"))
    raw = function.get("arguments") or ""
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw else {}
    except json.JSONDecodeError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    detail = args.get("command") or args.get("path") or args.get("query") or args.get("url") or ""
    header = f"{name}: {detail}" if isinstance(detail, str) and detail else name
    return name, args, header if len(header) <= 200 else header[:199] + "…"


def _replayed_card(call: dict[str, Any], result: dict[str, Any] | None) -> ToolCard:
    name, args, header = _call_parts(call)
    card = ToolCard(PreparedItem(str(call.get("id", "")), name, args, header=header))
    if result is None:
        card.mark_cancelled(NOT_STORED_TEXT)
    else:
        card.set_result(stored_result(result))
    return card


def stored_result(message: dict[str, Any]) -> ToolResult:
    """The ToolResult a stored tool message holds (status and process outcome as they were stored)."""
    status = message.get("status")
    process = message.get("process")
    try:
        outcome = ProcessOutcome(**process) if isinstance(process, dict) else None
    except TypeError:  # stored by another version
        outcome = None
    return ToolResult(
        message_text(message.get("content")),
        is_error=bool(message.get("is_error")),
        status=ToolStatus(status) if status in set(ToolStatus) else None,
        process=outcome,
    )


RECENT_ENTRIES = 8
"""Entries of a resumed conversation mounted at once (the last screenful); the older ones are
mounted when the view scrolls up to them."""


def replay_entries(messages: list[dict[str, Any]]) -> list[Revive]:
    """How to build each entry of a stored conversation (user, answers, tool calls), oldest first:
    no widget is made until it is shown."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    for message in messages:  # a refined plan: its card shows the latest version, as it did live
        latest = message.get(PLAN_CARD_KEY)
        if isinstance(latest, dict) and latest.get("tool_call_id") in results:
            results[latest["tool_call_id"]] = latest
    entries: list[Revive] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            kind = message.get("kind")
            if kind == MODE_NOTE_KIND:
                continue  # told to the model; the user saw the mode in the status bar
            if kind in (RESOURCE_UPDATE_KIND, PLAN_REVIEW_KIND):  # the engine's notes, not the user's words
                entries.append(partial(InfoMessage, _note_notice(kind, message_text(message.get("content")))))
                continue
            if kind == UNDO_NOTE_KIND:
                entries.append(partial(InfoMessage, "Undone: " + message_text(message.get("content"))))
                continue
            text, attached = strip_attachments(message_text(message.get("content")))
            if text:
                entries.append(partial(UserMessage, text))
            if attached:
                entries.append(partial(InfoMessage, "Attached: " + ", ".join(attached)))
        elif role == "assistant":
            text = message_text(message.get("content"))
            if text.strip():
                entries.append(partial(AssistantMessage, text, finished=True))
            for call in message.get("tool_calls") or []:
                entries.append(partial(_replayed_card, call, results.get(call.get("id"))))
    return entries


def _note_notice(kind: str, text: str) -> str:
    """One line for an engine note the model was sent (its text can be pages long)."""
    if kind == RESOURCE_UPDATE_KIND:
        uris = ", ".join(_RESOURCE_URI.findall(text)) or "?"
        return (
            f"MCP resources changed since the model read them: {uris} (their new contents went to the model)"
        )
    first = text.strip().splitlines()[0] if text.strip() else ""
    return "Plan review: " + first.removeprefix("[plan review]").strip()


_RESOURCE_URI = re.compile(r'^<resource uri="([^"]*)"', re.MULTILINE)


async def replay_messages(
    chat: ChatView, messages: list[dict[str, Any]], *, recent: int = RECENT_ENTRIES
) -> None:
    """Show a resumed conversation: its last ``recent`` entries mounted now, the older ones held
    by the chat and mounted as the view scrolls up to them."""
    entries = replay_entries(messages)
    if not entries:
        return
    older, latest = entries[:-recent], entries[-recent:]
    if older:
        chat.hold_older(older)
    await chat.add(*(entry() for entry in latest))
    await chat.add(InfoMessage("— resumed —", classes="-divider"))
