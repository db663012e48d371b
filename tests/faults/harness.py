"""What the fault tests share: the real `turnstone-tui` console script as a user runs it, the stored
conversation read straight from SQLite, and processes found by a marker in their environment."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers.model_server import ScriptedModelServer

BIN = Path(sys.executable).parent / "turnstone-tui"
WAIT = 60.0  # generous: the machine is shared


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["HOME"] = str(tmp_path / "home")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "home" / ".config")
    env["XDG_DATA_HOME"] = str(tmp_path / "home" / ".local" / "share")
    env.pop("TURNSTONE_CONFIG", None)
    return env


def model_args(server: ScriptedModelServer, db: Path, provider: str = "openai") -> list[str]:
    url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return ["--provider", provider, "--base-url", url, "--api-key", "test-key", "--model", "test-model",
            "--db", str(db)]  # fmt: skip


def run(args: list[str], tmp_path: Path, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The console script to its end, output captured."""
    return subprocess.run(
        [str(BIN), *args],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _default_signals() -> None:
    # A process started in the background by a shell without job control (or under nohup) ignores
    # SIGINT, SIGQUIT (and SIGHUP), and its children inherit that across exec: the app would then
    # ignore the very signals these tests send. Start it as a terminal would, with the defaults.
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    """The console script in the background (its own session, so a test's signal reaches only it)."""
    return subprocess.Popen(
        [str(BIN), *args],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_signals,
    )


def wait_until(condition: Callable[[], Any], what: str, limit: float = WAIT) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {limit:.0f} s waiting for {what}")


def new_mark() -> str:
    return f"faultmark{uuid.uuid4().hex[:12]}"


def marked(mark: str) -> list[int]:
    """Live processes whose environment has ``FAULT_MARK=<mark>`` (zombies have none)."""
    needle = f"FAULT_MARK={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            data = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if needle in data.split(b"\0"):
            found.append(int(name))
    return found


def kill_marked(mark: str) -> None:
    """Teardown: whatever a failed test left behind."""
    for pid in marked(mark):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def stored_messages(db: Path) -> list[tuple[str, str | None, str | None]]:
    """(role, content, tool_call_id) of every stored message, in order."""
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("SELECT role, content, tool_call_id FROM messages ORDER BY id").fetchall()
    except sqlite3.Error:
        return []
    finally:
        con.close()


def session_ids(db: Path) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return [row[0] for row in con.execute("SELECT id FROM sessions ORDER BY rowid")]
    finally:
        con.close()
