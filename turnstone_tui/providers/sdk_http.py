"""The HTTP client a model SDK's async client is given: the SDK's own default client, with the
stream idle timeout, the TLS context built ahead (providers.tls) and reads paced
(providers.paced_reads)."""

from __future__ import annotations

from collections.abc import Callable

import httpx2

from . import tls
from .paced_reads import pace_reads


def sdk_timeouts(timeout: float, connect_timeout: float) -> httpx2.Timeout:
    """``timeout`` bounds each wait for data (the stream's idle timeout); connecting takes at most
    ``connect_timeout`` of it."""
    return httpx2.Timeout(timeout, connect=min(connect_timeout, timeout))


def sdk_http_client(
    default_client: Callable[..., httpx2.AsyncClient], timeouts: httpx2.Timeout
) -> httpx2.AsyncClient:
    """``default_client`` (the SDK's ``DefaultAsyncHttpxClient``) made with ``timeouts`` and the
    prepared TLS context, if one was prepared, its stream reads paced."""
    context = tls.take()  # built while the SDK was imported, if it was
    return pace_reads(default_client(timeout=timeouts, **({} if context is None else {"verify": context})))
