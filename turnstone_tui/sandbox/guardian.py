"""The process guardian: every tool process dies with the agent, however the agent dies.

Every child the agent starts (bash, math, man, search, watch commands, stdio MCP servers) carries a
marker in its environment, ``TURNSTONE_TOOL_RUN=<agent token>.<n>``, and its children inherit it —
also those that called ``setsid`` and left the tool's process group. Two things use the marker:

- on a timeout or a cancellation the agent kills the call's marked processes as well as its process
  group (``kill_marked`` with the call's own marker), so a ``setsid`` grandchild does not survive;
- a guardian process (this file run as a script, one per agent process, in its own session) holds
  the read end of a pipe whose write end only the agent holds. When the agent exits by any means —
  a normal exit, SIGTERM, SIGHUP, SIGINT, or SIGKILL, which no handler can catch — the pipe reaches
  end of file and the guardian SIGKILLs every process carrying the agent's token, then exits.

The bubblewrap sandbox adds its own net (``--die-with-parent`` and the PID namespace); the guardian
covers the unsandboxed path and the stdio MCP servers. A process that rewrites its environment
(``env -i``) drops the marker: outside the sandbox that is the limit of this protection.

Run as a script by path (``python -I -S guardian.py TOKEN``): it imports nothing from turnstone_tui.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

MARKER = "TURNSTONE_TOOL_RUN"
KILL_ROUNDS = 8  # a process may fork while we kill: scan again until nothing is left
ROUND_PAUSE = 0.05


def marked_pids(prefix: str) -> list[int]:
    """Processes whose environment holds ``TURNSTONE_TOOL_RUN=<prefix>...`` (zombies have none)."""
    needle = f"{MARKER}={prefix}".encode()
    me = os.getpid()
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                data = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in data and any(entry.startswith(needle) for entry in data.split(b"\0")):
            found.append(int(name))
    return found


def kill_marked(prefix: str, sig: int = signal.SIGKILL, rounds: int = KILL_ROUNDS) -> int:
    """Signal every process marked with ``prefix``, again while new ones appear; how many were signalled."""
    signalled: set[int] = set()
    for _ in range(rounds):
        pids = [pid for pid in marked_pids(prefix) if sig == signal.SIGKILL or pid not in signalled]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
            signalled.add(pid)
        if sig != signal.SIGKILL:
            break  # a polite signal goes once; the caller follows up with SIGKILL
        time.sleep(ROUND_PAUSE)
    return len(signalled)


class _Stop(Exception):
    pass


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1]:
        sys.stderr.write("usage: guardian.py TOKEN  (stdin: a pipe the agent holds open)\n")
        return 2
    token = sys.argv[1]
    # Terminal signals are not ours (we run in our own session); SIGTERM means "clean up now".
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)

    def on_term(_sig: int, _frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, on_term)
    with contextlib.suppress(_Stop, OSError):
        while os.read(0, 4096):
            pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_marked(f"{token}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
