"""Protections of the agent process itself and of the files it keeps secrets in.

- ``make_undumpable``: ``prctl(PR_SET_DUMPABLE, 0)``. The kernel then makes ``/proc/<agent>/environ``,
  ``cmdline`` aside, ``mem`` and ``maps`` owned by root and refuses ptrace: a child running as the same
  (non-root) user cannot read the agent's environment (its API keys) or memory. Root can still read
  them; outside the sandbox that is the limit of this protection.
- ``private_file``: create a file readable by its owner only (0600) before anything is written to it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:  # glibc's soname; find_library (it runs ldconfig -p) only where that is not it (musl)
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        pass
    from ctypes.util import find_library

    try:
        found = find_library("c")
        return ctypes.CDLL(found, use_errno=True) if found else None
    except OSError:
        return None


def make_undumpable() -> bool:
    """Mark this process non-dumpable; True when the kernel confirms it."""
    libc = _libc()
    if libc is None:
        return False
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return False
    return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


def private_file(path: Path) -> None:
    """Create ``path`` (and its directory) as owner-only, or tighten an existing file to 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)
