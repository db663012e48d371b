"""Debug mode's loop watchdog: every callback or coroutine step that holds the event loop for
longer than a threshold (100 ms) is reported with the coroutine it ran.

It builds on asyncio's own debug mode (``slow_callback_duration``), which times each step of
every task; this module turns those records into one-line reports for a front end or a log.
Enabled by ``TURNSTONE_DEBUG=1`` (see cli.py); costs nothing when off.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable

STALL_THRESHOLD = 0.1  # seconds
_SLOW = re.compile(r"^Executing (?P<what>.*) took (?P<seconds>[0-9.]+) seconds$", re.S)
_CORO = re.compile(r"coro=<(?P<coro>[^>]*)>")


def describe_stall(message: str) -> str | None:
    """``"loop stall: 0.250 s in hog() running at x.py:12"`` from asyncio's slow-callback record."""
    match = _SLOW.match(message)
    if match is None:
        return None
    what = match["what"]
    coro = _CORO.search(what)
    where = coro["coro"] if coro else " ".join(what.split())[:200]
    return f"loop stall: {float(match['seconds']):.3f} s in {where}"


class _StallHandler(logging.Handler):
    def __init__(self, report: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self._report = report

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = describe_stall(record.getMessage())
            if text is not None:
                self._report(text)
        except Exception:  # a report must never break the loop it watches
            self.handleError(record)


def enable_stall_reports(
    loop: asyncio.AbstractEventLoop,
    report: Callable[[str], None],
    threshold: float = STALL_THRESHOLD,
) -> Callable[[], None]:
    """Switch ``loop`` to debug mode and report stalls over ``threshold``; returns an undo."""
    loop.set_debug(True)
    loop.slow_callback_duration = threshold
    handler = _StallHandler(report)
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)

    def disable() -> None:
        logger.removeHandler(handler)

    return disable
