"""The client's side of MCP: answering what servers ask (elicitation, sampling, roots) and their logs.

One :class:`ClientSide` is shared by every server connection. Having the callbacks set is what
makes the SDK declare the ``elicitation`` (form and url), ``sampling`` and ``roots``
(``listChanged``) capabilities; the answers come from the front end's
:class:`~turnstone_tui.mcp.asks.ServerAsks` and, for sampling, the user's current model.
"""

from __future__ import annotations

import collections
import logging
import time
import webbrowser
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import mcp_types as mt

from .asks import (
    ElicitationRequest,
    NoUserAsks,
    SampleResult,
    SamplingMessage,
    SamplingRequest,
    ServerAsks,
)
from .elicit_form import SchemaError, parse_schema, validate

log = logging.getLogger(__name__)

Sampler = Callable[[SamplingRequest], Awaitable[SampleResult]]
UrlOpener = Callable[[str], Any]

USER_REJECTED = -1  # the spec's code for "the user rejected the sampling request"
LOG_LINES_PER_SERVER = 500
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
ERROR_LEVELS = frozenset({"error", "critical", "alert", "emergency"})


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One ``notifications/message`` from a server."""

    time: float
    level: str
    logger: str
    text: str


def _log_text(data: Any) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, dict) and isinstance(data.get("message"), str) and len(data) == 1:
        return data["message"]
    import json

    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(data)


def _content_text(blocks: Iterable[Any]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, mt.TextContent):
            parts.append(block.text)
        else:
            kind = getattr(block, "type", type(block).__name__)
            mime = getattr(block, "mime_type", "")
            parts.append(f"[{kind}{': ' + mime if mime else ''} not shown]")
    return "\n".join(parts)


def sampling_request(server: str, params: mt.CreateMessageRequestParams) -> SamplingRequest:
    hints: tuple[str, ...] = ()
    prefs = params.model_preferences
    if prefs is not None and prefs.hints:
        hints = tuple(h.name for h in prefs.hints if getattr(h, "name", None))
    return SamplingRequest(
        server=server,
        messages=tuple(SamplingMessage(m.role, _content_text(m.content_as_list)) for m in params.messages),
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt or "",
        temperature=params.temperature,
        model_hints=hints,
    )


class ClientSide:
    def __init__(
        self,
        *,
        asks: ServerAsks | None = None,
        sampler: Sampler | None = None,
        roots: Iterable[Path] = (),
        open_url: UrlOpener = webbrowser.open,
        on_log: Callable[[str, LogEntry], None] | None = None,
    ) -> None:
        self.asks: ServerAsks = asks or NoUserAsks()
        self.sampler = sampler
        self.open_url = open_url
        self.on_log = on_log
        self._roots: tuple[Path, ...] = tuple(dict.fromkeys(Path(r).resolve() for r in roots))
        self.logs: dict[str, collections.deque[LogEntry]] = {}

    # --- roots ----------------------------------------------------------------------------

    @property
    def roots(self) -> tuple[Path, ...]:
        return self._roots

    def set_roots(self, roots: Iterable[Path]) -> bool:
        """Replace the roots; True when they changed (the caller sends roots/list_changed)."""
        new = tuple(dict.fromkeys(Path(r).resolve() for r in roots))
        changed = new != self._roots
        self._roots = new
        return changed

    def roots_result(self) -> mt.ListRootsResult:
        return mt.ListRootsResult(
            roots=[mt.Root(uri=root.as_uri(), name=root.name or str(root)) for root in self._roots]  # type: ignore[arg-type]
        )

    # --- logs -----------------------------------------------------------------------------

    def add_log(self, server: str, params: mt.LoggingMessageNotificationParams) -> LogEntry:
        entry = LogEntry(time.time(), str(params.level), params.logger or "", _log_text(params.data))
        buffer = self.logs.get(server)
        if buffer is None:
            buffer = self.logs[server] = collections.deque(maxlen=LOG_LINES_PER_SERVER)
        buffer.append(entry)
        if self.on_log is not None:
            try:
                self.on_log(server, entry)
            except Exception:
                log.exception("MCP log listener failed")
        return entry

    # --- callbacks for one server (the SDK Client's keyword arguments) --------------------

    def callbacks(self, server: str) -> dict[str, Any]:
        async def elicitation(_ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult | mt.ErrorData:
            return await self.elicit(server, params)

        async def sampling(
            _ctx: Any, params: mt.CreateMessageRequestParams
        ) -> mt.CreateMessageResult | mt.ErrorData:
            return await self.sample(server, params)

        async def list_roots(_ctx: Any) -> mt.ListRootsResult:
            return self.roots_result()

        async def logging_cb(params: mt.LoggingMessageNotificationParams) -> None:
            self.add_log(server, params)

        return {
            "elicitation_callback": elicitation,
            "sampling_callback": sampling,
            "list_roots_callback": list_roots,
            "logging_callback": logging_cb,
        }

    async def elicit(self, server: str, params: mt.ElicitRequestParams) -> mt.ElicitResult | mt.ErrorData:
        if isinstance(params, mt.ElicitRequestURLParams):
            request = ElicitationRequest(server=server, message=params.message, mode="url", url=params.url)
            answer = await self.asks.elicit(request)
            if answer.action == "accept":
                try:
                    self.open_url(params.url)
                except Exception as exc:  # no browser: the URL was shown to copy
                    log.info("could not open %s: %s", params.url, exc)
            return mt.ElicitResult(action=answer.action)
        schema = params.requested_schema
        try:
            fields = parse_schema(schema)
        except SchemaError as exc:
            return mt.ErrorData(code=mt.INVALID_PARAMS, message=f"cannot show this form: {exc}")
        request = ElicitationRequest(
            server=server, message=params.message, mode="form", fields=fields, schema=schema
        )
        answer = await self.asks.elicit(request)
        if answer.action != "accept":
            return mt.ElicitResult(action=answer.action)
        content, errors = validate(fields, answer.content or {})
        if errors:  # a front end must validate first; never send what the schema rejects
            return mt.ElicitResult(action="cancel")
        try:
            jsonschema.validate(content, schema)
        except jsonschema.ValidationError as exc:
            log.warning("elicitation answer for %s failed schema validation: %s", server, exc.message)
            return mt.ElicitResult(action="cancel")
        except jsonschema.SchemaError:
            pass  # the server's schema is itself odd; our own field checks passed
        return mt.ElicitResult(action="accept", content=content)

    async def sample(
        self, server: str, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        request = sampling_request(server, params)
        if isinstance(self.asks, NoUserAsks):
            return mt.ErrorData(
                code=USER_REJECTED,
                message=f"sampling refused: {NoUserAsks.reason} to approve it",
            )
        if self.sampler is None:
            return mt.ErrorData(code=mt.INVALID_REQUEST, message="sampling refused: no model is configured")
        if not await self.asks.approve_sampling(request):
            return mt.ErrorData(code=USER_REJECTED, message="the user rejected the sampling request")
        try:
            result = await self.sampler(request)
        except Exception as exc:
            return mt.ErrorData(code=mt.INTERNAL_ERROR, message=f"sampling failed: {exc}")
        text = await self.asks.review_sample(request, result)
        if text is None:
            return mt.ErrorData(code=USER_REJECTED, message="the user denied the sampled answer")
        return mt.CreateMessageResult(
            role="assistant",
            content=mt.TextContent(type="text", text=text),
            model=result.model,
            stop_reason=result.stop_reason,
        )
