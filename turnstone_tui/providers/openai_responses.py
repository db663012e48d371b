"""OpenAI's Responses API, streamed: the path for hosted tool search (the spec's tier 2).

Only the Responses API offers OpenAI's hosted ``tool_search`` (GPT-5.4 and later): deferred
function tools carry ``defer_loading: true`` and a ``{"type": "tool_search"}`` tool lets the
model search them on OpenAI's side. The search arrives as ``tool_search_call`` /
``tool_search_output`` output items; the tools the output loads join the visible set (as with
Anthropic's server-side search) and the whole turn's output items are kept as received and sent
back unchanged on the next request.

The engine speaks Chat Completions-shaped messages; this module converts them to Responses input
items at the boundary and turns the SSE events back into the engine's StreamEvents, so the UI is
the same whichever API answered. Requests go with ``store: false`` (the conversation lives in
this app's database), so reasoning items come with their encrypted content to be sent back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.provider import (
    ContentDelta,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    StreamEvent,
    ToolCallDelta,
    ToolSearchDone,
    UsageUpdate,
)

PROVIDER = "openai-responses"  # the provider_content tag of items kept for this API
TOOL_SEARCH_TOOL = {"type": "tool_search"}  # hosted: executed by OpenAI (execution "server")
INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    return "\n".join(
        str(p.get("text", "")) if isinstance(p, dict) else str(p)
        for p in parts
        if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")
    )


def _input_parts(content: Any) -> str | list[dict[str, Any]]:
    """Chat content (str or text / image_url parts) -> Responses input content."""
    if not isinstance(content, list):
        return _text_of(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            parts.append({"type": "input_text", "text": part})
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append({"type": "input_text", "text": str(part.get("text", ""))})
        elif isinstance(part, dict) and part.get("type") == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            if isinstance(url, str) and url:
                parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
    if all(p["type"] == "input_text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _kept_items(msg: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The output items kept with an assistant message, while the engine kept its calls as sent
    (it renames duplicate ids and refuses hostile arguments: results must answer the ids sent)."""
    kept = msg.get("provider_content")
    if not isinstance(kept, dict) or kept.get("provider") != PROVIDER:
        return None
    items = [item for item in kept.get("blocks") or () if isinstance(item, dict)]
    sent = [item.get("call_id") for item in items if item.get("type") == "function_call"]
    if sent != [call.get("id") for call in msg.get("tool_calls") or ()]:
        return None
    return json.loads(json.dumps(items))


def to_responses_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Engine messages -> Responses ``input`` items."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            output = _input_parts(msg.get("content"))
            out.append(
                {
                    "type": "function_call_output",
                    "call_id": str(msg.get("tool_call_id") or ""),
                    "output": output if output else "(no output)",
                }
            )
            continue
        if role == "assistant":
            kept = _kept_items(msg)
            if kept is not None:
                out.extend(kept)
                continue
            text = _text_of(msg.get("content"))
            if text:
                out.append({"role": "assistant", "content": text})
            for call in msg.get("tool_calls") or ():
                function = call.get("function") or {}
                out.append(
                    {
                        "type": "function_call",
                        "call_id": str(call.get("id") or ""),
                        "name": str(function.get("name") or ""),
                        "arguments": str(function.get("arguments") or ""),
                    }
                )
            continue
        role = role if role in ("system", "developer", "user") else "user"
        content = _input_parts(msg.get("content"))
        out.append({"role": role, "content": content if content else ""})
    return out


def convert_tools(tools: list[dict[str, Any]], *, deferred: bool = False) -> list[dict[str, Any]]:
    """Chat Completions function schemas -> Responses function tools (not strict: MCP schemas
    rarely meet strict mode's rules)."""
    out = []
    for tool in tools:
        fn = tool.get("function", tool)
        converted: dict[str, Any] = {
            "type": "function",
            "name": fn.get("name", ""),
            "description": fn.get("description", ""),
            "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
            "strict": False,
        }
        if deferred:
            converted["defer_loading"] = True
        out.append(converted)
    return out


def loaded_tool_names(tools: Any) -> list[str]:
    """The function names a ``tool_search_output`` loaded (namespaces' members too)."""
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            names += loaded_tool_names(tool.get("tools"))
        elif tool.get("name"):
            names.append(str(tool["name"]))
    return names


def _search_query(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    if isinstance(arguments, dict):
        for key in ("query", "pattern"):
            if arguments.get(key):
                return str(arguments[key])
        paths = arguments.get("paths")
        if isinstance(paths, list):
            return ", ".join(str(p) for p in paths)
    return json.dumps(arguments) if arguments else ""


@dataclass
class ResponsesStreamState:
    """What one Responses stream has said so far."""

    finished: bool = False
    finish_reason: str = "stop"
    items: dict[int, dict[str, Any]] = field(default_factory=dict)  # output index -> item as received
    calls: dict[str, int] = field(default_factory=dict)  # function_call item id -> tool ordinal
    call_arguments: dict[str, str] = field(default_factory=dict)  # item id -> arguments so far
    search_queries: dict[str, str] = field(default_factory=dict)  # tool_search call_id -> query
    last_search_query: str = ""
    tool_search_seen: bool = False

    def kept_content(self) -> ProviderContent | None:
        """The turn's output items as received, when a hosted tool search ran in it."""
        if not self.tool_search_seen:
            return None
        return ProviderContent(PROVIDER, [self.items[i] for i in sorted(self.items)])


def _stream_failure(message: str, code: str, *, started: bool) -> ProviderError:
    retryable = not started and code in ("server_error", "rate_limit_exceeded", "server_is_overloaded")
    prefix = "stream ended early: " if started else ""
    return ProviderError(
        f"{prefix}openai stream error: {message or code or 'no error message'}", retryable=retryable
    )


def responses_events(
    data: dict[str, Any], state: ResponsesStreamState, *, started: bool
) -> list[StreamEvent]:
    """The engine events in one Responses SSE event (decoded JSON)."""
    kind = data.get("type")
    if kind == "response.output_text.delta":
        delta = data.get("delta")
        return [ContentDelta(delta)] if isinstance(delta, str) and delta else []
    if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        delta = data.get("delta")
        return [ReasoningDelta(delta)] if isinstance(delta, str) and delta else []
    if kind == "response.output_item.added":
        item = data.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            item_id = str(item.get("id") or item.get("call_id") or "")
            ordinal = state.calls.setdefault(item_id, len(state.calls))
            arguments = str(item.get("arguments") or "")
            state.call_arguments[item_id] = arguments
            return [
                ToolCallDelta(
                    index=ordinal,
                    id=str(item.get("call_id") or "") or None,
                    name=str(item.get("name") or "") or None,
                    arguments=arguments,
                )
            ]
        return []
    if kind == "response.function_call_arguments.delta":
        item_id = str(data.get("item_id") or "")
        delta = data.get("delta")
        if item_id not in state.calls or not isinstance(delta, str) or not delta:
            return []
        state.call_arguments[item_id] = state.call_arguments.get(item_id, "") + delta
        return [ToolCallDelta(index=state.calls[item_id], arguments=delta)]
    if kind == "response.output_item.done":
        return _item_done(data, state)
    if kind in ("response.completed", "response.incomplete"):
        response = data.get("response") if isinstance(data.get("response"), dict) else {}
        state.finished = True
        if kind == "response.incomplete":
            details = response.get("incomplete_details") or {}
            reason = details.get("reason") if isinstance(details, dict) else None
            state.finish_reason = INCOMPLETE_REASONS.get(str(reason), "length")
        elif state.calls:
            state.finish_reason = "tool_calls"
        usage = response.get("usage")
        if isinstance(usage, dict):
            return [
                UsageUpdate(
                    prompt_tokens=int(usage.get("input_tokens") or 0),
                    completion_tokens=int(usage.get("output_tokens") or 0),
                )
            ]
        return []
    if kind == "response.failed":
        response = data.get("response") if isinstance(data.get("response"), dict) else {}
        error = response.get("error") if isinstance(response.get("error"), dict) else {}
        raise _stream_failure(str(error.get("message") or ""), str(error.get("code") or ""), started=started)
    if kind == "error":
        raise _stream_failure(str(data.get("message") or ""), str(data.get("code") or ""), started=started)
    return []


def _item_done(data: dict[str, Any], state: ResponsesStreamState) -> list[StreamEvent]:
    item = data.get("item")
    if not isinstance(item, dict):
        return []
    index = data.get("output_index")
    state.items[index if isinstance(index, int) else len(state.items)] = item
    kind = item.get("type")
    if kind == "function_call":
        item_id = str(item.get("id") or item.get("call_id") or "")
        if item_id not in state.calls:  # a call that arrived whole
            state.calls[item_id] = len(state.calls)
            return [
                ToolCallDelta(
                    index=state.calls[item_id],
                    id=str(item.get("call_id") or "") or None,
                    name=str(item.get("name") or "") or None,
                    arguments=str(item.get("arguments") or ""),
                )
            ]
        full, sent = str(item.get("arguments") or ""), state.call_arguments.get(item_id, "")
        if full.startswith(sent) and len(full) > len(sent):  # arguments not streamed as deltas
            state.call_arguments[item_id] = full
            return [ToolCallDelta(index=state.calls[item_id], arguments=full[len(sent) :])]
        return []
    if kind == "tool_search_call":
        state.tool_search_seen = True
        query = _search_query(item.get("arguments"))
        state.search_queries[str(item.get("call_id") or item.get("id") or "")] = query
        state.last_search_query = query
        return []
    if kind == "tool_search_output":
        state.tool_search_seen = True
        call_id = str(item.get("call_id") or "")
        query = state.search_queries.get(call_id, state.last_search_query)
        event_id = call_id or str(item.get("id") or "")
        if item.get("status") not in (None, "completed"):
            return [ToolSearchDone(event_id, query, [], f"search {item.get('status')}")]
        return [ToolSearchDone(event_id, query, loaded_tool_names(item.get("tools")))]
    return []
