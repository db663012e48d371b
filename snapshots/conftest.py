"""Fixtures shared by the snapshot tests: the scripted model server (the one the tests use) and a
frozen UI clock, so spinners and elapsed times are the same in every run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import model_server  # noqa: F401  (re-exported fixture)
from turnstone_tui.widgets import clock


@pytest.fixture(autouse=True)
def frozen_clock() -> Iterator[None]:
    clock.freeze(1000.0)
    yield
    clock.freeze(None)
