"""One process owns a session at a time: an advisory lock file per session beside the database.

``flock`` locks vanish with their process, so a killed (even SIGKILLed) owner never leaves a stale
lock. The lock file says who holds it (pid, host, since when), so a second process can tell the
user. Within one process a session may be opened again (the lock is counted).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

_held: dict[str, list[int]] = {}  # lock path -> [fd, count]


class SessionInUseError(ValueError):
    """Another process has this session open."""


@dataclass
class SessionLock:
    path: str
    released: bool = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        entry = _held.get(self.path)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _held[self.path]
            try:
                fcntl.flock(entry[0], fcntl.LOCK_UN)
            finally:
                os.close(entry[0])


def lock_path(db_path: Path, session_id: str) -> Path:
    return Path(f"{db_path}.locks") / f"{session_id}.lock"


def acquire_session_lock(db_path: Path, session_id: str) -> SessionLock:
    """Lock ``session_id``; raises SessionInUseError naming the process that holds it."""
    path = lock_path(db_path, session_id)
    key = str(path)
    if key in _held:
        _held[key][1] += 1
        return SessionLock(key)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _describe_holder(fd)
        os.close(fd)
        raise SessionInUseError(
            f"session {session_id} is open in another turnstone-tui ({holder}); "
            "close it there first, or start a new session"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)
    _held[key] = [fd, 1]
    return SessionLock(key)


def _describe_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        since = time.strftime("%H:%M:%S", time.localtime(float(info["since"])))
        return f"pid {int(info['pid'])} on {info.get('host', '?')}, since {since}"
    except (ValueError, KeyError, TypeError, OSError):
        return "another process"


def held_elsewhere(db_path: Path, session_id: str) -> bool:
    """Is ``session_id`` open in another process (its lock taken by someone else)?"""
    path = lock_path(db_path, session_id)
    if str(path) in _held:
        return False  # this process holds it
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing our own descriptor drops the lock we may have taken
    return False


class WatchHostLock:
    """At most one process per database polls the watches of sessions no process has open
    (the "watch host"); the others poll only their own sessions' watches. Taken with
    ``try_acquire`` (non-blocking, again on every pass: the host may have exited)."""

    def __init__(self, db_path: Path | None) -> None:
        """``db_path`` None (an in-memory database): no other process can share it, always held."""
        self.path = Path(f"{db_path}.locks") / "watch-host.lock" if db_path is not None else None
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None or self.path is None

    def try_acquire(self) -> bool:
        if self.held:
            return True
        assert self.path is not None
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "since": time.time()}).encode(), 0)
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
