"""A model SDK's HTTP client that reads a fast stream in batches, not an event at a time.

A model streams its answer as one small SSE event per token, often a couple of thousand a second,
each written on its own. The SDK's HTTP core (httpcore2 over anyio) reads the socket as soon as
anything arrived: one read per event, and each read costs the event loop a wake-up, a cancel scope
with its timer, the transport paused and resumed (two ``epoll_ctl`` calls) and a trip through the
HTTP parser and the SDK's byte iterators: in traces of a 2k-token/s answer (bench/terminal_markdown.py)
that read path was about a fifth of the app's event loop, beside Textual's frames.

:class:`PacedStream` waits, after a read that drained the socket (it returned less than asked for),
until ``READ_PACE`` has passed since that read before reading again: what arrives meanwhile waits in
the kernel's buffer and comes in with the next read, ~10 events in one at 2k events a second. A
read that filled its buffer is followed at once (more is waiting), so a large body is not slowed;
an event that comes after a quiet spell is read at once (the pause has passed). What a reader can
see is an event up to ``READ_PACE`` later, well under a frame (the answer is drawn every 20 ms).
"""

from __future__ import annotations

import time
from typing import Any

import httpcore2
import httpx2

READ_PACE = 0.005  # seconds: at most ~200 reads a second from a stream that keeps coming


class PacedStream(httpcore2.AsyncNetworkStream):
    """A network stream whose reads after a short read are at least ``READ_PACE`` apart."""

    def __init__(self, inner: httpcore2.AsyncNetworkStream, backend: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner
        self._backend = backend
        self._drained_at: float | None = None  # when the last read returned less than asked for

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109 (httpcore2's signature)
        if self._drained_at is not None:
            wait = self._drained_at + READ_PACE - time.monotonic()
            if wait > 0:
                await self._backend.sleep(wait)
        data = await self._inner.read(max_bytes, timeout)
        self._drained_at = time.monotonic() if len(data) < max_bytes else None
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return PacedStream(await self._inner.start_tls(*args, **kwargs), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class PacedBackend(httpcore2.AsyncNetworkBackend):
    """The pool's network backend, its streams paced."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return PacedStream(await self._inner.connect_tcp(*args, **kwargs), self._inner)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return PacedStream(await self._inner.connect_unix_socket(*args, **kwargs), self._inner)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def pace_reads(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """``client`` with every connection pool it sends through (its own, a proxy's) paced. A
    transport that is not httpx2's own (no pool with a network backend) is left as it is."""
    transports = [client._transport, *client._mounts.values()]  # (httpx2 exposes no other way in)
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore2.AsyncNetworkBackend) and not isinstance(backend, PacedBackend):
            pool._network_backend = PacedBackend(backend)  # type: ignore[union-attr]
    return client
