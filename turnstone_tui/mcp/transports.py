"""How each MCP transport is configured and opened: one object per transport, found by name.

Adding a transport: a class with the ``McpTransport`` members below and one entry in
``TRANSPORTS``. ``config.py`` parses a server table with it, ``server_conn.py`` opens it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from ..config import ConfigError
from ..core.child_env import SandboxPolicy, child_marker, ensure_guardian_async, plan, scrubbed_env
from .auth.settings import parse_oauth

if TYPE_CHECKING:
    from .config import ServerConfig

Streams = tuple[Any, Any]  # (read stream, write stream) as the mcp SDK's clients yield them
HttpHook = Callable[[Any], Awaitable[None]]  # an httpx response hook (HTTP transports only)


class McpTransport(Protocol):
    name: str  # what ServerConfig.transport holds and status lines show
    label: str  # "a stdio server", for messages
    type_names: frozenset[str]  # values of a server table's "type" that mean this transport
    keys: frozenset[str]  # the keys a server table of this transport may have
    closed_reason: str  # what the user reads when the stream ends unexpectedly
    keeps_stderr: bool  # the server writes a stderr worth showing when it fails

    def looks_like(self, table: dict[str, Any]) -> bool:
        """A table without "type": is it one of ours?"""
        ...

    def fields(self, table: dict[str, Any], where: str) -> dict[str, Any]:
        """The ServerConfig fields this transport reads from a server table (ConfigError if bad)."""
        ...

    def target(self, config: ServerConfig) -> str:
        """A one-line description of what is started or contacted."""
        ...

    def open(
        self,
        config: ServerConfig,
        *,
        errlog: IO[str] | None,
        on_http_response: HttpHook | None = None,
        auth: Any = None,
    ) -> contextlib.AbstractAsyncContextManager[Streams]:
        """Start the process or the connection; yields the SDK's read and write streams
        (``auth``: an ``httpx2.Auth`` for HTTP transports, the server's OAuth)."""
        ...


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def _str_dict(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of strings, got {value!r}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ConfigError(f"{where}.{key}: expected a string, got {item!r}")
        out[str(key)] = str(item)
    return out


_COMMON_KEYS = frozenset({"type", "protocol", "disabled", "description", "log_level"})


class StdioTransport:
    name = "stdio"
    label = "a stdio server"
    type_names = frozenset({"stdio"})
    keys = _COMMON_KEYS | {"command", "args", "env", "cwd", "sandbox"}
    closed_reason = "the server process exited"
    keeps_stderr = True

    def looks_like(self, table: dict[str, Any]) -> bool:
        return "command" in table or "url" not in table

    def fields(self, table: dict[str, Any], where: str) -> dict[str, Any]:
        command = _str(table.get("command", ""), f"{where}.command")
        if not command.strip():
            raise ConfigError(f'{where}: a stdio server needs a command (or type = "http" and a url)')
        cwd = table.get("cwd")
        sandbox = table.get("sandbox", False)
        if not isinstance(sandbox, bool):
            raise ConfigError(f"{where}.sandbox: expected true or false, got {sandbox!r}")
        return {
            "sandbox": sandbox,
            "command": command,
            "args": _str_list(table.get("args", []), f"{where}.args"),
            "env": _str_dict(table.get("env", {}), f"{where}.env"),
            "cwd": str(Path(_str(cwd, f"{where}.cwd")).expanduser()) if cwd is not None else None,
        }

    def target(self, config: ServerConfig) -> str:
        return " ".join([config.command, *config.args])

    @contextlib.asynccontextmanager
    async def open(
        self,
        config: ServerConfig,
        *,
        errlog: IO[str] | None,
        on_http_response: HttpHook | None = None,
        auth: Any = None,
    ) -> AsyncIterator[Streams]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        await ensure_guardian_async()  # the server (and what it starts) dies with the agent
        argv = [config.command, *config.args]
        if config.sandbox:
            argv = await sandboxed_argv(config)
        params = StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            env={**scrubbed_env(config.env), **child_marker()},
            cwd=config.cwd,
            encoding_error_handler="replace",
        )
        assert errlog is not None
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams


class SandboxUnavailable(RuntimeError):
    """A server that asks for the sandbox where it cannot run: it is not started unconfined."""


def _own_files(words: list[str]) -> list[Path]:
    """What the server's program needs to see even when it lives under /tmp (hidden by the private
    /tmp otherwise): the program and the files it names, a script's own directory (its modules), and
    the virtualenv a venv interpreter belongs to (its pyvenv.cfg and site-packages)."""
    found: list[Path] = []
    for word in words:
        if not os.path.isabs(word):
            continue
        path = Path(word)
        found.append(path)
        if path.is_file():
            found.append(path.parent)
        venv = path.parent.parent
        if (venv / "pyvenv.cfg").is_file():
            found.append(venv)
    return found


async def sandboxed_argv(config: ServerConfig) -> list[str]:
    """The server's command inside bubblewrap with the [sandbox] profile: the filesystem read-only
    but its working directory (and [sandbox] writable), a private /tmp and PID namespace, the network
    as [sandbox] network says. With [sandbox] mode = "off" it runs as configured, unconfined; where
    bubblewrap cannot run it is not started (SandboxUnavailable says why)."""
    policy = config.sandbox_policy or SandboxPolicy()
    cwd = Path(config.cwd or os.getcwd())
    argv = [config.command, *config.args]
    found = shutil.which(config.command)
    readable = _own_files([found or config.command, *config.args])
    run_plan = await asyncio.to_thread(plan, policy, argv, cwd=cwd, readable=readable)
    if not run_plan.sandboxed and policy.mode != "off":
        raise SandboxUnavailable(f"the sandbox it asks for cannot run ({run_plan.note})")
    return run_plan.argv


class HttpTransport:
    name = "http"
    label = "an HTTP server"
    type_names = frozenset({"http", "streamable-http", "streamable_http", "streamablehttp"})
    keys = _COMMON_KEYS | {"url", "headers", "oauth"}
    closed_reason = "the server closed the connection"
    keeps_stderr = False

    def looks_like(self, table: dict[str, Any]) -> bool:
        return "url" in table and "command" not in table

    def fields(self, table: dict[str, Any], where: str) -> dict[str, Any]:
        url = _str(table.get("url", ""), f"{where}.url")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.url: an HTTP server needs an http:// or https:// url, got {url!r}")
        return {
            "url": url,
            "headers": _str_dict(table.get("headers", {}), f"{where}.headers"),
            "oauth": parse_oauth(table.get("oauth"), f"{where}.oauth"),
        }

    def target(self, config: ServerConfig) -> str:
        return config.url

    @contextlib.asynccontextmanager
    async def open(
        self,
        config: ServerConfig,
        *,
        errlog: IO[str] | None,
        on_http_response: HttpHook | None = None,
        auth: Any = None,
    ) -> AsyncIterator[Streams]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=dict(config.headers) or None, auth=auth)
        if on_http_response is not None:
            http.event_hooks = {
                **http.event_hooks,
                "response": [*http.event_hooks.get("response", []), on_http_response],
            }
        async with http, streamable_http_client(config.url, http_client=http) as (read, write):
            yield read, write


TRANSPORTS: dict[str, McpTransport] = {t.name: t for t in (StdioTransport(), HttpTransport())}


def transport_for_type(kind: str) -> McpTransport | None:
    """The transport a server table's "type" names (None: no such transport)."""
    return next((t for t in TRANSPORTS.values() if kind in t.type_names), None)
