"""Tool processes die with the app, however the app dies (issue 15 item 7).

The real console script runs a scripted turn whose bash call starts `sleep 300` and a `setsid`'d
grandchild (which leaves the tool's process group and session). The app is then killed with SIGTERM,
SIGHUP, SIGINT or SIGKILL — headless, and the full-screen app in tmux (closing the terminal sends it
SIGHUP; unsandboxed, where no bubblewrap namespace catches them). No process of the call may survive. The processes are found by a unique marker the command
puts in their environment; teardown kills any that a failure left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import uuid
from pathlib import Path

import pytest

from tests.faults.harness import kill_marked, marked, model_args, new_mark, start, wait_until
from tests.helpers.model_server import ModelServerProcess, Reply, ScriptedModelServer
from turnstone_tui.sandbox import support

pytestmark = pytest.mark.timeout(180)

SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL]


def long_command(mark: str) -> str:
    # the shell's children inherit FAULT_MARK; the setsid'd one starts a session of its own
    return f"export FAULT_MARK={mark}; setsid sleep 301 > /dev/null 2>&1 & sleep 300"


def sandbox_args(mode: str) -> list[str]:
    if mode == "sandboxed":
        if not support().available:
            pytest.skip(f"the sandbox cannot run here: {support().reason}")
        return []
    return ["--no-sandbox"]


@pytest.mark.parametrize("mode", ["sandboxed", "unsandboxed"])
@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_headless_app_killed_leaves_no_tool_process(tmp_path: Path, sig: signal.Signals, mode: str) -> None:
    mark = new_mark()
    script = [Reply.tools([("bash", {"command": long_command(mark)}, "call_long")]), Reply.text("never")]
    with ScriptedModelServer(script) as server:
        args = [*model_args(server, tmp_path / "t.db"), *sandbox_args(mode), "--skip-permissions", "-p", "go"]
        app = start(args, tmp_path)
        try:
            wait_until(lambda: len(marked(mark)) >= 2, "sleep 300 and the setsid'd sleep 301 to run")
            assert app.poll() is None
            app.send_signal(sig)
            app.wait(60)
            survivors = _survivors(mark)
        finally:
            if app.poll() is None:
                app.kill()
                app.wait(10)
            leftovers = marked(mark)
            kill_marked(mark)
        assert survivors == [] and leftovers == []


def _survivors(mark: str) -> list[int]:
    try:
        wait_until(lambda: not marked(mark), "no survivors", limit=30)
    except AssertionError:
        pass
    return marked(mark)


@pytest.mark.tmux
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("how", ["terminal closed", "SIGKILL"])
def test_full_screen_app_killed_leaves_no_tool_process(tmp_path: Path, how: str) -> None:
    from tests.helpers.tmux_app import Tmux, start_app, write_scripted_config

    mark = new_mark()
    replies = [Reply.tools([("bash", {"command": long_command(mark)}, "call_long")]), Reply.text("never")]
    workdir = tmp_path / "project"
    workdir.mkdir()
    with ModelServerProcess(replies, tmp_path / "server") as server:
        config = write_scripted_config(tmp_path, server.openai_base_url)
        tmux = Tmux(f"turnstone-faults-{uuid.uuid4().hex[:8]}")
        start_app(tmux, workdir, tmp_path, config, "--skip-permissions", "--no-sandbox")
        try:
            tmux.wait_for(lambda s: "scripted-model" in s and "idle" in s, "the app to start", limit=60)
            tmux.keys("-l", "run the long job")
            tmux.wait_for(lambda s: "run the long job" in s, "the typed prompt")
            tmux.keys("Enter")
            wait_until(lambda: len(marked(mark)) >= 2, "sleep 300 and the setsid'd sleep 301 to run")
            pane_pid = tmux.pane_pid()
            if how == "SIGKILL":
                # env -i execs the app: the pane's process is the app itself
                os.kill(pane_pid, signal.SIGKILL)
            else:
                tmux.kill()  # the terminal goes away: the app gets SIGHUP
            survivors = _survivors(mark)
        finally:
            tmux.kill()
            leftovers = marked(mark)
            kill_marked(mark)
        assert survivors == [] and leftovers == []


def test_stdio_mcp_server_and_its_children_die_with_the_app(tmp_path: Path) -> None:
    import json
    import sys

    from tests.faults.cases import DEMO_SERVER

    mark = new_mark()
    # the server starts a setsid'd helper of its own, then serves
    wrapper = (
        f"export FAULT_MARK={mark}; setsid sleep 302 > /dev/null 2>&1 & exec {sys.executable} {DEMO_SERVER}"
    )
    mcp_config = tmp_path / "mcp.json"
    mcp_config.write_text(json.dumps({"mcpServers": {"demo": {"command": "sh", "args": ["-c", wrapper]}}}))
    script = [Reply.tools([("bash", {"command": "sleep 300"}, "call_long")]), Reply.text("never")]
    with ScriptedModelServer(script) as server:
        args = [*model_args(server, tmp_path / "t.db"), "--mcp-config", str(mcp_config)]
        app = start([*args, "--no-sandbox", "--skip-permissions", "-p", "go"], tmp_path)
        try:
            wait_until(lambda: len(marked(mark)) >= 2, "the MCP server and its helper to run")
            wait_until(lambda: server.model_requests(), "the turn to start")
            app.send_signal(signal.SIGKILL)
            app.wait(60)
            survivors = _survivors(mark)
        finally:
            if app.poll() is None:
                app.kill()
                app.wait(10)
            leftovers = marked(mark)
            kill_marked(mark)
        assert survivors == [] and leftovers == []
