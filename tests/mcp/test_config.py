"""MCP server configuration: TOML tables, the mcpServers JSON file, and the errors users see."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from turnstone_tui.config import Config, ConfigError, parse_config
from turnstone_tui.mcp.config import load_server_configs, parse_server
from turnstone_tui.mcp.manager import McpManager


def test_toml_stdio_and_http_servers() -> None:
    cfg = parse_config(
        {
            "mcp": {
                "servers": {
                    "github": {"command": "npx", "args": ["-y", "srv"], "env": {"GITHUB_TOKEN": "t"}},
                    "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"X-A": "1"}},
                }
            }
        }
    )
    servers = load_server_configs(cfg, None)
    assert servers["github"].transport == "stdio"
    assert servers["github"].args == ("-y", "srv")
    assert servers["github"].env == {"GITHUB_TOKEN": "t"}
    assert servers["github"].target == "npx -y srv"
    assert servers["remote"].transport == "http"
    assert servers["remote"].headers == {"X-A": "1"}


def test_json_file_adds_and_overrides(tmp_path: Path) -> None:
    cfg = parse_config({"mcp": {"servers": {"a": {"command": "old"}}}})
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {"mcpServers": {"a": {"command": "new", "args": ["x"]}, "b": {"url": "http://127.0.0.1:1/mcp"}}}
        )
    )
    servers = load_server_configs(cfg, str(path))
    assert servers["a"].command == "new"
    assert servers["b"].transport == "http"


def test_config_path_from_mcp_section(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"x": {"command": "srv"}}}))
    cfg = parse_config({"mcp": {"config_path": str(path)}})
    assert list(load_server_configs(cfg, None)) == ["x"]


def test_double_underscore_name_disables_only_that_server_json(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"a__b": {"command": "srv"}, "ok": {"command": "srv"}}}))
    servers = load_server_configs(Config(), str(path))
    assert "must not contain '__'" in servers["a__b"].invalid and "a__b" in servers["a__b"].invalid
    assert servers["ok"].invalid == ""
    manager = McpManager.from_config(Config(), str(path))
    assert manager.server_names == ["a__b", "ok"]


def test_double_underscore_name_disables_only_that_server_toml() -> None:
    cfg = Config()
    cfg.mcp.servers = {"a__b": {"command": "srv"}}
    assert "must not contain '__'" in load_server_configs(cfg, None)["a__b"].invalid


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"args": ["x"]}, "needs a command"),
        ({"type": "sse", "url": "http://x/sse"}, "SSE transport is not supported"),
        ({"type": "http", "url": "ftp://x"}, "http:// or https://"),
        ({"command": "x", "args": "not-a-list"}, "list of strings"),
        ({"command": "x", "bogus": 1}, "unknown key"),
        ({"command": "x", "protocol": "v9"}, "protocol"),
    ],
)
def test_bad_server_tables(table: dict, message: str) -> None:
    """A bad entry is an error naming the key, and disables only that server."""
    with pytest.raises(ConfigError, match=message):
        parse_server("s", table, "config: mcp.servers.s")
    cfg = Config()
    cfg.mcp.servers = {"s": table, "good": {"command": "x"}}
    servers = load_server_configs(cfg, None)
    assert re.search(message, servers["s"].invalid) and "mcp.servers.s" in servers["s"].invalid
    assert servers["good"].invalid == ""


def test_bad_json_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_server_configs(Config(), str(path))
    with pytest.raises(ConfigError, match="not found"):
        load_server_configs(Config(), str(tmp_path / "missing.json"))


def test_disabled_server_skipped(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"off": {"command": "x", "disabled": True}}}))
    assert load_server_configs(Config(), str(path)) == {}


def test_oauth_table_of_http_servers() -> None:
    from turnstone_tui.mcp.auth.settings import OAuthSettings

    base = {"type": "http", "url": "https://x/mcp"}
    plain = parse_server("r", base, "c")
    assert plain is not None and plain.oauth == OAuthSettings() and plain.uses_oauth
    off = parse_server("r", {**base, "oauth": False}, "c")
    assert off is not None and not off.uses_oauth
    with_header = parse_server("r", {**base, "headers": {"authorization": "Bearer t"}}, "c")
    assert with_header is not None and not with_header.uses_oauth
    table = {"client_id": "app", "client_secret": "s3cret", "scope": "read", "redirect_port": 8765}
    configured = parse_server("r", {**base, "oauth": table}, "c")
    assert configured is not None and configured.oauth.client_id == "app"
    assert configured.oauth.redirect_port == 8765 and "s3cret" not in repr(configured)
    for bad, message in (
        ({"grant": "password"}, "grant: must be one of"),
        ({"client_metadata_url": "http://x/client.json"}, "must be an https URL with a path"),
        ({"grant": "client_credentials", "client_id": "a"}, "needs client_id and client_secret"),
        ({"redirect_port": 70000}, "redirect_port"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "token_endpoint_auth_method"),
        ({"colour": "red"}, "unknown key"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_server("r", {**base, "oauth": bad}, "c")
    with pytest.raises(ConfigError, match="unknown key"):
        parse_server("s", {"command": "x", "oauth": {}}, "c")  # stdio servers do not log in
