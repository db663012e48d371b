"""The agent's side of process lifetime (see guardian.py): markers for child processes, the guardian.

- ``child_marker()``: the environment entry for one new child process (``TURNSTONE_TOOL_RUN``), unique
  per call, starting the guardian on first use. Blocking on first use (it starts a process): call it
  off the event loop, or ``await ensure_guardian_async()`` first; ``start_guardian_soon()`` starts it
  in a thread when a command is prepared, before the user approves it.
- ``kill_marked(marker, sig)``: signal every process that carries this call's marker (its ``setsid``
  descendants included).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

from .guardian import MARKER
from .guardian import kill_marked as _kill_marked

GUARDIAN_SCRIPT = Path(__file__).with_name("guardian.py")

_lock = threading.Lock()
_counter = itertools.count(1)
_token = ""
_guardian: subprocess.Popen[bytes] | None = None


def token() -> str:
    """This agent process's token (pid + random, so a reused pid never matches)."""
    global _token
    if not _token or not _token.startswith(f"{os.getpid()}-"):
        _token = f"{os.getpid()}-{secrets.token_hex(6)}"
    return _token


def guardian_running() -> bool:
    return _guardian is not None and _guardian.poll() is None


def ensure_guardian() -> None:
    """Start the guardian unless it runs (blocking: a fork and exec)."""
    global _guardian
    with _lock:
        if guardian_running():
            return
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
        try:
            _guardian = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARDIAN_SCRIPT), token()],
                stdin=subprocess.PIPE,  # our end stays open for our whole life: its EOF is our death
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # terminal signals and a kill of our process group miss it
                close_fds=True,
            )
        except OSError:
            _guardian = None  # processes still die on timeout/cancel; only the after-death net is missing


def start_guardian_soon() -> None:
    """Start the guardian in a thread of its own unless it runs, and return at once. Called when a
    command is prepared, so that the first batch the user approves does not start it first (a fork
    and exec of Python, 50-100 ms before the approved commands could start)."""
    if not guardian_running():
        threading.Thread(target=ensure_guardian, name="guardian-start", daemon=True).start()


async def ensure_guardian_async() -> None:
    if not guardian_running():
        await asyncio.to_thread(ensure_guardian)


def child_marker() -> dict[str, str]:
    """``{TURNSTONE_TOOL_RUN: "<token>.<n>."}`` for one new child process."""
    ensure_guardian()
    return {MARKER: f"{token()}.{next(_counter)}."}


def kill_marked(marker: dict[str, str], sig: int) -> int:
    """Signal the processes carrying ``marker`` (as returned by ``child_marker``); how many."""
    value = marker.get(MARKER, "")
    return _kill_marked(value, sig) if value else 0
