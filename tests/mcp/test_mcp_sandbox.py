"""A stdio MCP server that opts in to the sandbox ("sandbox": true) runs inside bubblewrap: it cannot
write outside its working directory, cannot see the agent's process, has no network with
[sandbox] network = "off"; the same server without the option can. Where bubblewrap cannot run, a
server that asks for it is not started (it never runs unconfined by surprise)."""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from turnstone_tui.config import Config
from turnstone_tui.mcp.config import ServerConfig, load_server_configs
from turnstone_tui.mcp.manager import ServerState
from turnstone_tui.sandbox import SandboxPolicy, support

pytestmark = pytest.mark.timeout(90)

PROBE = Path(__file__).resolve().parent.parent / "helpers" / "mcp_servers" / "probe_server.py"
SUPPORT = support()
needs_bwrap = pytest.mark.skipif(not SUPPORT.available, reason=f"sandbox unavailable: {SUPPORT.reason}")


def probe(name: str, workdir: Path, *, sandbox: bool) -> ServerConfig:
    server = ServerConfig(name, "stdio", command=sys.executable, args=(str(PROBE),), cwd=str(workdir))
    return replace(server, sandbox=True, sandbox_policy=SandboxPolicy()) if sandbox else server


def test_the_option_is_read_from_the_config_with_the_sandbox_settings(tmp_path: Path) -> None:
    servers = {
        "boxed": {"command": "probe", "sandbox": True},
        "open": {"command": "probe"},
        "bad": {"command": "probe", "sandbox": "yes"},
    }
    mcp_file = tmp_path / "mcp.json"
    mcp_file.write_text(json.dumps({"mcpServers": servers}))
    cfg = Config()
    cfg.sandbox.network = "on"
    loaded = load_server_configs(cfg, str(mcp_file))
    policy = loaded["boxed"].sandbox_policy
    assert loaded["boxed"].sandbox and policy is not None
    assert replace(policy, hidden=()) == SandboxPolicy("auto", True)
    assert str(cfg.resolved_db_path()) in policy.hidden  # the secret stores are hidden from it too
    assert not loaded["open"].sandbox and loaded["open"].sandbox_policy is None
    assert "sandbox: expected true or false" in loaded["bad"].invalid


@needs_bwrap
async def test_a_sandboxed_stdio_server_is_confined(make_manager, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    manager = make_manager([probe("boxed", work, sandbox=True), probe("open", work, sandbox=False)])
    await manager.start()
    await manager.wait_ready(30)
    assert {s.name: s.state for s in manager.statuses()} == {
        "boxed": ServerState.CONNECTED,
        "open": ServerState.CONNECTED,
    }
    try:
        inside = await manager.call_tool("mcp__boxed__write", {"path": str(work / "in.txt")})
        assert inside.text == "written" and (work / "in.txt").exists()
        # /tmp is the sandbox's own: the write lands there, never on the host
        private = await manager.call_tool("mcp__boxed__write", {"path": str(outside)})
        assert private.text == "written" and not outside.exists()
        # the rest of the filesystem is read-only (the server's own directory, outside /tmp)
        beside = PROBE.parent / "written-by-the-sandboxed-probe.txt"
        refused = await manager.call_tool("mcp__boxed__write", {"path": str(beside)})
        assert refused.text == "refused: Read-only file system" and not beside.exists()
        hidden = await manager.call_tool("mcp__boxed__sees_pid", {"pid": os.getpid()})
        assert hidden.text == "invisible"
        offline = await manager.call_tool("mcp__boxed__connect", {"port": port})
        assert offline.text.startswith("no connection")
        # the same server without the option: the probes are real
        assert (await manager.call_tool("mcp__open__write", {"path": str(outside)})).text == "written"
        assert (await manager.call_tool("mcp__open__sees_pid", {"pid": os.getpid()})).text == "visible"
        assert (await manager.call_tool("mcp__open__connect", {"port": port})).text == "connected"
    finally:
        listener.close()


async def test_a_server_that_asks_for_an_unavailable_sandbox_is_not_started(
    make_manager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no bwrap on PATH
    from turnstone_tui.sandbox import bwrap

    bwrap.support.cache_clear()
    try:
        marker = tmp_path / "started.txt"
        script = tmp_path / "server.py"
        script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
        server = replace(
            ServerConfig("boxed", "stdio", command=sys.executable, args=(str(script),), cwd=str(tmp_path)),
            sandbox=True,
            sandbox_policy=SandboxPolicy(),
        )
        manager = make_manager([server], connect_timeout=10.0)
        await manager.start()
        await manager.wait_ready(20)
        status = manager.statuses()[0]
        assert status.state is ServerState.FAILED
        assert "sandbox it asks for cannot run" in (status.error or "")
        assert "bubblewrap is not installed" in (status.error or "")
        assert not marker.exists()
    finally:
        bwrap.support.cache_clear()
