"""What MCP servers may ask of the user, and the seam a front end implements to answer.

A server can ask for input (``elicitation/create``: a form, or a URL to open) and to sample the
user's model (``sampling/createMessage``). The manager turns each request into one of the plain
types below and awaits the front end's :class:`ServerAsks` implementation; the Textual app shows
modal screens, headless mode (:class:`NoUserAsks`) declines elicitation and refuses sampling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .elicit_form import FormField

ElicitAction = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    fields: tuple[FormField, ...] = ()
    url: str = ""  # URL mode only
    schema: dict[str, Any] = field(default_factory=dict)  # the requested JSON schema (form mode)


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    action: ElicitAction
    content: dict[str, Any] | None = None  # accept in form mode: the validated values


@dataclass(frozen=True, slots=True)
class SamplingMessage:
    role: str  # "user" | "assistant"
    text: str


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    server: str
    messages: tuple[SamplingMessage, ...]
    max_tokens: int
    system_prompt: str = ""
    temperature: float | None = None
    model_hints: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SampleResult:
    text: str
    model: str
    stop_reason: str = "endTurn"


@runtime_checkable
class ServerAsks(Protocol):
    """Questions MCP servers put to the user (each awaited; the server waits for the answer)."""

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        """Show the form (or the URL to open); accept with values, decline or cancel."""

    async def approve_sampling(self, request: SamplingRequest) -> bool:
        """May this server's messages be sent to the user's model?"""

    async def review_sample(self, request: SamplingRequest, result: SampleResult) -> str | None:
        """Show the model's answer before it goes back; return it (possibly edited) or None to deny."""


class NoUserAsks:
    """No one to ask (headless, sub-agents): decline every form, refuse every sampling request."""

    reason = "turnstone-tui is running without an interactive user"

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        return ElicitationAnswer("decline")

    async def approve_sampling(self, request: SamplingRequest) -> bool:
        return False

    async def review_sample(self, request: SamplingRequest, result: SampleResult) -> str | None:
        return None
