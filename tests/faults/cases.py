"""The fault cases: each drives the real `turnstone-tui` against the scripted model server with one
injected fault, then resumes the session and counts the stored messages.

A case returns an ``Outcome``: how many messages were committed (stored in SQLite) when the fault had
happened, how many of those are still there, unchanged and in order, after recovery, and whether the
session recovered: the app ended with a clear message (no traceback), and a ``--resume`` of the
session answered, its request to the model valid (every tool call answered exactly once).

Used by tests/faults/test_fault_suite.py (every case must recover and lose nothing) and by
bench/faults.py (the table: tried, recovered, lost).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.faults.harness import (
    BIN,
    cli_env,
    marked,
    model_args,
    new_mark,
    run,
    session_ids,
    start,
    stored_messages,
    wait_until,
)
from tests.helpers.model_server import Reply, ScriptedModelServer

ROOT = Path(__file__).resolve().parents[2]
DEMO_SERVER = ROOT / "tests" / "helpers" / "mcp_servers" / "demo_server.py"
RECOVERED = "RECOVERED-OK"

# Short timeouts so that stalls and hung servers are noticed within seconds.
FAULT_CONFIG = """\
[model]
retries = 1
retry_base_delay = 0.1
stream_idle_timeout = 3
connect_timeout = 5

[mcp]
connect_timeout = 4
first_turn_wait = 6
call_timeout = 20
"""


@dataclass
class Outcome:
    committed: int  # messages stored when the fault had happened
    present: int  # of those, still stored, unchanged and in order, after recovery
    recovered: bool
    detail: str = ""
    faults: int = 1  # faults injected in this case (a case may inject several, one after the other)

    @property
    def lost(self) -> int:
        return self.committed - self.present


@dataclass(frozen=True)
class Case:
    family: str
    name: str
    run: Callable[[Path], Outcome]

    @property
    def id(self) -> str:
        return f"{self.family}: {self.name}"


# --- shared steps ---------------------------------------------------------------------------


def config_file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "faults.toml"
    path.write_text(FAULT_CONFIG + extra)
    return path


def base(server: ScriptedModelServer, tmp_path: Path, db: Path | None = None) -> list[str]:
    return [*model_args(server, db or tmp_path / "t.db"), "--config", str(config_file(tmp_path))]


def clean_exit(done: Any) -> str:
    """'' when the run ended as a user expects (exit 0 or 1 with a message, no traceback), else why not."""
    if "Traceback" in (done.stderr or ""):
        return "traceback: " + done.stderr.strip().splitlines()[-1][:200]
    if done.returncode not in (0, 1):
        return f"exit code {done.returncode}"
    if done.returncode == 1 and not done.stderr.strip():
        return "exit 1 without a message"
    return ""


def calls_answered_once(body: dict[str, Any]) -> str:
    """'' when every tool call in the request has exactly one result and every result a call."""
    calls: list[str] = []
    results: list[str] = []
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            calls.append(call["id"])
        if message.get("role") == "tool":
            results.append(message.get("tool_call_id"))
    if sorted(calls) != sorted(results) or len(set(calls)) != len(calls):
        return f"calls {calls} vs results {results}"
    return ""


def resume_and_count(
    server: ScriptedModelServer, tmp_path: Path, before: list[Any], why: str = "", db: Path | None = None
) -> Outcome:
    """Resume the (last) session with a healthy model; compare the stored messages with ``before``."""
    db = db or tmp_path / "t.db"
    ids = session_ids(db)
    if not ids:
        return Outcome(len(before), 0, False, f"{why}; no session stored")
    server.rescript([Reply.text(f"{RECOVERED} after the fault")])
    asked = len(server.model_requests())
    done = run([*base(server, tmp_path, db), "--resume", ids[-1], "-p", "carry on"], tmp_path)
    after = stored_messages(db)
    present = sum(1 for i, row in enumerate(before) if i < len(after) and after[i] == row)
    problems = [p for p in (why, clean_exit(done)) if p]
    if done.returncode != 0 or RECOVERED not in done.stdout:
        problems.append(f"resume failed: {done.stderr.strip()[-300:]}")
    elif len(server.model_requests()) > asked:
        invalid = calls_answered_once(server.model_requests()[-1].body)
        if invalid:
            problems.append(f"resumed request invalid: {invalid}")
    return Outcome(len(before), present, not problems, "; ".join(problems))


def run_then_resume(
    tmp_path: Path, script: list[Reply], *flags: str, expect_exit: int | None = None
) -> Outcome:
    """One headless turn against ``script`` (the fault is in it), then resume and count."""
    with ScriptedModelServer(script) as server:
        done = run([*base(server, tmp_path), "--skip-permissions", *flags, "-p", "do the job"], tmp_path)
        why = clean_exit(done)
        if expect_exit is not None and done.returncode != expect_exit:
            why = why or f"exit {done.returncode}, expected {expect_exit}: {done.stderr.strip()[-200:]}"
        if not why and done.returncode == 0:
            invalid = calls_answered_once(server.model_requests()[-1].body)
            why = f"invalid request: {invalid}" if invalid else ""
        before = stored_messages(tmp_path / "t.db")
        return resume_and_count(server, tmp_path, before, why)


# --- provider faults ------------------------------------------------------------------------


def provider(status: int, then_ok: bool) -> Callable[[Path], Outcome]:
    def case(tmp_path: Path) -> Outcome:
        script = [Reply.error(status, f"injected {status}")]
        if then_ok:
            script.append(Reply.text("answered after the error"))
        else:
            script.append(Reply.error(status, f"injected {status} again"))
        return run_then_resume(tmp_path, script, expect_exit=0 if then_ok and status != 401 else 1)

    return case


def stalled(before_headers: bool, then_ok: bool) -> Callable[[Path], Outcome]:
    def case(tmp_path: Path) -> Outcome:
        script = [Reply.stall(30, before_headers=before_headers)]
        script.append(Reply.text("answered after the stall") if then_ok else Reply.stall(30))
        return run_then_resume(tmp_path, script, expect_exit=0 if then_ok else 1)

    return case


def cut_stream(tmp_path: Path) -> Outcome:
    return run_then_resume(tmp_path, [Reply.cut_after(3), Reply.text("answered after the cut")])


def garbage_sse(tmp_path: Path) -> Outcome:
    frames = ["data: {this is not json\n\n", "data: [1, 2, 3]\n\n", 'data: {"choices": "nope"}\n\n']
    return run_then_resume(tmp_path, [Reply.raw(frames), Reply.raw(frames)])


def error_in_stream(tmp_path: Path) -> Outcome:
    return run_then_resume(tmp_path, [Reply.error_in_stream(2, "overloaded"), Reply.text("answered")])


# --- kill -9 at points of a turn ------------------------------------------------------------


def killed(point: str) -> Callable[[Path], Outcome]:
    """Kill the app (SIGKILL) at ``point`` of a turn, then resume."""

    def case(tmp_path: Path) -> Outcome:
        mark = new_mark()
        slow = f"export FAULT_MARK={mark}; sleep 120"
        if point == "streaming the answer":
            script = [Reply.text("word " * 400, chunk_size=5, delay=0.05)]
        elif point == "running a tool":
            script = [Reply.tools([("bash", {"command": slow}, "slow")])]
        elif point == "between two calls of a batch":
            script = [
                Reply.tools(
                    [("bash", {"command": "echo first-done"}, "one"), ("bash", {"command": slow}, "two")]
                )
            ]
        else:  # "waiting for the model after the results"
            script = [Reply.tools([("bash", {"command": "echo result-stored"}, "one")]), Reply.stall(60)]
        db = tmp_path / "t.db"
        with ScriptedModelServer(script) as server:
            app = start([*base(server, tmp_path), "--skip-permissions", "-p", "do the job"], tmp_path)
            try:
                if point == "streaming the answer":
                    wait_until(lambda: server.model_requests(), "the model request")
                    wait_until(lambda: len(stored_messages(db)) >= 1, "the user message stored")
                    import time

                    time.sleep(1.0)  # mid-stream
                elif point == "running a tool":
                    wait_until(lambda: marked(mark), "the tool to run")
                elif point == "between two calls of a batch":
                    wait_until(lambda: marked(mark), "call two to run")
                    wait_until(
                        lambda: any(r[2] == "one" for r in stored_messages(db)), "call one's result stored"
                    )
                else:
                    wait_until(lambda: len(server.model_requests()) >= 2, "the second model request")
                alive = app.poll() is None
                os.kill(app.pid, signal.SIGKILL)
                app.wait(30)
            finally:
                if app.poll() is None:
                    app.kill()
                    app.wait(10)
            wait_until(lambda: not marked(mark), "the killed app's tool processes to go", limit=30)
            before = stored_messages(db)
            return resume_and_count(
                server, tmp_path, before, "" if alive else "the app ended before the kill"
            )

    return case


def killed_in_tmux(tmp_path: Path) -> Outcome:
    """The full-screen app in tmux, SIGKILLed while its approval modal waits for the user."""
    from tests.helpers.tmux_app import Tmux

    if shutil.which("tmux") is None:
        return Outcome(0, 0, False, "tmux is not installed")
    db = tmp_path / "t.db"
    work = tmp_path / "project"
    work.mkdir()
    script = [Reply.tools([("bash", {"command": "echo never-approved"}, "waiting")], text="Asking first.")]
    with ScriptedModelServer(script) as server:
        config = tmp_path / "app.toml"
        config.write_text(
            f'db_path = "{db}"\n[api]\nbase_url = "{server.openai_base_url}"\napi_key = "test-key"\n'
            + FAULT_CONFIG.replace("[model]\n", '[model]\nname = "scripted-model"\nprovider = "openai"\n')
        )
        env = {**cli_env(tmp_path), "TERM": "xterm-256color"}
        keep = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TERM", "PATH")
        tmux = Tmux(f"turnstone-fault-{new_mark()}")
        tmux.start(
            work, "env", "-i", *[f"{k}={env[k]}" for k in keep if k in env], str(BIN), "--config", str(config)
        )
        try:
            tmux.wait_for(lambda s: "scripted-model" in s and "idle" in s, "the app to start", limit=60)
            tmux.keys("-l", "run it")
            tmux.wait_for(lambda s: "run it" in s, "the typed prompt")
            tmux.keys("Enter")
            tmux.wait_for(lambda s: "echo never-approved" in s, "the approval modal", limit=60)
            wait_until(lambda: any(r[0] == "assistant" for r in stored_messages(db)), "the call stored")
            pane_pid = tmux.pane_pid()
            os.kill(pane_pid, signal.SIGKILL)
        finally:
            tmux.kill()
        before = stored_messages(db)
        outcome = resume_and_count(server, tmp_path, before, db=db)
        if outcome.recovered and "never-approved" in json.dumps(server.model_requests()[-1].body).replace(
            "echo never-approved", ""
        ):
            outcome.recovered, outcome.detail = False, "the call that was never approved ran"
        return outcome


# --- database faults ---------------------------------------------------------------------

DATABASE_FAULTS = ("a directory", "not SQLite", "truncated", "damaged")


def _spoil(db: Path, aside: Path, kind: str) -> None:
    if kind == "a directory":
        db.mkdir()
    elif kind == "not SQLite":
        db.write_text("my notes, not a database\n" * 40)
    elif kind == "truncated":
        db.write_bytes(aside.read_bytes()[:1500])
    else:  # damaged
        data = bytearray(aside.read_bytes())
        data[100:4096] = b"\xde\xad\xbe\xef" * ((4096 - 100) // 4)
        db.write_bytes(bytes(data))


def database(tmp_path: Path) -> Outcome:
    """A healthy session; then, one after the other, its database file is a directory, not SQLite,
    truncated, damaged (the real file moved aside): each run must refuse with one clear line, ask
    the model nothing and leave the bad file as it was. Then the real file is back and resumed."""
    db = tmp_path / "t.db"
    aside = tmp_path / "t.db.aside"
    with ScriptedModelServer([Reply.text("first answer")]) as server:
        first = run([*base(server, tmp_path), "-p", "remember this"], tmp_path)
        if first.returncode != 0:
            return Outcome(0, 0, False, f"setup failed: {first.stderr[-200:]}")
        before = stored_messages(db)
        (session_id,) = session_ids(db)
        shutil.move(db, aside)
        problems = []
        server.rescript([Reply.text("must not be asked")])
        for kind in DATABASE_FAULTS:
            _spoil(db, aside, kind)
            snapshot = None if db.is_dir() else db.read_bytes()
            asked = len(server.model_requests())
            faulty = run([*base(server, tmp_path), "--resume", session_id, "-p", "hello again"], tmp_path)
            lines = faulty.stderr.strip().splitlines()
            if faulty.returncode != 1 or len(lines) != 1 or "Traceback" in faulty.stderr:
                problems.append(
                    f"{kind}: not one clear line: exit {faulty.returncode}: {faulty.stderr[-200:]}"
                )
            if len(server.model_requests()) != asked:
                problems.append(f"{kind}: the model was asked with an unusable database")
            if snapshot is not None and db.read_bytes() != snapshot:
                problems.append(f"{kind}: the unusable file was written to")
            if db.is_dir():
                shutil.rmtree(db)
            else:
                db.unlink()
            for suffix in ("-wal", "-shm", "-journal"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
        shutil.move(aside, db)
        outcome = resume_and_count(server, tmp_path, before, "; ".join(problems))
        outcome.faults = len(DATABASE_FAULTS)
        return outcome


# --- MCP server faults ----------------------------------------------------------------------

MCP_FAULTS = {"crashes mid-call": "normal", "hangs at the handshake": "hang", "answers garbage": "garbage"}


def mcp(tmp_path: Path) -> Outcome:
    """Three stdio MCP servers in one session: one crashes during the model's call to it, one never
    answers the handshake, one prints garbage. Each call gets an error result; the turn goes on."""
    servers = {
        f"s{i}": {"command": sys.executable, "args": [str(DEMO_SERVER), "--mode", mode]}
        for i, mode in enumerate(MCP_FAULTS.values())
    }
    mcp_config = tmp_path / "mcp.json"
    mcp_config.write_text(json.dumps({"mcpServers": servers}))
    calls = [
        ("mcp__s0__crash", {}, "crash"),
        ("mcp__s1__echo", {"text": "hi"}, "hang"),
        ("mcp__s2__echo", {"text": "hi"}, "garbage"),
    ]
    script = [Reply.tools(calls), Reply.text("went on after the MCP faults")]
    outcome = run_then_resume(tmp_path, script, "--mcp-config", str(mcp_config), expect_exit=0)
    outcome.faults = len(MCP_FAULTS)
    return outcome


# --- hostile arguments ----------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_CALLS: list[tuple[str, Any, str]] = [
    ("bash", '{"command": "echo x", "timeout": 1' + "0" * 5000 + "}", "big_int"),  # 5000-digit integer
    ("bash", '{"command": ' + DEEP + "}", "deep"),  # JSON nested 100k deep
    ("read_file", '{"path": "\\ud800.txt"}', "surrogate"),  # a lone surrogate in a path
    ("bash", {"command": "echo one"}, "same"),  # two calls sharing one id
    ("bash", {"command": "echo two"}, "same"),
    ("bash", {"command": "echo a\x00b"}, "nul"),  # a NUL byte in a command
    ("bash", '{"command": "echo repaired",}', "comma"),  # broken JSON: trailing comma
    ("bash", '{"command": "echo brace"', "brace"),  # broken JSON: missing brace
]


def hostile(tmp_path: Path) -> Outcome:
    """One batch of hostile calls (and a lone surrogate in the assistant's text): each gets exactly
    one result, the session goes on and resumes."""
    script = [
        Reply.tools(HOSTILE_CALLS, text="a lone surrogate \ud800 in the text", chunk_size=8192),
        Reply.text("done with the hostile calls"),
    ]
    outcome = run_then_resume(tmp_path, script, expect_exit=0)
    outcome.faults = len(HOSTILE_CALLS)
    return outcome


CASES: list[Case] = [
    Case("provider", "429 then an answer", provider(429, True)),
    Case("provider", "500 then an answer", provider(500, True)),
    Case("provider", "500 every time", provider(500, False)),
    Case("provider", "401", provider(401, False)),
    Case("stream", "stall before headers, then an answer", stalled(True, True)),
    Case("stream", "headers then silence, twice", stalled(False, False)),
    Case("stream", "cut mid-stream", cut_stream),
    Case("stream", "garbage SSE", garbage_sse),
    Case("stream", "error event mid-stream", error_in_stream),
    Case("kill -9", "streaming the answer", killed("streaming the answer")),
    Case("kill -9", "running a tool", killed("running a tool")),
    Case("kill -9", "between two calls of a batch", killed("between two calls of a batch")),
    Case("kill -9", "waiting for the model after the results", killed("waiting for the model")),
    Case("kill -9", "the app in tmux, at its approval modal", killed_in_tmux),
    Case("database", ", ".join(DATABASE_FAULTS), database),
    Case("MCP", "a server that " + ", one that ".join(MCP_FAULTS), mcp),
    Case(
        "hostile arguments",
        "5000-digit integer, 100k-deep JSON, lone surrogates, duplicate ids, NUL, broken JSON",
        hostile,
    ),
]

__all__ = ["BIN", "CASES", "Case", "Outcome", "cli_env"]
