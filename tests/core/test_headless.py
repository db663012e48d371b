"""`turnstone-tui -p` as a user runs it: a real subprocess against the scripted model server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer

pytestmark = pytest.mark.timeout(120)


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["HOME"] = str(tmp_path / "home")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "home" / ".config")
    env["XDG_DATA_HOME"] = str(tmp_path / "home" / ".local" / "share")
    env.pop("TURNSTONE_CONFIG", None)
    return env


def run_cli(
    args: list[str], tmp_path: Path, *, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turnstone_tui.cli", *args],
        cwd=cwd or tmp_path,
        env=cli_env(tmp_path),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=90,
    )


def base_args(server: ScriptedModelServer, tmp_path: Path, provider: str) -> list[str]:
    url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return [
        "--provider",
        provider,
        "--base-url",
        url,
        "--api-key",
        "test-key",
        "--model",
        "test-model",
        "--db",
        str(tmp_path / "t.db"),
    ]


THREE_TURNS = [
    Reply.tools([("bash", {"command": "echo from-bash"}), ("read_file", {"path": "data.txt"})]),
    Reply.tools([("bash", {"command": "echo second-round"})]),
    Reply.text("All done: from-bash and second-round."),
]


def tool_results(body: dict, provider: str) -> list[str]:
    """The tool results a request carried, as text, in either wire protocol."""
    out: list[str] = []
    for m in body["messages"]:
        if provider == "openai" and m["role"] == "tool":
            out.append(m["content"])
        if provider == "anthropic" and isinstance(m.get("content"), list):
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    out.append(content if isinstance(content, str) else json.dumps(content))
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_three_turn_conversation_with_parallel_tools(provider: str, tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("the data file\n")
    with ScriptedModelServer(THREE_TURNS) as server:
        proc = run_cli(
            [*base_args(server, tmp_path, provider), "--allow", "bash", "-p", "do the thing"], tmp_path
        )
        requests = server.model_requests()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "All done: from-bash and second-round."
    assert "▶ bash: echo from-bash" in proc.stderr and "from-bash" in proc.stderr
    assert len(requests) == 3
    path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    assert all(r.path.endswith(path) for r in requests)
    first, second, third = (r.body for r in requests)
    # the tool schemas were sent, without turnstone's metadata keys
    tools = first["tools"]
    names = {t["function"]["name"] if provider == "openai" else t["name"] for t in tools}
    assert {"bash", "read_file", "edit_file"} <= names
    assert "auto_approve" not in json.dumps(tools) and "primary_key" not in json.dumps(tools)
    # both parallel results came back in the second request, the third carries all three
    results = tool_results(second, provider)
    assert len(results) == 2
    assert any("from-bash" in r for r in results) and any("the data file" in r for r in results)
    assert len(tool_results(third, provider)) == 3
    assert any("second-round" in r for r in tool_results(third, provider))


def test_tools_needing_approval_are_denied_without_allow(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with ScriptedModelServer(
        [Reply.tools([("bash", {"command": f"touch {marker}"})]), Reply.text("ok")]
    ) as s:
        proc = run_cli([*base_args(s, tmp_path, "openai"), "-p", "x"], tmp_path)
        second = s.model_requests()[1].body
    assert proc.returncode == 0 and not marker.exists()
    assert "denied" in proc.stderr
    assert "--skip-permissions" in tool_results(second, "openai")[0]


def test_allow_takes_a_permission_rule(tmp_path: Path) -> None:
    """--allow 'bash(echo:*)' runs echo, not a compound line with another command; a deny rule in the
    project file refuses what --allow would allow."""
    marker = tmp_path / "ran"
    (tmp_path / ".turnstone").mkdir()
    (tmp_path / ".turnstone" / "permissions.toml").write_text('deny = ["bash(echo secret:*)"]\n')
    calls = [
        ("bash", {"command": "echo allowed-by-rule"}, "c1"),
        ("bash", {"command": f"echo sneaky && touch {marker}"}, "c2"),
        ("bash", {"command": "echo secret stuff"}, "c3"),
    ]
    with ScriptedModelServer([Reply.tools(calls), Reply.text("ok")]) as s:
        proc = run_cli([*base_args(s, tmp_path, "openai"), "--allow", "bash(echo:*)", "-p", "x"], tmp_path)
        results = tool_results(s.model_requests()[1].body, "openai")
    assert proc.returncode == 0, proc.stderr
    assert "allowed-by-rule" in results[0]
    assert "--skip-permissions" in results[1] and not marker.exists()  # asked, and headless denies
    assert "denied by the rule bash(echo secret:*) (project scope)" in results[2]


def test_prompt_from_stdin(tmp_path: Path) -> None:
    with ScriptedModelServer([Reply.text("read it")]) as s:
        proc = run_cli([*base_args(s, tmp_path, "openai"), "-p", "-"], tmp_path, stdin="prompt via stdin\n")
        body = s.model_requests()[0].body
    assert proc.returncode == 0 and proc.stdout.strip() == "read it"
    assert body["messages"][-1]["content"].strip() == "prompt via stdin"


def test_provider_failure_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    with ScriptedModelServer([Reply.error(401, "bad key")]) as s:
        proc = run_cli([*base_args(s, tmp_path, "openai"), "-p", "x"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("turnstone-tui: error:")
    assert "Traceback" not in proc.stderr


def test_resume_continues_a_stored_session(tmp_path: Path) -> None:
    with ScriptedModelServer([Reply.text("first answer"), Reply.text("second answer")]) as s:
        first = run_cli([*base_args(s, tmp_path, "openai"), "-p", "remember 42"], tmp_path)
        session_id = first.stderr.split("session: ")[1].split()[0]
        second = run_cli(
            [*base_args(s, tmp_path, "openai"), "--resume", session_id, "-p", "what number?"], tmp_path
        )
        body = s.model_requests()[1].body
    assert second.returncode == 0, second.stderr
    contents = [m["content"] for m in body["messages"] if m["role"] != "system"]
    assert contents == ["remember 42", "first answer", "what number?"]


def test_resume_after_the_process_is_killed_mid_turn(tmp_path: Path) -> None:
    script = [Reply.tools([("bash", {"command": "sleep 60"})]), Reply.text("resumed fine")]
    with ScriptedModelServer(script) as s:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "turnstone_tui.cli",
                *base_args(s, tmp_path, "openai"),
                "--skip-permissions",
                "-p",
                "start a long job",
            ],
            cwd=tmp_path,
            env=cli_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(s.model_requests()) < 1:
            time.sleep(0.05)
        time.sleep(1.0)  # the bash call is running now
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        import sqlite3

        db = sqlite3.connect(tmp_path / "t.db")
        (session_id,) = db.execute("SELECT id FROM sessions").fetchone()
        db.close()
        resumed = run_cli(
            [*base_args(s, tmp_path, "openai"), "--resume", session_id, "-p", "continue"], tmp_path
        )
        body = s.model_requests()[-1].body
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "resumed fine"
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert "interrupted" in body["messages"][3]["content"]


EXIT_WITNESS = """
import atexit, sys
from turnstone_tui import cli

class TornDown:
    def __del__(self):
        sys.__stderr__.write("interpreter torn down\\n")

witness = TornDown()
atexit.register(lambda: print("exit handler ran"))
sys.argv = ["turnstone-tui", *sys.argv[1:]]
cli.entry()
"""


def test_the_console_script_exits_without_tearing_the_interpreter_down(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """After a clean run the process ends at once (module teardown after a model SDK costs about a
    second); exit handlers still run and everything printed arrives."""
    model_server.script([Reply.text("Answer before exit.")])
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_WITNESS, *base_args(model_server, tmp_path, "openai"), "-p", "hi"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Answer before exit.", "exit handler ran"]
    assert "session: " in proc.stderr and "interpreter torn down" not in proc.stderr


GC_WITNESS = """
import atexit, gc, json, sys
from turnstone_tui import cli

started_before_the_sdk = []


def on_gc(phase, info):
    if phase == "start":
        sdk = sys.modules.get("openai")
        started_before_the_sdk.append(sdk is None or not hasattr(sdk, "AsyncOpenAI"))


gc.callbacks.append(on_gc)
atexit.register(
    lambda: print(json.dumps({"before_sdk": sum(started_before_the_sdk), "on_at_exit": gc.isenabled()}))
)
sys.argv = ["turnstone-tui", *sys.argv[1:]]
cli.entry()
"""


def test_start_up_runs_no_garbage_collection_until_the_sdk_is_in(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """The modules loaded at start-up (ours, the SDK's thousands of classes) all stay alive: a
    ``-p`` run collects nothing while they load, and the collector is on again for the turn."""
    model_server.script([Reply.text("Collected later.")])
    proc = subprocess.run(
        [sys.executable, "-c", GC_WITNESS, *base_args(model_server, tmp_path, "openai"), "-p", "hi"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    answer, witness = proc.stdout.splitlines()
    assert answer == "Collected later."
    assert json.loads(witness) == {"before_sdk": 0, "on_at_exit": True}


def test_the_mcp_subcommands_run_with_the_collector_on(tmp_path: Path) -> None:
    """Only start-up runs without the cyclic GC: ``mcp list`` / ``mcp login`` (which may wait
    minutes for a browser) have it on."""
    servers = tmp_path / "mcp.json"
    servers.write_text('{"mcpServers": {}}')
    witness = GC_WITNESS.replace('sys.modules.get("openai")', "None")
    proc = subprocess.run(
        [sys.executable, "-c", witness, "mcp", "list", "--mcp-config", str(servers)],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert json.loads(proc.stdout.splitlines()[-1])["on_at_exit"] is True, proc.stdout + proc.stderr


TLS_WITNESS = """
import atexit, json, ssl, sys, threading
from turnstone_tui import cli

reads = []
real = ssl.SSLContext.load_verify_locations


def load_verify_locations(self, *args, **kwargs):
    sdk = sys.modules.get("openai")
    reads.append([threading.current_thread().name, sdk is not None and hasattr(sdk, "AsyncOpenAI")])
    return real(self, *args, **kwargs)


ssl.SSLContext.load_verify_locations = load_verify_locations
atexit.register(lambda: print(json.dumps(reads)))
sys.argv = ["turnstone-tui", *sys.argv[1:]]
cli.entry()
"""


def test_the_clients_ca_bundle_is_read_while_the_sdk_imports(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """The HTTP client's TLS context (the system's CA bundle) is built in a thread of its own as
    the SDK starts to import, not by the provider's build after it (on the way to the request)."""
    model_server.script([Reply.text("Read early.")])
    proc = subprocess.run(
        [sys.executable, "-c", TLS_WITNESS, *base_args(model_server, tmp_path, "openai"), "-p", "hi"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    answer, witness = proc.stdout.splitlines()
    assert answer == "Read early."
    # read once, by the thread started just before the SDK's import (not by the provider's build)
    assert [thread for thread, _sdk_in in json.loads(witness)] == ["tls-context"]


def test_a_run_without_commands_never_starts_the_sandbox(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """The sandbox probe (a bwrap run) feeds only the app's status bar: a ``-p`` run leaves it to
    the first command, and one that runs none never starts bwrap."""
    shims = tmp_path / "shims"
    shims.mkdir()
    calls = tmp_path / "bwrap-calls"
    shim = shims / "bwrap"
    shim.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    shim.chmod(0o755)
    model_server.script([Reply.text("No commands today.")])
    env = {**cli_env(tmp_path), "PATH": f"{shims}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [sys.executable, "-m", "turnstone_tui.cli", *base_args(model_server, tmp_path, "openai"), "-p", "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "No commands today."
    assert not calls.exists(), calls.read_text()


def test_continue_resumes_the_latest_conversation_of_this_directory(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """`-c` picks the newest conversation started in the working directory, not another folder's."""
    here, elsewhere, empty = tmp_path / "here", tmp_path / "elsewhere", tmp_path / "empty"
    for folder in (here, elsewhere, empty):
        folder.mkdir()
    model_server.script(
        [
            Reply.text("old answer"),
            Reply.text("newer answer"),
            Reply.text("other folder"),
            Reply.text("continued"),
        ]
    )
    args = base_args(model_server, tmp_path, "openai")
    for prompt, cwd in (("first here", here), ("second here", here), ("over there", elsewhere)):
        assert run_cli(["-p", prompt, *args], tmp_path, cwd=cwd).returncode == 0

    result = run_cli(["-p", "and now?", "-c", *args], tmp_path, cwd=here)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "continued"
    sent = [m["content"] for m in model_server.model_requests()[-1].body["messages"] if m["role"] != "system"]
    assert sent == ["second here", "newer answer", "and now?"]

    result = run_cli(["-p", "hi", "--continue", *args], tmp_path, cwd=empty)
    assert result.returncode == 1
    assert "no earlier conversation in" in result.stderr and str(empty) in result.stderr
    result = run_cli(["-p", "hi", "-c", "--resume", "abc", *args], tmp_path, cwd=here)
    assert result.returncode == 2 and "give one of them" in result.stderr
