"""Configuration: ``config.toml`` (platformdirs), environment variables and CLI flags.

Precedence, lowest to highest: defaults < config file < environment < CLI flags.
Every limit the engine uses lives here with its documented default.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

APP_NAME = "turnstone"


class ConfigError(Exception):
    """An invalid configuration; the message names the file and key."""


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def log_dir() -> Path:
    return Path(platformdirs.user_log_dir(APP_NAME, appauthor=False))


def default_config_path() -> Path:
    env = os.environ.get("TURNSTONE_CONFIG")
    return Path(env).expanduser() if env else config_dir() / "config.toml"


@dataclass
class ApiConfig:
    base_url: str = ""
    api_key: str = ""
    tavily_key: str = ""


@dataclass
class ModelConfig:
    name: str = ""
    provider: str = ""  # a name from providers/registry.py, or "" (auto)
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    context_window: int = 32768
    supports_vision: bool | None = None  # None: decided by provider
    retries: int = 3  # attempts after the first, on 429/5xx/connection errors
    retry_base_delay: float = 1.0  # seconds; doubles per attempt
    # a stream that sends no byte for this long has stalled: retried once, then an error
    stream_idle_timeout: float = 90.0
    connect_timeout: float = 15.0  # seconds to open the connection
    # Tool search tier for this model: "native" | "client" | "off" | "" (by the capability table)
    tool_search: str = ""


@dataclass
class ModelAlias:
    name: str = ""
    provider: str = ""
    base_url: str = ""
    api_key: str = ""
    context_window: int | None = None
    supports_vision: bool | None = None
    tool_search: str = ""  # "native" | "client" | "off" | "" (by the capability table)


TOOL_SEARCH_TIERS = ("native", "client", "off")


@dataclass
class ToolsConfig:
    timeout: int = 120  # seconds, bash default
    truncation: int = 256 * 1024  # characters kept from a tool output (head + tail)
    skip_permissions: bool = False
    search: str = "auto"  # auto | on | off
    # web_search run by the provider (Anthropic's server-side tool) instead of Tavily:
    # auto = on with Anthropic's hosted API | on | off
    native_web_search: str = "auto"
    search_threshold: int = 20
    search_max_results: int = 5
    max_parallel: int = 4
    agent_max_turns: int = 20
    allow: list[str] = field(default_factory=list)  # persisted "always" allow-list
    # limits on a tool call's raw JSON arguments (larger / deeper arguments are refused unparsed)
    max_argument_chars: int = 4 * 1024 * 1024
    max_argument_depth: int = 64


@dataclass
class McpConfig:
    config_path: str = ""
    refresh_interval: float = 4 * 3600.0  # seconds; poll servers without list_changed push
    connect_timeout: float = 30.0
    call_timeout: float = 120.0
    log_level: str = ""  # logging/setLevel sent to servers that log ("" = their default)
    roots: list[str] = field(default_factory=list)  # offered as roots besides the working directory
    first_turn_wait: float = 10.0  # seconds the first prompt waits for servers still connecting
    auto_approve_read_only: bool = False  # run tools the server marks readOnlyHint without asking
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class NotifyConfig:
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class UiConfig:
    theme: str = ""
    max_pane_lines: int = 5000  # lines kept per bash pane
    max_chat_widgets: int = (
        400  # at most this many chat entries mounted (older ones come back on scrolling up)
    )


@dataclass
class SandboxConfig:
    mode: str = "auto"  # auto: bubblewrap when it can run | off
    network: str = "off"  # off | on (a host allowlist cannot be enforced honestly: not offered)
    writable: list[str] = field(default_factory=list)  # extra read-write paths besides the workspace
    auto_approve: bool = False  # sandboxed bash/watch commands run without approval


@dataclass
class EnvConfig:
    # variables passed to tool subprocesses besides the built-in allowlist (PATH, HOME, LANG, ...)
    passthrough: list[str] = field(default_factory=list)


@dataclass
class Config:
    api: ApiConfig = field(default_factory=ApiConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    models: dict[str, ModelAlias] = field(default_factory=dict)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    db_path: str = ""
    path: Path | None = None  # the file this config came from, if any

    def resolved_db_path(self) -> Path:
        return Path(self.db_path).expanduser() if self.db_path else data_dir() / "turnstone.db"

    def plans_dir(self) -> Path:
        """Where plan_agent keeps each session's plan: beside the database that holds the sessions
        (by default the platformdirs data dir), never in the project."""
        return self.resolved_db_path().parent / "plans"


_SECTIONS = {
    "api": ApiConfig,
    "model": ModelConfig,
    "tools": ToolsConfig,
    "mcp": McpConfig,
    "notify": NotifyConfig,
    "ui": UiConfig,
    "sandbox": SandboxConfig,
    "env": EnvConfig,
}


def _coerce(where: str, value: Any, default: Any, annotation: str) -> Any:
    """Check a TOML value against the field's type; raise ConfigError naming ``where``."""
    ann = annotation.replace(" ", "")
    if ann in ("int", "int|None") and isinstance(value, int) and not isinstance(value, bool):
        return value
    if ann in ("float", "float|None") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if ann in ("str", "str|None") and isinstance(value, str):
        return value
    if ann in ("bool", "bool|None") and isinstance(value, bool):
        return value
    if ann.startswith("list[str]") and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if ann.startswith("dict[") and isinstance(value, dict):
        return dict(value)
    expected = ann.replace("|None", "").replace("[str]", " of strings")
    raise ConfigError(f"{where}: expected {expected}, got {type(value).__name__} {value!r}")


def _fill(obj: Any, table: dict[str, Any], where: str) -> None:
    known = {f.name: f for f in fields(obj)}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
        f = known[key]
        setattr(obj, key, _coerce(f"{where}.{key}", value, getattr(obj, key), str(f.type)))


def _one_of(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def _validate(cfg: Config, src: str) -> None:
    if cfg.tools.search not in ("auto", "on", "off"):
        raise ConfigError(f"{src}: tools.search: must be auto, on or off, got {cfg.tools.search!r}")
    if cfg.tools.native_web_search not in ("auto", "on", "off"):
        raise ConfigError(
            f"{src}: tools.native_web_search: must be auto, on or off, got {cfg.tools.native_web_search!r}"
        )
    for where, tier in [("model", cfg.model.tool_search)] + [
        (f"models.{alias}", entry.tool_search) for alias, entry in cfg.models.items()
    ]:
        if tier not in ("", *TOOL_SEARCH_TIERS):
            raise ConfigError(f"{src}: {where}.tool_search: must be native, client or off, got {tier!r}")
    if cfg.sandbox.mode not in ("auto", "off"):
        raise ConfigError(f"{src}: sandbox.mode: must be auto or off, got {cfg.sandbox.mode!r}")
    if cfg.sandbox.network not in ("off", "on"):
        raise ConfigError(
            f'{src}: sandbox.network: must be "off" or "on" (per-host allowlists are not supported: '
            f"they cannot be enforced without a proxy), got {cfg.sandbox.network!r}"
        )
    from .providers.registry import PROVIDER_NAMES  # the table of providers (data only)

    if cfg.model.provider not in ("", *PROVIDER_NAMES):
        raise ConfigError(
            f"{src}: model.provider: must be {_one_of(PROVIDER_NAMES)}, got {cfg.model.provider!r}"
        )
    for key in (
        "timeout",
        "truncation",
        "max_parallel",
        "search_threshold",
        "search_max_results",
        "max_argument_chars",
        "max_argument_depth",
    ):
        if getattr(cfg.tools, key) <= 0:
            raise ConfigError(f"{src}: tools.{key}: must be positive")
    for key in ("stream_idle_timeout", "connect_timeout"):
        if getattr(cfg.model, key) <= 0:
            raise ConfigError(f"{src}: model.{key}: must be positive")
    if cfg.model.context_window <= 0:
        raise ConfigError(f"{src}: model.context_window: must be positive")
    levels = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    if cfg.mcp.log_level and cfg.mcp.log_level not in levels:
        raise ConfigError(
            f"{src}: mcp.log_level: must be one of {', '.join(levels)}, got {cfg.mcp.log_level!r}"
        )
    if cfg.mcp.first_turn_wait < 0:
        raise ConfigError(f"{src}: mcp.first_turn_wait: must be 0 or more seconds")


def parse_config(data: dict[str, Any], src: str = "config") -> Config:
    cfg = Config()
    for key, value in data.items():
        if key in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{src}: [{key}] must be a table")
            section = getattr(cfg, key)
            if key == "mcp":
                value = dict(value)
                servers = value.pop("servers", {})
                if not isinstance(servers, dict) or not all(isinstance(v, dict) for v in servers.values()):
                    raise ConfigError(f"{src}: mcp.servers: each server must be a table")
                section.servers = servers
            if key == "env":
                value = dict(value)
                if "pass" in value:  # `pass` is the documented key (a Python keyword, hence the field name)
                    value["passthrough"] = value.pop("pass")
            _fill(section, value, f"{src}: {key}")
        elif key == "models":
            if not isinstance(value, dict):
                raise ConfigError(f"{src}: [models] must be a table of aliases")
            for alias, table in value.items():
                if not isinstance(table, dict):
                    raise ConfigError(f"{src}: models.{alias}: must be a table")
                table = dict(table)
                caps = table.pop("capabilities", None)
                entry = ModelAlias()
                _fill(entry, table, f"{src}: models.{alias}")
                if isinstance(caps, dict) and "supports_vision" in caps:
                    entry.supports_vision = bool(caps["supports_vision"])
                cfg.models[alias] = entry
        elif key == "db_path":
            cfg.db_path = _coerce(f"{src}: db_path", value, "", "str")
        else:
            raise ConfigError(
                f"{src}: [{key}]: unknown section (known: {', '.join(sorted([*_SECTIONS, 'models']))})"
            )
    _validate(cfg, src)
    return cfg


def load_config(path: Path | None = None) -> Config:
    """Load the config file (missing file = defaults) and apply environment variables."""
    explicit = path is not None or "TURNSTONE_CONFIG" in os.environ
    path = path or default_config_path()
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    elif explicit:
        raise ConfigError(f"{path}: config file not found")
    cfg = parse_config(data, str(path))
    cfg.path = path if path.exists() else None
    apply_env(cfg)
    return cfg


def apply_env(cfg: Config) -> None:
    env = os.environ
    if env.get("OPENAI_BASE_URL") and not cfg.api.base_url:
        cfg.api.base_url = env["OPENAI_BASE_URL"]
    if not cfg.api.api_key:
        if cfg.model.provider == "anthropic" and env.get("ANTHROPIC_API_KEY"):
            cfg.api.api_key = env["ANTHROPIC_API_KEY"]
        elif env.get("OPENAI_API_KEY"):
            cfg.api.api_key = env["OPENAI_API_KEY"]
        elif env.get("ANTHROPIC_API_KEY"):
            cfg.api.api_key = env["ANTHROPIC_API_KEY"]
            if not cfg.model.provider:
                cfg.model.provider = "anthropic"
    if not cfg.api.tavily_key and env.get("TAVILY_API_KEY"):
        cfg.api.tavily_key = env["TAVILY_API_KEY"]
