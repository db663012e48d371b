"""Fixtures shared by the snapshot tests: the scripted model server (the one the tests use) and a
frozen UI clock, so spinners and elapsed times are the same in every run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import model_server, private_permission_rules, private_user_config  # noqa: F401  (re-exported fixtures)
from turnstone_tui.core import prompts
from turnstone_tui.widgets import clock


@pytest.fixture(autouse=True)
def frozen_clock() -> Iterator[None]:
    clock.freeze(1000.0)
    yield
    clock.freeze(None)


@pytest.fixture(autouse=True)
def fixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The system prompt's environment section names the working directory (a pytest tmp path whose
    length varies from run to run), the kernel release and today's date; its token count shows in the
    status bar. Snapshots see the same environment on every machine and every day."""

    def environment_section(cwd: object, model: str) -> str:
        return (
            "<environment>\nworking directory: /home/user/project\nplatform: Linux 6.1.0\n"
            f"date: 2026-01-01\nmodel: {model}\n</environment>"
        )

    monkeypatch.setattr(prompts, "environment_section", environment_section)
