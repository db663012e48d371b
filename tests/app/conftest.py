"""Fixtures for the app tests: a real Runtime (storage in tmp_path) talking to the scripted model server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.helpers.model_server import ScriptedModelServer
from tests.helpers.scripted_config import scripted_config
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.config import Config, ModelAlias
from turnstone_tui.runtime import Runtime, RuntimeOptions
from turnstone_tui.widgets import clock

APP_SIZE = (100, 30)


def make_config(server: ScriptedModelServer, tmp_path: Path) -> Config:
    config = scripted_config(server.openai_base_url, tmp_path / "turnstone.db")
    config.models["fast"] = ModelAlias(
        name="scripted-fast", provider="openai", base_url=server.openai_base_url, api_key="test-key"
    )
    return config


async def make_runtime(server: ScriptedModelServer, tmp_path: Path) -> Runtime:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    options = RuntimeOptions(cwd=workdir, start_mcp=False, start_watches=False)
    return await Runtime.create(make_config(server, tmp_path), options=options)


@pytest.fixture
def frozen_clock() -> Iterator[None]:
    """The UI clock frozen (spinners and elapsed times fixed); not autouse: other tests here need real time."""
    clock.freeze(1000.0)
    yield
    clock.freeze(None)


@pytest.fixture
async def runtime(model_server: ScriptedModelServer, tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = await make_runtime(model_server, tmp_path)
    try:
        yield rt
    finally:
        await rt.aclose()


@pytest.fixture
def app(runtime: Runtime, frozen_clock: None) -> TurnstoneApp:
    return TurnstoneApp(runtime, cwd=runtime.options.cwd)
