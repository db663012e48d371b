"""MCP server definitions: ``[mcp.servers.<name>]`` tables and the standard ``mcpServers`` JSON file.

TOML (config.toml)::

    [mcp.servers.github]          # stdio: command, args, env, cwd
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-github"]
    [mcp.servers.remote]          # streamable HTTP: type = "http", url, headers, oauth
    type = "http"
    url = "https://mcp.example.com/mcp"
    oauth = { client_id = "...", client_secret = "..." }   # optional: see auth/settings.py

JSON (``--mcp-config``): ``{"mcpServers": {"github": {"command": ..., "args": [...], "env": {...}}}}``.
Servers from the JSON file replace TOML servers of the same name. Names containing ``__`` are
rejected (``__`` separates server and tool in ``mcp__<server>__<tool>``): such an entry, like any
invalid entry, disables only that server, with the reason shown where the server is listed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..config import Config, ConfigError
from ..core.child_env import SandboxPolicy, sandbox_policy
from .auth.settings import DEFAULT as OAUTH_DEFAULT
from .auth.settings import OAuthSettings
from .transports import TRANSPORTS, transport_for_type

Transport = str  # a name in transports.TRANSPORTS
Protocol = Literal["auto", "legacy"]

_NAME_OK = re.compile(r"^[A-Za-z0-9_-]+$")
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One MCP server to connect to."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    oauth: OAuthSettings = OAUTH_DEFAULT  # HTTP servers: how to log in (auth/settings.py)
    # "legacy" (the default): the initialize handshake first, as the 2025-11-25 lifecycle says;
    # "auto": probe the draft protocol with server/discover, fall back to the handshake.
    protocol: Protocol = "legacy"
    log_level: str = ""  # logging/setLevel after connecting ("" = [mcp] log_level)
    # stdio servers: "sandbox": true runs the server in the OS sandbox ([sandbox] profile, bubblewrap)
    sandbox: bool = False
    sandbox_policy: SandboxPolicy | None = None  # the [sandbox] settings it runs under
    source: str = ""  # where it was defined, for messages
    invalid: str = ""  # why this entry cannot be used (the server is shown failed, the others run)

    @property
    def uses_oauth(self) -> bool:
        """An HTTP server that may be logged in to (not turned off, no Authorization header of its own)."""
        return (
            self.transport == "http"
            and self.oauth.enabled
            and not any(k.lower() == "authorization" for k in self.headers)
        )

    @property
    def target(self) -> str:
        """A one-line description of what is started or contacted."""
        return TRANSPORTS[self.transport].target(self)


def check_server_name(name: str, where: str) -> None:
    if "__" in name:
        raise ConfigError(
            f"{where}: MCP server name {name!r} must not contain '__' (it separates server and tool "
            "in mcp__<server>__<tool>); rename the server"
        )
    if not name or not _NAME_OK.match(name):
        raise ConfigError(
            f"{where}: MCP server name {name!r} may only use letters, digits, '-' and '_' "
            "(it becomes part of tool names)"
        )


def check_log_level(value: Any, where: str) -> str:
    if value in ("", None):
        return ""
    if value not in LOG_LEVELS:
        raise ConfigError(f"{where}: must be one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return str(value)


def parse_server(name: str, table: dict[str, Any], where: str) -> ServerConfig | None:
    """One server table (TOML or JSON entry) -> ServerConfig; None when ``disabled = true``."""
    check_server_name(name, where)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table, got {type(table).__name__}")
    if table.get("disabled") is True:
        return None
    kind = str(table.get("type", "")).lower()
    if kind == "sse":
        raise ConfigError(
            f'{where}.type: the SSE transport is not supported; use type = "http" (streamable HTTP)'
        )
    protocol = table.get("protocol", "legacy")
    if protocol not in ("auto", "legacy"):
        raise ConfigError(f'{where}.protocol: must be "auto" or "legacy", got {protocol!r}')
    log_level = check_log_level(table.get("log_level", ""), f"{where}.log_level")
    if kind:
        transport = transport_for_type(kind)
        if transport is None:
            names = " or ".join(f'"{name}"' for name in TRANSPORTS)
            raise ConfigError(f"{where}.type: must be {names}, got {kind!r}")
    else:
        transport = next(t for t in TRANSPORTS.values() if t.looks_like(table))
    unknown = set(table) - transport.keys
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} for {transport.label}")
    return ServerConfig(
        name,
        transport.name,
        **transport.fields(table, where),
        protocol=protocol,
        log_level=log_level,
        source=where,
    )


def load_json_servers(path: str) -> dict[str, ServerConfig]:
    """Read a standard ``{"mcpServers": {...}}`` file."""
    p = Path(path).expanduser()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: MCP config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read MCP config: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ConfigError(f'{p}: expected a JSON object with an "mcpServers" key')
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        raise ConfigError(f'{p}: expected an "mcpServers" object mapping names to servers')
    out: dict[str, ServerConfig] = {}
    for name, table in servers.items():
        server = _entry(str(name), table, f"{p}: mcpServers.{name}")
        if server is not None:
            out[server.name] = server
    return out


def _entry(name: str, table: Any, where: str) -> ServerConfig | None:
    """One entry; a bad one becomes an ``invalid`` server so the others (and the app) still start."""
    try:
        return parse_server(name, table, where)
    except ConfigError as exc:
        return ServerConfig(name, "stdio", source=where, invalid=str(exc))


def load_server_configs(cfg: Config, mcp_config_path: str | None) -> dict[str, ServerConfig]:
    """All configured servers: ``[mcp.servers.*]`` then the JSON file (JSON wins on the same name).

    ``mcp_config_path`` (the ``--mcp-config`` flag) falls back to ``[mcp] config_path``.
    A bad entry comes back with ``invalid`` set (its server is disabled with that error); an
    unreadable JSON file raises ConfigError.
    """
    src = str(cfg.path) if cfg.path else "config"
    out: dict[str, ServerConfig] = {}
    for name, table in cfg.mcp.servers.items():
        server = _entry(name, table, f"{src}: mcp.servers.{name}")
        if server is not None:
            out[server.name] = server
    json_path = mcp_config_path or cfg.mcp.config_path
    if json_path:
        out.update(load_json_servers(json_path))
    policy = sandbox_policy(cfg)
    return {name: replace(s, sandbox_policy=policy) if s.sandbox else s for name, s in out.items()}
