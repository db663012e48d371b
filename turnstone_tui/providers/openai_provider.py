"""OpenAI-compatible Chat Completions (OpenAI, vLLM, llama.cpp server, Ollama /v1, OpenRouter…).

Streams through the official ``openai`` SDK. A request with deferred tools (the native tool search
tier, for models with OpenAI's hosted tool search) goes to the Responses API instead, which alone
offers it (``openai_responses.py``); everything else is Chat Completions. Reasoning arrives three ways depending on the server:
``reasoning_content`` deltas (vLLM, llama.cpp, DeepSeek), ``reasoning`` deltas (OpenRouter, Ollama)
and ``<think>…</think>`` inside the content (many local models); all become ReasoningDelta.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx2
import openai

from ..core.provider import (
    ContentDelta,
    ModelRequest,
    ProviderError,
    ReasoningDelta,
    StreamDone,
    StreamEvent,
    ToolCallDelta,
    UsageUpdate,
)
from .capabilities import openai_hosted_tool_search
from .citations import cited_sources
from .openai_responses import (
    TOOL_SEARCH_TOOL,
    ResponsesStreamState,
    responses_events,
    to_responses_input,
)
from .openai_responses import convert_tools as responses_tools
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
from .think_tags import ThinkTagParser

if TYPE_CHECKING:
    from ..config import Config

PLACEHOLDER_API_KEY = "not-needed"
CONNECT_TIMEOUT = 15.0  # seconds to connect; the idle timeout then bounds every wait for data
_MESSAGE_KEYS = {
    "system": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls"),
    "tool": ("role", "content", "tool_call_id"),
}


def is_hosted_openai(base_url: str) -> bool:
    return not base_url or "api.openai.com" in base_url


def is_search_model(model: str) -> bool:
    """OpenAI's web search models (gpt-5-search-api, gpt-4o-search-preview…)."""
    return "-search-" in model or model.endswith("-search")


def _tool_name(tool: dict[str, Any]) -> str:
    return str((tool.get("function") or tool).get("name", ""))


def _tool_content(content: Any) -> tuple[str | list[dict[str, Any]], list[dict[str, Any]]]:
    """Split a tool message's content into what a tool message may carry and image parts.

    Chat Completions tool messages accept text only; images go into a following user message.
    """
    if not isinstance(content, list):
        return ("" if content is None else str(content)), []
    texts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
    images = [p for p in content if isinstance(p, dict) and p.get("type") == "image_url"]
    if texts:
        return texts, images
    return ("(the tool returned images; they follow in the next message)" if images else ""), images


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop engine-only keys (``is_error``, ``reasoning``…) and move tool-result images to a user turn."""
    out: list[dict[str, Any]] = []
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            out.append(
                {"role": "user", "content": [{"type": "text", "text": "Images from the tool results above:"}]}
            )
            out[-1]["content"].extend(pending_images)
            pending_images.clear()

    for msg in messages:
        role = msg.get("role", "user")
        if role != "tool":
            flush_images()
        keys = _MESSAGE_KEYS.get(role, ("role", "content"))
        clean = {k: msg[k] for k in keys if k in msg and msg[k] is not None}
        if role == "assistant":
            clean.setdefault("content", None if clean.get("tool_calls") else "")
            if not clean.get("tool_calls"):
                clean.pop("tool_calls", None)
        elif role == "tool":
            clean["content"], images = _tool_content(msg.get("content"))
            pending_images.extend(images)
        else:
            clean.setdefault("content", "")
        out.append(clean)
    flush_images()
    return out


def _collect_citations(delta: Any, sources: dict[str, str]) -> None:
    if not isinstance(delta, dict):
        return
    for annotation in delta.get("annotations") or ():
        citation = annotation.get("url_citation") if isinstance(annotation, dict) else None
        if isinstance(citation, dict) and citation.get("url"):
            sources.setdefault(str(citation["url"]), str(citation.get("title") or citation["url"]))


class OpenAIProvider:
    """Streams Chat Completions from any OpenAI-compatible endpoint."""

    name = "openai"

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
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.retry = retry or RetryPolicy()
        # Hosted tool search (Responses API) by the model's name; [models.NAME] tool_search overrides.
        self.native_tool_search: bool | None = openai_hosted_tool_search(model)
        timeouts = sdk_timeouts(timeout, connect_timeout)
        self._client = openai.AsyncOpenAI(
            api_key=api_key or PLACEHOLDER_API_KEY,
            base_url=self.base_url or None,
            max_retries=0,
            timeout=timeouts,
            http_client=sdk_http_client(openai.DefaultAsyncHttpxClient, timeouts),
        )

    @classmethod
    def from_config(cls, config: Config) -> OpenAIProvider:
        return cls(**provider_settings(config))

    @property
    def context_window(self) -> int | None:
        return None  # the config's model.context_window applies

    def banner(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._client.close()

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create`` (without ``stream``)."""
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_openai_messages(request.messages),
            "stream_options": {"include_usage": True},
        }
        model = params["model"]
        tools = request.tools or []
        if is_search_model(model) and any(_tool_name(tool) == "web_search" for tool in tools):
            # OpenAI's search models search on every request, given web_search_options; they take
            # no function tools for it (and no temperature).
            tools = [tool for tool in tools if _tool_name(tool) != "web_search"]
            params["web_search_options"] = {}
        if tools:
            params["tools"] = tools
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None and "web_search_options" not in params:
            params["temperature"] = temperature
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens:
            # Hosted OpenAI reasoning models reject max_tokens; local servers may not know the new name.
            params["max_completion_tokens" if is_hosted_openai(self.base_url) else "max_tokens"] = max_tokens
        effort = request.reasoning_effort or self.reasoning_effort
        if effort:
            params["reasoning_effort"] = effort
        return params

    def build_responses_params(self, request: ModelRequest) -> dict[str, Any]:
        """The body for ``POST /responses`` (without ``stream``): visible tools loaded, the
        deferred ones with ``defer_loading`` and the hosted ``tool_search`` tool."""
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "input": to_responses_input(request.messages),
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        tools = responses_tools(request.tools or [])
        if request.deferred_tools:
            tools += [TOOL_SEARCH_TOOL, *responses_tools(request.deferred_tools, deferred=True)]
        if tools:
            params["tools"] = tools
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None:
            params["temperature"] = temperature
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens:
            params["max_output_tokens"] = max_tokens
        effort = request.reasoning_effort or self.reasoning_effort
        if effort:
            params["reasoning"] = {"effort": effort}
        return params

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.deferred_tools:
            return stream_with_retries(lambda: self._attempt_responses(request), self.retry)
        return stream_with_retries(lambda: self._attempt(request), self.retry)

    def _error(self, exc: Exception, started: bool) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, openai.APIStatusError):
            return status_error(self.name, exc.status_code, exc.body, exc.response.headers)
        if isinstance(exc, (openai.APIConnectionError, httpx2.TransportError)):
            timeout = isinstance(exc, (openai.APITimeoutError, httpx2.TimeoutException))
            return transport_error(self.name, self.base_url, exc, timeout=timeout, started=started)
        if isinstance(exc, openai.APIError):  # an error chunk inside the stream
            prefix = "stream ended early: " if started else ""
            return ProviderError(f"{prefix}{self.name} stream error: {exc.message}")
        return unexpected_error(self.name, exc, started=started)

    async def _open_stream(self, path: str, params: dict[str, Any]) -> openai.AsyncStream[object]:
        """POST a streamed request; its events arrive as decoded JSON dicts.

        The SDK's generic request with ``cast_to=object``: ``chat.completions.create`` (or
        ``responses.create``) would build a pydantic model per SSE event, which at a few thousand
        events a second costs a tenth of the event loop while an answer streams. Status errors,
        error events inside the stream and transport errors are still raised by the SDK as usual.
        """
        try:
            return await self._client.post(
                path,
                body={**params, "stream": True},
                cast_to=object,
                stream=True,
                stream_cls=openai.AsyncStream[object],
            )
        except Exception as exc:
            raise self._error(exc, started=False) from exc

    async def _attempt(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        response = await self._open_stream("/chat/completions", self.build_params(request))
        parser = ThinkTagParser()
        finish_reason: str | None = None
        started = False
        sources: dict[str, str] = {}  # url_citation annotations of a search model: url -> title
        try:
            async for chunk in response:
                if not isinstance(chunk, dict):
                    continue
                for event in self._chunk_events(chunk, parser):
                    started = started or not isinstance(event, UsageUpdate)
                    yield event
                for choice in (chunk.get("choices") or ())[:1]:
                    if isinstance(choice, dict):
                        finish_reason = choice.get("finish_reason") or finish_reason
                        _collect_citations(choice.get("delta"), sources)
        except Exception as exc:
            raise self._error(exc, started=started) from exc
        finally:
            await response.close()
        for kind, text in parser.flush():
            started = True
            yield ContentDelta(text) if kind == "content" else ReasoningDelta(text)
        if sources:
            yield cited_sources(sources)
        if finish_reason is None:
            raise stream_cut(
                "the server closed the stream before the response finished", retryable=not started
            )
        yield StreamDone(finish_reason)

    async def _attempt_responses(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        response = await self._open_stream("/responses", self.build_responses_params(request))
        state = ResponsesStreamState()
        started = False
        try:
            async for data in response:
                if not isinstance(data, dict):
                    continue
                for event in responses_events(data, state, started=started):
                    started = started or not isinstance(event, UsageUpdate)
                    yield event
                if state.finished:
                    break
        except Exception as exc:
            raise self._error(exc, started=started) from exc
        finally:
            await response.close()
        if not state.finished:
            raise stream_cut("the server closed the stream before response.completed", retryable=not started)
        kept = state.kept_content()
        if kept is not None:
            yield kept
        yield StreamDone(state.finish_reason)

    @staticmethod
    def _chunk_events(chunk: dict[str, Any], parser: ThinkTagParser) -> list[StreamEvent]:
        """The engine events in one ``chat.completion.chunk`` (as decoded JSON)."""
        events: list[StreamEvent] = []
        for choice in (chunk.get("choices") or ())[:1]:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                events.append(ReasoningDelta(reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                for kind, text in parser.feed(content):
                    events.append(ContentDelta(text) if kind == "content" else ReasoningDelta(text))
            for position, call in enumerate(delta.get("tool_calls") or ()):
                if not isinstance(call, dict):
                    continue
                function = call.get("function")
                function = function if isinstance(function, dict) else {}
                index = call.get("index")
                events.append(
                    ToolCallDelta(
                        index=index if isinstance(index, int) else position,
                        id=call.get("id") or None,
                        name=function.get("name") or None,
                        arguments=function.get("arguments") or "",
                    )
                )
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            events.append(
                UsageUpdate(
                    prompt_tokens=usage.get("prompt_tokens") or 0,
                    completion_tokens=usage.get("completion_tokens") or 0,
                )
            )
        return events
