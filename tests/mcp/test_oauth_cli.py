"""``turnstone-tui mcp login NAME`` / ``mcp logout NAME`` as real processes against the OAuth test servers."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers.mcp_servers import OAuthServers

pytestmark = pytest.mark.timeout(120)

FOLLOW = Path(__file__).resolve().parents[1] / "helpers" / "follow_url.py"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"), **extra)
    return env


def _config(tmp_path: Path, servers: OAuthServers) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[mcp.servers.secure]\ntype = "http"\nurl = "{servers.url}"\n')
    return path


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "turnstone_tui.cli", "mcp", *args]


def test_cli_login_prints_the_url_and_waits_for_the_redirect(
    tmp_path: Path, oauth_servers: OAuthServers
) -> None:
    config = _config(tmp_path, oauth_servers)
    proc = subprocess.Popen(
        _cli("login", "secure", "--no-browser", "--config", str(config)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if line.strip().startswith(f"{oauth_servers.issuer}/authorize?"):
            break
    else:
        pytest.fail(f"no URL printed: {lines} {proc.stderr.read() if proc.stderr else ''}")
    assert lines[0].startswith("Open this URL in your browser")
    url = lines[-1].strip()
    assert httpx.get(url, follow_redirects=True, timeout=30).status_code == 200  # the "browser"
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    token_file = tmp_path / "data" / "turnstone" / "mcp-auth" / "secure.json"
    assert f"Logged in to MCP server 'secure' in the browser; the token is stored in {token_file}" in out
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    access = json.loads(token_file.read_text())["tokens"]["access_token"]
    assert access not in out + err + "".join(lines)

    logout = subprocess.run(
        _cli("logout", "secure", "--config", str(config)), capture_output=True, text=True, env=_env(tmp_path)
    )
    assert logout.returncode == 0
    assert logout.stdout.strip() == f"Logged out of MCP server 'secure': removed {token_file}"
    assert not token_file.exists()


def test_cli_login_opens_the_browser(tmp_path: Path, oauth_servers: OAuthServers) -> None:
    """$BROWSER names the stand-in browser: webbrowser runs it with the URL, it follows the redirect."""
    config = _config(tmp_path, oauth_servers)
    result = subprocess.run(
        _cli("login", "secure", "--config", str(config)),
        capture_output=True,
        text=True,
        timeout=90,
        env=_env(tmp_path, BROWSER=f"{sys.executable} {FOLLOW} %s"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Opened your browser; if it did not open, visit:")
    assert "Logged in to MCP server 'secure' in the browser" in result.stdout


def test_cli_login_unknown_and_stdio_servers(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[mcp.servers.local]\ncommand = "true"\n')
    for name, message in (
        ("nope", "no MCP server named 'nope' (configured: local)"),
        ("local", "does not log in"),
    ):
        result = subprocess.run(
            _cli("login", name, "--config", str(config)), capture_output=True, text=True, env=_env(tmp_path)
        )
        assert result.returncode == 2 and message in result.stderr, result.stderr


def test_headless_names_the_server_then_after_login_the_model_calls_its_tool(
    tmp_path: Path, oauth_servers: OAuthServers
) -> None:
    """Headless never opens a browser: it names the server that needs login. After
    `mcp login`, a headless run's model calls the protected tool through a real session, and the
    token is in neither the output nor the conversation database."""
    from tests.helpers.model_server import Reply, ScriptedModelServer

    config = _config(tmp_path, oauth_servers)
    db = tmp_path / "t.db"
    opened = tmp_path / "browser-was-opened"
    browser = f"sh -c 'touch {opened}' %s"  # where a browser could open, headless still opens none

    def run(server: ScriptedModelServer) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable, "-m", "turnstone_tui.cli", "--config", str(config),
                "--provider", "openai", "--base-url", server.openai_base_url, "--api-key", "k",
                "--model", "test-model", "--db", str(db), "--skip-permissions", "--tool-search", "off",
                "-p", "who am I on the secure server?",
            ],
            cwd=tmp_path, env=_env(tmp_path, DISPLAY=":0", BROWSER=browser), capture_output=True,
            text=True, timeout=100,
        )  # fmt: skip

    with ScriptedModelServer([Reply.text("No secure tools here.")]) as server:
        before = run(server)
        (request,) = server.model_requests()
    assert before.returncode == 0, before.stderr
    assert "MCP server secure needs login: the server answered 401 Unauthorized" in before.stderr
    assert "turnstone-tui mcp login secure" in before.stderr
    assert not opened.exists()
    assert not any(t["function"]["name"].startswith("mcp__secure__") for t in request.body["tools"])

    login = subprocess.Popen(
        _cli("login", "secure", "--no-browser", "--config", str(config)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    assert login.stdout is not None
    url = next(line.strip() for line in login.stdout if line.strip().startswith(oauth_servers.issuer))
    assert httpx.get(url, follow_redirects=True, timeout=30).status_code == 200
    login.communicate(timeout=60)
    assert login.returncode == 0

    script = [Reply.tools([("mcp__secure__whoami", {})]), Reply.text("You are the registered client.")]
    with ScriptedModelServer(script) as server:
        after = run(server)
        first, second = (r.body for r in server.model_requests())
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip() == "You are the registered client."
    assert "needs login" not in after.stderr
    assert "mcp__secure__whoami" in {t["function"]["name"] for t in first["tools"]}
    (result,) = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert result.startswith("protected hello to client-")

    token_file = tmp_path / "data" / "turnstone" / "mcp-auth" / "secure.json"
    tokens = json.loads(token_file.read_text())["tokens"]
    stored = db.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("t.db-*"))
    for secret in (tokens["access_token"], tokens["refresh_token"]):
        assert secret.encode() not in stored
        assert secret not in after.stdout + after.stderr
