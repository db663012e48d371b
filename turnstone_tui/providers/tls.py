"""The model SDK client's TLS context, built while the SDK is imported.

httpx2 builds its default context (``httpcore2.default_ssl_context``) when the SDK's client is
created: reading the system's CA bundle, ~20 ms measured, in OpenSSL without the GIL, and on the
way to the first request (the build waits for the SDK's import, the request for the build).
``prepare()``, called by the thread that imports the SDK just before it does, builds that same
context in a thread of its own, where it overlaps the import (which holds the GIL) on another
core; the provider's client is then made with it (``take()``, through the SDK's own
``DefaultAsyncHttpxClient``, which has the SDK's defaults). Nothing prepared, or its build failed:
the SDK builds its client as usual.

The caller of ``prepare`` holds ``providers.deferred.IMPORT_LOCK`` (it imports httpcore2).
"""

from __future__ import annotations

import concurrent.futures
import ssl
import threading

_lock = threading.Lock()
_prepared: concurrent.futures.Future[ssl.SSLContext] | None = None


def prepare() -> None:
    """Start building the default TLS context in a thread (once until it is taken)."""
    global _prepared
    with _lock:
        if _prepared is not None:
            return
        import httpcore2  # the SDK's HTTP core: imported by its client anyway

        future: concurrent.futures.Future[ssl.SSLContext] = concurrent.futures.Future()

        def build() -> None:
            try:
                future.set_result(httpcore2.default_ssl_context())
            except BaseException as exc:  # noqa: BLE001 - the client then builds its own
                future.set_exception(exc)

        threading.Thread(target=build, name="tls-context", daemon=True).start()
        _prepared = future


def take() -> ssl.SSLContext | None:
    """The prepared context (waiting for it), for one client; None when none was prepared or it
    could not be built."""
    global _prepared
    with _lock:
        future, _prepared = _prepared, None
    if future is None:
        return None
    try:
        return future.result()
    except Exception:  # noqa: BLE001
        return None
