"""The full-screen app owns the terminal: log records never go to stderr, where they would be drawn
over the screen; they go to a private, bounded file."""

from __future__ import annotations

import io
import logging
import logging.handlers
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from turnstone_tui.cli import APP_LOG_BYTES, route_logs_to_file


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    yield root
    for handler in list(root.handlers):
        root.removeHandler(handler)
        if handler not in saved[0]:
            handler.close()
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])


def test_records_go_to_a_private_file_not_the_terminal(root_logger: logging.Logger, tmp_path: Path) -> None:
    terminal = io.StringIO()
    for handler in list(root_logger.handlers):
        root_logger.removeHandler(handler)
    root_logger.addHandler(logging.StreamHandler(terminal))  # what logging.basicConfig set up
    root_logger.setLevel(logging.WARNING)

    path = route_logs_to_file(tmp_path / "state" / "log" / "turnstone-tui.log")
    logging.getLogger("some.library").warning("connection pool is full, discarding connection")

    assert terminal.getvalue() == ""
    assert path is not None
    assert "connection pool is full" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    handlers = [h for h in root_logger.handlers if isinstance(h, logging.handlers.RotatingFileHandler)]
    assert handlers and handlers[0].maxBytes == APP_LOG_BYTES  # bounded


def test_an_unwritable_log_dir_drops_records_quietly(root_logger: logging.Logger, tmp_path: Path) -> None:
    terminal = io.StringIO()
    for handler in list(root_logger.handlers):
        root_logger.removeHandler(handler)
    root_logger.addHandler(logging.StreamHandler(terminal))
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the log dir should be")

    assert route_logs_to_file(blocker / "log" / "turnstone-tui.log") is None
    logging.getLogger("some.library").warning("still not on the screen")
    assert terminal.getvalue() == ""
