"""The provider contract: what every model provider yields, and the request it takes.

The engine owns this contract; ``turnstone_tui.providers`` implements it.

Messages are kept in OpenAI Chat Completions shape everywhere in the engine
(``{"role": ..., "content": ..., "tool_calls": [...], "tool_call_id": ...}``); a provider that
speaks another wire protocol converts at its own boundary.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(slots=True)
class ContentDelta:
    text: str


@dataclass(slots=True)
class ReasoningDelta:
    text: str


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of one tool call; pieces with the same index belong together."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class UsageUpdate:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(slots=True)
class StreamDone:
    finish_reason: str = "stop"


@dataclass(slots=True)
class ToolSearchDone:
    """The provider's own (server-side) tool search ran: ``tool_names`` were found for ``query``
    (``error`` set when the search failed). The engine makes those tools visible."""

    call_id: str
    query: str
    tool_names: list[str]
    error: str | None = None


@dataclass(slots=True)
class ProviderContent:
    """The assistant turn exactly as the provider sent it (e.g. Anthropic content blocks with
    server-side tool search blocks), to be stored with the message and sent back unchanged."""

    provider: str
    blocks: list[dict[str, Any]]


StreamEvent = (
    ContentDelta
    | ReasoningDelta
    | ToolCallDelta
    | UsageUpdate
    | StreamDone
    | ToolSearchDone
    | ProviderContent
)


@dataclass(slots=True)
class ModelRequest:
    messages: list[dict[str, Any]]
    # OpenAI function-calling schemas: [{"type": "function", "function": {name, description, parameters}}]
    tools: list[dict[str, Any]] = field(default_factory=list)
    # Native tool search: tools sent deferred (defer_loading) with the provider's own search tool;
    # empty for the client-side tier, where ``tools`` carries the synthetic tool_search function.
    deferred_tools: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None


class ProviderError(Exception):
    """A provider failed for good (after retries), or a stream was cut mid-way.

    ``retryable`` is True for errors worth retrying (429, 5xx, connection) before any output.
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class Provider(Protocol):
    name: str  # its name in providers/registry.py
    model: str
    # Native (server-side) tool search: None = this provider cannot do it; True/False = the model
    # supports it or not by the capability table (a [models.NAME] tool_search override wins).
    native_tool_search: bool | None

    @property
    def context_window(self) -> int | None:
        """The context the model really runs with, when the provider knows better than the config."""
        ...

    def banner(self) -> str | None:
        """A line to show the user when a session starts (e.g. that the model is small and offline)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one model response. Raises ProviderError on failure.

        Must end with exactly one StreamDone when the response completed normally; a stream
        that stops without its terminator raises ProviderError("stream ended early ...").
        """
        ...

    async def aclose(self) -> None: ...
