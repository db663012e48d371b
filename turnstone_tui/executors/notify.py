"""notify: POST a JSON notification to the configured webhook, or ring the terminal bell.

- With ``[notify] url``: POST ``{message, title, username, channel_type, channel_id}`` (plus the
  configured headers); a failed attempt (connection error or non-2xx) is retried after 1 s and
  after 3 s, so at most 3 attempts.
- Without a URL: the local equivalent of the spec's channel gateway is the terminal itself. The
  tool calls ``ui.on_notification(text)``; each front end shows it its way (the Textual app as a
  notice with a bell glyph, the headless runner writes ``\\a`` to stderr). That keeps executors free
  of any terminal I/O.
- At most 5 notifications per turn, counted on success only (``ctx.notify_sent_this_turn``; the
  session resets it at the start of each turn).

Tests shorten the retry delays through ``ToolContext.notify_retry_delays``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, ToolResult

MAX_MESSAGE_CHARS = 2000
MAX_PER_TURN = 5
RETRY_DELAYS = (1.0, 3.0)
OPTIONAL_FIELDS = ("title", "username", "channel_type", "channel_id")


def _retry_delays(ctx: ToolContext) -> tuple[float, ...]:
    delays = ctx.notify_retry_delays
    return tuple(float(d) for d in delays) if delays is not None else RETRY_DELAYS


async def post_with_retries(
    url: str, payload: dict[str, Any], headers: dict[str, str], delays: tuple[float, ...]
) -> tuple[bool, str]:
    """POST ``payload``; retry after each delay. Returns (delivered, what happened)."""
    failures: list[str] = []
    async with httpx.AsyncClient(timeout=15.0, trust_env=False) as client:
        for attempt in range(len(delays) + 1):
            if attempt:
                await asyncio.sleep(delays[attempt - 1])
            try:
                response = await client.post(url, json=payload, headers=headers)
            except httpx.HTTPError as exc:
                failures.append(f"attempt {attempt + 1}: {type(exc).__name__}: {exc}")
                continue
            if 200 <= response.status_code < 300:
                return True, f"delivered (HTTP {response.status_code}, attempt {attempt + 1})"
            failures.append(f"attempt {attempt + 1}: HTTP {response.status_code}")
    return False, "; ".join(failures)


async def prepare_notify(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    message = require_str(args, "message")
    if message is None or not message.strip():
        return error_item(call_id, "notify", args, "notify needs a non-empty 'message'")
    if len(message) > MAX_MESSAGE_CHARS:
        return error_item(
            call_id, "notify", args, f"message is {len(message)} characters; the limit is {MAX_MESSAGE_CHARS}"
        )
    for key in OPTIONAL_FIELDS:
        if key in args and args[key] is not None and not isinstance(args[key], str):
            return error_item(call_id, "notify", args, f"'{key}' must be a string")
    if args.get("username") and (args.get("channel_type") or args.get("channel_id")):
        return error_item(
            call_id, "notify", args, "give either 'username' or 'channel_type' + 'channel_id', not both"
        )
    title = str(args.get("title") or "")
    url = ctx.config.notify.url

    async def execute(ectx: ExecContext) -> ToolResult:
        # Calls of one batch run concurrently: count the ones still in flight against the limit too.
        if ctx.notify_sent_this_turn + ctx.notify_in_flight >= MAX_PER_TURN:
            return ToolResult(
                f"notify refused: at most {MAX_PER_TURN} notifications per turn "
                f"({ctx.notify_sent_this_turn} already sent)",
                is_error=True,
            )
        ctx.notify_in_flight += 1
        try:
            return await _deliver()
        finally:
            ctx.notify_in_flight -= 1

    async def _deliver() -> ToolResult:
        if not url:
            shown = f"{title}: {message}" if title else message
            ctx.ui.on_notification(shown)
            ctx.notify_sent_this_turn += 1
            return ToolResult(
                "Notification shown in the terminal with a bell (no [notify] url webhook is configured)."
            )
        payload = {"message": message, **{k: str(args.get(k) or "") for k in OPTIONAL_FIELDS}}
        headers = {"Content-Type": "application/json", **ctx.config.notify.headers}
        delivered, detail = await post_with_retries(url, payload, headers, _retry_delays(ctx))
        if not delivered:
            return ToolResult(f"notify failed after {len(_retry_delays(ctx)) + 1} attempts: {detail}", True)
        ctx.notify_sent_this_turn += 1
        return ToolResult(f"Notification {detail}.")

    target = url or "terminal bell + notice"
    return PreparedItem(
        call_id=call_id,
        func_name="notify",
        args=args,
        header=f"notify → {target}",
        preview=(f"{title}\n" if title else "") + message,
        needs_approval=False,
        execute=execute,
    )


PREPARERS: dict[str, Preparer] = {"notify": prepare_notify}
