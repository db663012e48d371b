"""Shared fixtures for every part's tests: the scripted model server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # make `tests.helpers` importable however pytest was started
    sys.path.insert(0, str(_ROOT))

from tests.helpers.model_server import ScriptedModelServer  # noqa: E402


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """A started scripted model server on 127.0.0.1; script it with ``model_server.script([...])``."""
    server = ScriptedModelServer().start()
    try:
        yield server
    finally:
        server.stop()
