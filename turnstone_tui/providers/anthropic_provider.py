"""Anthropic Messages API through the official ``anthropic`` SDK.

The engine speaks OpenAI-shaped messages; this module converts them at the boundary (system
prompt, tool_use / tool_result blocks, images, merged same-role turns) and turns the raw event
stream back into the engine's StreamEvents.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2

from ..core.provider import (
    ContentDelta,
    ModelRequest,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    StreamDone,
    StreamEvent,
    ToolCallDelta,
    ToolSearchDone,
    UsageUpdate,
)
from .capabilities import anthropic_native_tool_search
from .citations import cited_sources
from .retry import (
    RetryPolicy,
    provider_settings,
    status_error,
    stream_cut,
    stream_with_retries,
    transport_error,
    unexpected_error,
)
from .sdk_http import sdk_http_client, sdk_timeouts

if TYPE_CHECKING:
    from ..config import Config

DEFAULT_MAX_TOKENS = 8192
PLACEHOLDER_API_KEY = "not-needed"
CONNECT_TIMEOUT = 15.0  # seconds to connect; the idle timeout then bounds every wait for data
MAX_REMEMBERED_THINKING = 256  # assistant turns whose thinking blocks are kept for replay
THINKING_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 32768}
# web_search replaced at the API boundary: Anthropic runs the searches and cites the pages.
WEB_SEARCH_SERVER_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
# Native tool search (GA: no beta header with the current API and SDK): deferred tools carry
# defer_loading and the server's BM25 search returns tool_reference blocks that load them.
TOOL_SEARCH_SERVER_TOOL = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
TOOL_SEARCH_NAMES = ("tool_search_tool_bm25", "tool_search_tool_regex")
PROVIDER = "anthropic"

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
    "pause_turn": "stop",
}
# in-stream "error" events carry a type but arrive on an HTTP 200 response
_ERROR_TYPE_STATUS = {
    "overloaded_error": 529,
    "api_error": 500,
    "rate_limit_error": 429,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
}


def _image_block(part: dict[str, Any]) -> dict[str, Any] | None:
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if not isinstance(url, str) or not url:
        return None
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[5:].split(";")[0] or "image/png"
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def convert_content(content: Any) -> list[dict[str, Any]]:
    """OpenAI message content (str or parts) -> Anthropic content blocks, empty text dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            blocks.extend(convert_content(part))
        elif not isinstance(part, dict):
            continue
        elif part.get("type") == "text":
            blocks.extend(convert_content(part.get("text", "")))
        elif part.get("type") == "image_url":
            image = _image_block(part)
            if image:
                blocks.append(image)
        elif part.get("type") in ("image", "document"):
            blocks.append(part)
    return blocks


def _tool_input(arguments: Any) -> dict[str, Any]:
    """Anthropic needs tool_use input to be an object; keep unparseable arguments visible."""
    if isinstance(arguments, dict):
        return arguments
    if not arguments:
        return {}
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError, RecursionError):
        return {"raw_arguments": str(arguments)}
    return value if isinstance(value, dict) else {"raw_arguments": str(arguments)}


def _system_text(content: Any) -> str:
    return "\n".join(b["text"] for b in convert_content(content) if b.get("type") == "text")


def convert_messages(
    messages: list[dict[str, Any]], thinking_for: dict[str, list[dict[str, Any]]] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """Convert engine messages to ``(system, messages)`` for the Messages API.

    ``thinking_for`` maps the first tool_use id of an assistant turn to the thinking blocks that
    preceded it (Anthropic requires them to be sent back while extended thinking is on).
    """
    system_parts: list[str] = []
    converted: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "system":
            text = _system_text(msg.get("content"))
            if text:
                system_parts.append(text)
            continue
        if role == "tool":
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": msg.get("tool_call_id") or "",
                "content": convert_content(msg.get("content")) or [{"type": "text", "text": "(no output)"}],
            }
            if msg.get("is_error"):
                result["is_error"] = True
            converted.append({"role": "user", "content": [result]})
            continue
        kept = msg.get("provider_content")
        if (
            role == "assistant"
            and isinstance(kept, dict)
            and kept.get("provider") == PROVIDER
            # only while the engine kept the calls as sent (it renames duplicate ids, refuses
            # hostile arguments): tool results must answer the ids the request carries
            and [b.get("id") for b in kept.get("blocks") or () if b.get("type") == "tool_use"]
            == [c.get("id") for c in msg.get("tool_calls") or ()]
        ):
            # Sent back exactly as received (server tool search blocks, thinking signatures).
            converted.append({"role": "assistant", "content": json.loads(json.dumps(kept["blocks"]))})
            continue
        blocks = convert_content(msg.get("content"))
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            if calls and thinking_for:
                blocks = [*thinking_for.get(calls[0].get("id", ""), []), *blocks]
            for call in calls:
                function = call.get("function") or {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id") or "",
                        "name": function.get("name") or "",
                        "input": _tool_input(function.get("arguments")),
                    }
                )
        if blocks:
            converted.append({"role": "assistant" if role == "assistant" else "user", "content": blocks})
    merged: list[dict[str, Any]] = []
    for msg in converted:
        if merged and merged[-1]["role"] == msg["role"]:
            merged[-1]["content"].extend(msg["content"])
        else:
            merged.append({"role": msg["role"], "content": list(msg["content"])})
    for msg in merged:  # tool results must come first in their user turn
        if msg["role"] == "user":
            msg["content"].sort(key=lambda b: b.get("type") != "tool_result")
    if merged and merged[0]["role"] != "user":
        merged.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation start)"}]})
    return "\n\n".join(system_parts), merged


def _search_query(input_json: str) -> str:
    try:
        value = json.loads(input_json or "{}")
    except ValueError:
        return input_json
    return str(value.get("query", "")) if isinstance(value, dict) else input_json


def convert_tools(tools: list[dict[str, Any]], *, deferred: bool = False) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        fn = tool.get("function", tool)
        converted: dict[str, Any] = {
            "name": fn.get("name", ""),
            "description": fn.get("description", ""),
            "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
        }
        if deferred:
            converted["defer_loading"] = True
        out.append(converted)
    return out


@dataclass
class _StreamState:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop_reason: str | None = None
    finished: bool = False
    tool_index: dict[int, int] = field(default_factory=dict)  # content block index -> tool ordinal
    tool_ids: list[str] = field(default_factory=list)
    thinking: list[dict[str, Any]] = field(default_factory=list)
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)  # open thinking blocks by index
    searches: dict[int, str] = field(default_factory=dict)  # server-side web searches: index -> input JSON
    sources: dict[str, str] = field(default_factory=dict)  # cited web pages: url -> title
    # Every content block as received (deltas applied), kept when a tool search ran.
    content: dict[int, dict[str, Any]] = field(default_factory=dict)
    partial_json: dict[int, str] = field(default_factory=dict)
    tool_search_seen: bool = False
    search_queries: dict[str, str] = field(default_factory=dict)  # server_tool_use id -> query


class AnthropicProvider:
    """Streams the Anthropic Messages API."""

    name = "anthropic"

    def __init__(
        self,
        base_url: str = "",
        api_key: str = "",
        model: str = "",
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 90.0,
        connect_timeout: float = CONNECT_TIMEOUT,
        native_web_search: str = "auto",
    ) -> None:
        base = base_url.rstrip("/")
        if base.endswith("/v1"):  # the SDK adds /v1/messages itself
            base = base[: -len("/v1")]
        self.base_url = base
        self.model = model
        self.temperature = temperature  # kept for a uniform signature; not sent (see build_params)
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.retry = retry or RetryPolicy()
        # web_search as Anthropic's server-side tool: "auto" = with the hosted API only (a proxy
        # or a compatible local server may not run server tools), "on", "off" (Tavily).
        self.native_web_search = native_web_search == "on" or (
            native_web_search == "auto" and (not self.base_url or "api.anthropic.com" in self.base_url)
        )
        self._thinking_for: dict[str, list[dict[str, Any]]] = {}
        self.native_tool_search: bool | None = anthropic_native_tool_search(model)
        timeouts = sdk_timeouts(timeout, connect_timeout)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or PLACEHOLDER_API_KEY,
            base_url=self.base_url or None,
            max_retries=0,
            timeout=timeouts,
            http_client=sdk_http_client(anthropic.DefaultAsyncHttpxClient, timeouts),
        )

    @classmethod
    def from_config(cls, config: Config) -> AnthropicProvider:
        return cls(**provider_settings(config), native_web_search=config.tools.native_web_search)

    @property
    def context_window(self) -> int | None:
        return None  # the config's model.context_window applies

    def banner(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._client.close()

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for ``messages.create`` (without ``stream``)."""
        effort = request.reasoning_effort or self.reasoning_effort
        budget = THINKING_BUDGETS.get(effort or "")
        system, messages = convert_messages(request.messages, self._thinking_for if budget else None)
        max_tokens = request.max_tokens or self.max_tokens or DEFAULT_MAX_TOKENS
        params: dict[str, Any] = {"model": request.model or self.model, "messages": messages}
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = convert_tools(request.tools)
            if self.native_web_search:
                params["tools"] = [
                    WEB_SEARCH_SERVER_TOOL if tool["name"] == "web_search" else tool
                    for tool in params["tools"]
                ]
            if request.deferred_tools:
                params["tools"] += [
                    TOOL_SEARCH_SERVER_TOOL,
                    *convert_tools(request.deferred_tools, deferred=True),
                ]
        if budget:
            max_tokens = max(max_tokens, budget + 4096)
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # No temperature: the Messages API of the anthropic SDK in use no longer takes one.
        params["max_tokens"] = max_tokens
        return params

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return stream_with_retries(lambda: self._attempt(request), self.retry)

    def _error(self, exc: Exception, started: bool) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            if status < 400:  # an "error" event inside a 200 stream
                err = exc.body.get("error") if isinstance(exc.body, dict) else None
                status = _ERROR_TYPE_STATUS.get(err.get("type", "") if isinstance(err, dict) else "", 500)
            error = status_error(self.name, status, exc.body, exc.response.headers)
            return stream_cut(str(error)) if started else error
        if isinstance(exc, (anthropic.APIConnectionError, httpx2.TransportError)):
            timeout = isinstance(exc, (anthropic.APITimeoutError, httpx2.TimeoutException))
            return transport_error(self.name, self.base_url, exc, timeout=timeout, started=started)
        return unexpected_error(self.name, exc, started=started)

    async def _attempt(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        params = self.build_params(request)
        try:
            response = await self._client.messages.create(**params, stream=True)
        except Exception as exc:
            raise self._error(exc, started=False) from exc
        state = _StreamState()
        started = False
        try:
            async for event in response:
                for out in self._events(event, state):
                    started = started or not isinstance(out, UsageUpdate)
                    yield out
                if state.finished:
                    break
        except Exception as exc:
            raise self._error(exc, started=started) from exc
        finally:
            await response.close()
        if not state.finished:
            raise stream_cut("the server closed the stream before message_stop", retryable=not started)
        if state.tool_search_seen:
            yield ProviderContent(PROVIDER, [state.content[i] for i in sorted(state.content)])
        if state.thinking and state.tool_ids:
            self._thinking_for[state.tool_ids[0]] = state.thinking
            while len(self._thinking_for) > MAX_REMEMBERED_THINKING:
                self._thinking_for.pop(next(iter(self._thinking_for)))
        yield StreamDone(STOP_REASONS.get(state.stop_reason or "", state.stop_reason or "stop"))

    @staticmethod
    def _events(event: Any, state: _StreamState) -> list[StreamEvent]:
        return [*AnthropicProvider._record(event, state), *AnthropicProvider._translate(event, state)]

    @staticmethod
    def _record(event: Any, state: _StreamState) -> list[StreamEvent]:
        """Keep each content block as received; report a finished server-side tool search."""
        kind = getattr(event, "type", "")
        index = getattr(event, "index", None)
        if kind == "content_block_start":
            block = event.content_block.to_dict(mode="json")
            state.content[index] = block
            if block.get("type") == "server_tool_use" and block.get("name") in TOOL_SEARCH_NAMES:
                state.tool_search_seen = True
            return []
        block = state.content.get(index) if index is not None else None
        if block is None:
            return []
        if kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                block["text"] = block.get("text", "") + delta.text
            elif delta.type == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.thinking
            elif delta.type == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.signature
            elif delta.type == "citations_delta":
                block.setdefault("citations", []).append(delta.citation.to_dict(mode="json"))
            elif delta.type == "input_json_delta":
                state.partial_json[index] = state.partial_json.get(index, "") + (delta.partial_json or "")
            return []
        if kind != "content_block_stop":
            return []
        partial = state.partial_json.pop(index, None)
        # Only a turn with a tool search is kept whole (its blocks come first); other turns' tool
        # arguments go through the engine's bounded parser alone.
        if partial is not None and (state.tool_search_seen or block.get("type") == "server_tool_use"):
            try:
                block["input"] = json.loads(partial or "{}")
            except (ValueError, RecursionError):
                pass  # the tool_use path reports unparseable arguments to the model
        if block.get("type") == "server_tool_use" and block.get("name") in TOOL_SEARCH_NAMES:
            tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
            state.search_queries[block.get("id", "")] = str(
                tool_input.get("query") or tool_input.get("pattern") or ""
            )
        if block.get("type") == "tool_search_tool_result":
            call_id = str(block.get("tool_use_id", ""))
            content = block.get("content") if isinstance(block.get("content"), dict) else {}
            query = state.search_queries.get(call_id, "")
            if content.get("type") == "tool_search_tool_result_error":
                return [ToolSearchDone(call_id, query, [], str(content.get("error_code") or "error"))]
            names = [
                str(r.get("tool_name")) for r in content.get("tool_references") or () if r.get("tool_name")
            ]
            return [ToolSearchDone(call_id, query, names)]
        return []

    @staticmethod
    def _translate(event: Any, state: _StreamState) -> list[StreamEvent]:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            usage = event.message.usage
            state.prompt_tokens = (
                (usage.input_tokens or 0)
                + (getattr(usage, "cache_read_input_tokens", None) or 0)
                + (getattr(usage, "cache_creation_input_tokens", None) or 0)
            )
            state.completion_tokens = usage.output_tokens or 0
            return [UsageUpdate(state.prompt_tokens, state.completion_tokens)]
        if kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                ordinal = len(state.tool_index)
                state.tool_index[event.index] = ordinal
                state.tool_ids.append(block.id)
                return [ToolCallDelta(index=ordinal, id=block.id, name=block.name)]
            if block.type == "thinking":
                state.blocks[event.index] = {
                    "type": "thinking",
                    "thinking": block.thinking or "",
                    "signature": "",
                }
                return [ReasoningDelta(block.thinking)] if block.thinking else []
            if block.type == "server_tool_use" and block.name == "web_search":
                state.searches[event.index] = ""
                return []
            if block.type == "redacted_thinking":
                state.thinking.append({"type": "redacted_thinking", "data": block.data})
            if block.type == "text" and block.text:
                return [ContentDelta(block.text)]
            return []
        if kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return [ContentDelta(delta.text)] if delta.text else []
            if delta.type == "thinking_delta":
                if event.index in state.blocks:
                    state.blocks[event.index]["thinking"] += delta.thinking
                return [ReasoningDelta(delta.thinking)] if delta.thinking else []
            if delta.type == "signature_delta" and event.index in state.blocks:
                state.blocks[event.index]["signature"] += delta.signature
                return []
            if delta.type == "citations_delta":
                citation = delta.citation
                url = getattr(citation, "url", None)
                if url:
                    state.sources.setdefault(url, getattr(citation, "title", None) or url)
                return []
            if delta.type == "input_json_delta" and event.index in state.searches:
                state.searches[event.index] += delta.partial_json or ""
                return []
            if delta.type == "input_json_delta" and event.index in state.tool_index:
                if not delta.partial_json:
                    return []
                return [ToolCallDelta(index=state.tool_index[event.index], arguments=delta.partial_json)]
            return []
        if kind == "content_block_stop":
            block = state.blocks.pop(event.index, None)
            if block is not None:
                state.thinking.append(block)
            if event.index in state.searches:
                return [
                    ReasoningDelta(f"Searching the web: {_search_query(state.searches.pop(event.index))}\n")
                ]
            return []
        if kind == "message_delta":
            state.stop_reason = event.delta.stop_reason or state.stop_reason
            usage = event.usage
            if usage is not None:
                if getattr(usage, "input_tokens", None):
                    state.prompt_tokens = (
                        usage.input_tokens
                        + (getattr(usage, "cache_read_input_tokens", None) or 0)
                        + (getattr(usage, "cache_creation_input_tokens", None) or 0)
                    )
                state.completion_tokens = usage.output_tokens or state.completion_tokens
                return [UsageUpdate(state.prompt_tokens, state.completion_tokens)]
            return []
        if kind == "message_stop":
            state.finished = True
            if state.sources:
                return [cited_sources(state.sources)]
        return []
