"""How asyncio learns that a child process ended: a pidfd on the event loop, not a thread per child.

Python 3.11's asyncio waits for each subprocess with a thread of its own (``ThreadedChildWatcher``:
``waitpid`` in a new thread, started by ``create_subprocess_exec``). Starting that thread waits
until it runs, on the event loop, between the fork and the command's next neighbour: in traces of
four sandboxed commands approved together (``bench/terminal_parallel_tools.py``) that was ~0.5-2 ms
per command on a loaded machine, the four started one after the other; and each ending is then
handed from that thread to the loop. Python 3.12 waits on a pidfd where the kernel has them (a file
descriptor that becomes readable when the process ends, watched by the loop like a pipe): no thread.
:func:`install` gives 3.11 the same (:class:`PidfdWatcher`); on 3.12 and later it does nothing.

Each child is still waited for by its own pid, as before (no other process's status is reaped); a
pidfd that cannot be opened (no pidfd in the kernel, out of descriptors) falls back to the thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_installed = False


if sys.version_info < (3, 12):  # (3.14 has no child watchers: 3.12 waits on pidfds itself)

    class PidfdWatcher(asyncio.AbstractChildWatcher):
        """Waits for each child on the running loop through its pidfd (one loop or many: the loop that
        starts the child is the one that sees it end); a thread when no pidfd can be opened."""

        def __init__(self) -> None:
            self._fallback = asyncio.ThreadedChildWatcher()

        def __enter__(self) -> PidfdWatcher:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def is_active(self) -> bool:
            return True

        def close(self) -> None:
            self._fallback.close()

        def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
            return None

        def add_child_handler(self, pid: int, callback: Callable[..., Any], *args: Any) -> None:
            loop = asyncio.get_running_loop()
            add_reader = getattr(loop, "_add_reader", None)
            try:
                if add_reader is None:
                    raise OSError("the event loop cannot watch a descriptor")
                pidfd = os.pidfd_open(pid)
            except OSError:
                self._fallback.add_child_handler(pid, callback, *args)
                return
            add_reader(pidfd, self._ended, loop, pid, pidfd, callback, args)

        def _ended(
            self,
            loop: asyncio.AbstractEventLoop,
            pid: int,
            pidfd: int,
            callback: Callable[..., Any],
            args: tuple[Any, ...],
        ) -> None:
            loop._remove_reader(pidfd)  # type: ignore[attr-defined]
            try:
                _, status = os.waitpid(pid, 0)
                returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped elsewhere: asyncio's own watchers say 255 too
                log.warning("the exit status of child process %d was already read", pid)
                returncode = 255
            finally:
                os.close(pidfd)
            callback(pid, returncode, *args)

        def remove_child_handler(self, pid: int) -> bool:
            return True  # (asyncio never calls it)


def install() -> None:
    """Make asyncio wait for children through pidfds (Python 3.11 on a kernel with pidfd_open);
    once per process, before or after children were started (a child started before keeps its
    thread). Nothing on other versions and systems."""
    global _installed
    if _installed:
        return
    _installed = True
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # (a kernel before 5.3, or a seccomp filter refusing it)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_child_watcher(PidfdWatcher())
