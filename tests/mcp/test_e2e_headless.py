"""End to end: `turnstone-tui -p` (headless, scripted model) calls an MCP tool, reads a resource and
uses a prompt from a real stdio MCP server given with --mcp-config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.mcp_servers import DEMO
from tests.helpers.model_server import Reply, ScriptedModelServer

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.pop("TURNSTONE_CONFIG", None)
    env["HOME"] = str(tmp_path / "home")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "home" / ".config")
    env["XDG_DATA_HOME"] = str(tmp_path / "home" / ".local" / "share")
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_agent_uses_mcp_tool_resource_and_prompt(tmp_path: Path) -> None:
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps(
            {"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO), "--name", "demo"]}}}
        )
    )
    script = [
        Reply.tools(
            [
                ("mcp__demo__echo", {"text": "hello mcp"}),
                ("read_resource", {"uri": "docs://readme"}),
                ("use_prompt", {"name": "mcp__demo__greet", "arguments": {"name": "Ada"}}),
            ]
        ),
        Reply.text("All three worked."),
    ]
    with ScriptedModelServer(script) as server:
        proc = subprocess.run(
            [
                sys.executable, "-m", "turnstone_tui.cli",
                "--provider", "openai", "--base-url", server.openai_base_url, "--api-key", "k",
                "--model", "test-model", "--db", str(tmp_path / "t.db"),
                "--mcp-config", str(mcp_json), "--skip-permissions", "--tool-search", "off",
                "-p", "use the demo server",
            ],
            cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=100,
        )  # fmt: skip
        requests = server.model_requests()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "All three worked."
    first, second = (r.body for r in requests)

    names = {t["function"]["name"] for t in first["tools"]}
    assert {"mcp__demo__echo", "mcp__demo__add", "read_resource", "use_prompt"} <= names
    system = first["messages"][0]["content"]
    assert "<mcp-resources>" in system and "docs://readme  Project readme" in system
    assert "<mcp-prompts>" in system and "mcp__demo__greet(name)" in system

    results = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert sorted(results.values()) == sorted(
        ["echo: hello mcp", "# demo\nThe demo readme.", "[user]: Please greet Ada warmly."]
    )


def test_five_hundred_mcp_tools_go_through_tool_search(tmp_path: Path) -> None:
    """Above the threshold the MCP tools are deferred; the model finds one with tool_search and calls it."""
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "big": {
                        "command": sys.executable,
                        "args": [str(DEMO), "--name", "big", "--extra-tools", "500"],
                    }
                }
            }
        )
    )
    script = [
        Reply.tools([("tool_search", {"query": "tool_321"})]),
        Reply.tools([("mcp__big__tool_321", {"query": "found it"})]),
        Reply.text("Found and used."),
    ]
    with ScriptedModelServer(script) as server:
        proc = subprocess.run(
            [
                sys.executable, "-m", "turnstone_tui.cli",
                "--provider", "openai", "--base-url", server.openai_base_url, "--api-key", "k",
                "--model", "test-model", "--db", str(tmp_path / "t.db"),
                "--mcp-config", str(mcp_json), "--skip-permissions",
                "-p", "find tool 321",
            ],
            cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=100,
        )  # fmt: skip
        requests = server.model_requests()
    assert proc.returncode == 0, proc.stderr
    first, second, third = (r.body for r in requests)
    first_names = {t["function"]["name"] for t in first["tools"]}
    assert "tool_search" in first_names
    assert not any(n.startswith("mcp__big__") for n in first_names)
    assert "mcp__big__tool_321" in {t["function"]["name"] for t in second["tools"]}
    results = [m["content"] for m in third["messages"] if m["role"] == "tool"]
    assert results[-1] == "extra 321: found it"


def test_headless_declines_forms_refuses_sampling_and_names_the_server_that_needs_login(
    tmp_path: Path,
) -> None:
    """No one to ask: forms are declined, sampling refused, a 401 server is named on stderr; --root
    adds a root the server sees."""
    import threading
    from http.server import ThreadingHTTPServer

    from tests.helpers.mcp_servers import ASKING
    from tests.mcp.test_needs_login import _Unauthorized

    denied = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    threading.Thread(target=denied.serve_forever, daemon=True).start()
    extra = tmp_path / "extra"
    extra.mkdir()
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "asking": {"command": sys.executable, "args": [str(ASKING)]},
                    "tracker": {"type": "http", "url": f"http://127.0.0.1:{denied.server_address[1]}/mcp"},
                }
            }
        )
    )
    script = [
        Reply.tools(
            [
                ("mcp__asking__book_table", {}),
                ("mcp__asking__summarize", {"text": "long"}),
                ("mcp__asking__show_roots", {}),
            ]
        ),
        Reply.text("done"),
    ]
    try:
        with ScriptedModelServer(script) as server:
            proc = subprocess.run(
                [
                    sys.executable, "-m", "turnstone_tui.cli",
                    "--provider", "openai", "--base-url", server.openai_base_url, "--api-key", "k",
                    "--model", "test-model", "--db", str(tmp_path / "t.db"),
                    "--mcp-config", str(mcp_json), "--skip-permissions", "--tool-search", "off",
                    "--root", str(extra), "-p", "go",
                ],
                cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=100,
            )  # fmt: skip
            requests = server.model_requests()
    finally:
        denied.shutdown()
        denied.server_close()
    assert proc.returncode == 0, proc.stderr
    assert "MCP server tracker needs login: the server answered 401 Unauthorized" in proc.stderr
    results = [m["content"] for m in requests[1].body["messages"] if m["role"] == "tool"]
    assert results[0] == "booking decline"
    assert "sampling failed" in results[1] and "without an interactive user" in results[1]
    roots = results[2].splitlines()
    assert roots == [Path(os.path.realpath(tmp_path)).as_uri(), Path(os.path.realpath(extra)).as_uri()]


def test_headless_prints_mcp_progress_on_stderr_and_keeps_stdout_the_answer(tmp_path: Path) -> None:
    """A long MCP tool is seen to move: progress notifications are ``[progress]`` lines on stderr
    (server/tool, done/total, message); stdout holds the answer only."""
    from tests.helpers.mcp_servers import ASKING

    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps({"mcpServers": {"asking": {"command": sys.executable, "args": [str(ASKING)]}}})
    )
    script = [Reply.tools([("mcp__asking__steps", {"count": 3})]), Reply.text("all steps done")]
    with ScriptedModelServer(script) as server:
        proc = subprocess.run(
            [
                sys.executable, "-m", "turnstone_tui.cli",
                "--provider", "openai", "--base-url", server.openai_base_url, "--api-key", "k",
                "--model", "test-model", "--db", str(tmp_path / "t.db"),
                "--mcp-config", str(mcp_json), "--skip-permissions", "--tool-search", "off",
                "-p", "do the steps",
            ],
            cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=100,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "all steps done\n"
    progress = [line for line in proc.stderr.splitlines() if line.startswith("[progress]")]
    expected = [f"[progress] asking/steps {n}/3 step {n} of 3" for n in (1, 2, 3)]
    # lines of one call are at least 0.25 s apart (a chatty server is thinned), the first and last always shown
    assert progress[0] == expected[0] and progress[-1] == expected[-1]
    assert all(line in expected for line in progress) and progress == sorted(progress)
    assert proc.stderr.index("[progress] asking/steps 3/3") < proc.stderr.index("◀ mcp__asking__steps")
