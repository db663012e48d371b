"""Retries with exponential backoff for provider streams, and turning SDK failures into ProviderError.

The rule: a failed request is retried (429, 408, 5xx, connection errors, timeouts) only while
no output (content, reasoning or tool-call delta; usage reports do not count) has been yielded. Once output has reached the user a failure is final
and reported — a retry would duplicate text that was already shown.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.provider import ProviderError, StreamEvent, UsageUpdate

if TYPE_CHECKING:
    from ..config import Config

RETRYABLE_STATUSES = frozenset({408, 429})


@dataclass(slots=True)
class RetryPolicy:
    retries: int = 3  # attempts after the first
    base_delay: float = 1.0  # seconds before the first retry; doubles each time
    max_delay: float = 30.0  # cap for the exponential backoff
    max_retry_after: float = 60.0  # a server's Retry-After above this is not waited for

    def delay_for(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` starts at 0)."""
        if retry_after is not None and 0 <= retry_after <= self.max_retry_after:
            return retry_after
        return min(self.base_delay * (2**attempt), self.max_delay)


class RetryableProviderError(ProviderError):
    """A ProviderError that may be retried, optionally carrying the server's Retry-After (seconds).

    ``stalled``: the server sent nothing for the idle timeout; such a failure is retried once
    at most (each attempt already waited the whole timeout).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        stalled: bool = False,
    ) -> None:
        super().__init__(message, retryable=True, status=status)
        self.retry_after = retry_after
        self.stalled = stalled


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (number or HTTP date); None if absent/bad."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def server_error_message(body: Any, fallback: str = "") -> str:
    """The human part of an API error body (OpenAI and Anthropic shapes), on one line."""
    message: Any = None
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            message = err.get("message") or err.get("type")
        elif isinstance(err, str):
            message = err
        if not message:
            message = body.get("message") or body.get("detail")
    elif isinstance(body, str):
        message = body
    text = str(message) if message else fallback
    return " ".join(text.split())[:500] or "no error message"


def status_error(provider: str, status: int, body: Any, headers: Mapping[str, str] | None) -> ProviderError:
    message = f"{provider} API error {status}: {server_error_message(body, f'HTTP {status}')}"
    if is_retryable_status(status):
        return RetryableProviderError(message, status=status, retry_after=parse_retry_after(headers))
    return ProviderError(message, status=status)


def transport_error(
    provider: str, base_url: str, exc: BaseException, *, timeout: bool, started: bool
) -> ProviderError:
    """A connection failure: retryable before any output, "stream ended early" after."""
    detail = " ".join(str(exc.__cause__ or exc).split()) or type(exc).__name__
    connecting = "connect" in type(exc).__name__.lower() or "connect" in type(exc.__cause__).__name__.lower()
    if timeout and not connecting:
        where = base_url or "the default endpoint"
        if started:
            return stream_cut(f"the stream stalled: no data from {where} within the idle timeout")
        return RetryableProviderError(
            f"{provider} stream stalled: no data from {where} within the idle timeout "
            "(model.stream_idle_timeout)",
            stalled=True,
        )
    if started:
        return stream_cut(f"{'timed out' if timeout else 'connection lost'} ({detail})")
    what = "timed out" if timeout else "connection failed"
    return RetryableProviderError(
        f"{provider} request to {base_url or 'the default endpoint'} {what}: {detail}"
    )


def unexpected_error(provider: str, exc: BaseException, *, started: bool) -> ProviderError:
    """Anything else (malformed stream data, SDK surprises) as a one-line, non-retryable error."""
    if isinstance(exc, ProviderError):
        return exc
    detail = " ".join(str(exc).split())[:300]
    message = f"{provider} response could not be read: {type(exc).__name__}: {detail}"
    return stream_cut(message) if started else ProviderError(message)


def stream_cut(detail: str, *, retryable: bool = False) -> ProviderError:
    """A stream that stopped without its terminator; retryable only if nothing was shown yet."""
    message = f"stream ended early: {detail}"
    return RetryableProviderError(message) if retryable else ProviderError(message)


async def stream_with_retries(
    attempt: Callable[[], AsyncIterator[StreamEvent]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> AsyncIterator[StreamEvent]:
    """Run ``attempt()`` and re-run it on retryable ProviderErrors raised before its first event."""
    failures = 0
    stalls = 0
    while True:
        stream = attempt()
        yielded = False
        try:
            async for event in stream:
                # a usage report alone is not output: a retry's own report simply supersedes it
                yielded = yielded or not isinstance(event, UsageUpdate)
                yield event
            return
        except ProviderError as exc:
            if yielded or not exc.retryable:
                raise
            if getattr(exc, "stalled", False):
                # a stall is retried once whatever the retry policy, never more
                stalls += 1
                if stalls > 1:
                    raise ProviderError(f"{exc} (gave up after {stalls} stalled attempts)") from exc
                delay = 0.0
            elif failures >= policy.retries:
                if failures == 0:
                    raise
                raise ProviderError(
                    f"{exc} (gave up after {failures + 1} attempts)", retryable=False, status=exc.status
                ) from exc
            else:
                delay = policy.delay_for(failures, getattr(exc, "retry_after", None))
                failures += 1
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        await sleep(delay)


def provider_settings(config: Config) -> dict[str, Any]:
    """The constructor keywords both API providers take from a Config."""
    model = config.model
    return {
        "base_url": config.api.base_url,
        "api_key": config.api.api_key,
        "model": model.name,
        "temperature": model.temperature,
        "max_tokens": model.max_tokens,
        "reasoning_effort": model.reasoning_effort,
        "retry": RetryPolicy(retries=model.retries, base_delay=model.retry_base_delay),
        "timeout": model.stream_idle_timeout,
        "connect_timeout": model.connect_timeout,
    }
