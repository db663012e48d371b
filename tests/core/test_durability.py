"""Write-ahead durability: each tool result is stored the moment its call finishes, so a process
killed (SIGKILL) during call 2 keeps call 1's result, and the resumed model is told that only call 2
was interrupted. The real CLI, a real kill -9, the real database."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.test_headless import base_args, cli_env, run_cli
from tests.helpers.model_server import Reply, ScriptedModelServer

pytestmark = pytest.mark.timeout(180)


def _stored_tool_results(db_path: Path) -> list[tuple[str, str]]:
    if not db_path.exists():
        return []
    try:
        db = sqlite3.connect(db_path, timeout=5)
        try:
            return db.execute("SELECT tool_call_id, content FROM messages WHERE role = 'tool'").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return []


def test_kill_during_call_two_keeps_call_one(tmp_path: Path) -> None:
    marker = tmp_path / "side-effect.txt"
    script = [
        Reply.tools(
            [
                ("bash", {"command": f"echo done > {marker} && echo first-call-finished"}, "call_one"),
                ("bash", {"command": "sleep 120"}, "call_two"),
            ]
        ),
        Reply.text("resumed fine"),
    ]
    db_path = tmp_path / "t.db"
    with ScriptedModelServer(script) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "turnstone_tui.cli",
                *base_args(server, tmp_path, "openai"),
                "--skip-permissions",
                "-p",
                "two jobs",
            ],
            cwd=tmp_path,
            env=cli_env(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not _stored_tool_results(db_path):
                time.sleep(0.1)
            assert proc.poll() is None, "the process ended before it could be killed"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        stored = _stored_tool_results(db_path)
        assert stored == [("call_one", "first-call-finished\n")] or (
            len(stored) == 1 and stored[0][0] == "call_one" and "first-call-finished" in stored[0][1]
        ), stored
        assert marker.exists()
        db = sqlite3.connect(db_path)
        (session_id,) = db.execute("SELECT id FROM sessions").fetchone()
        db.close()
        resumed = run_cli(
            [*base_args(server, tmp_path, "openai"), "--resume", session_id, "-p", "go on"], tmp_path
        )
        body = server.model_requests()[-1].body
    assert resumed.returncode == 0, resumed.stderr
    results = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    assert "first-call-finished" in results["call_one"] and "interrupted" not in results["call_one"]
    assert "interrupted" in results["call_two"]


def test_a_second_resume_is_refused_naming_the_owner(tmp_path: Path) -> None:
    db_path = tmp_path / "t.db"
    with ScriptedModelServer([Reply.tools([("bash", {"command": "sleep 120"}, "long")])]) as server:
        owner = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "turnstone_tui.cli",
                *base_args(server, tmp_path, "openai"),
                "--skip-permissions",
                "-p",
                "hold it",
            ],
            cwd=tmp_path,
            env=cli_env(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(server.model_requests()) < 1:
                time.sleep(0.1)
            db = sqlite3.connect(db_path, timeout=5)
            (session_id,) = db.execute("SELECT id FROM sessions").fetchone()
            db.close()
            second = run_cli(
                [*base_args(server, tmp_path, "openai"), "--resume", session_id, "-p", "x"], tmp_path
            )
            assert second.returncode == 1
            assert f"session {session_id} is open in another turnstone-tui (pid {owner.pid}" in second.stderr
            assert len(server.model_requests()) == 1  # the second process asked nothing
        finally:
            os.killpg(owner.pid, signal.SIGKILL)
            owner.wait(10)
        # the owner died (kill -9): its lock went with it
        server.script([Reply.text("after the owner died")])
        third = run_cli([*base_args(server, tmp_path, "openai"), "--resume", session_id, "-p", "y"], tmp_path)
    assert third.returncode == 0, third.stderr
    assert third.stdout.strip() == "after the owner died"
