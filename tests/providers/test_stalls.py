"""Stalled model servers: a per-stream idle timeout, one retry, then a clear error; esc (cancel)
stops the wait at once. Real SDKs against the scripted model server, through a real session."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session

pytestmark = pytest.mark.timeout(120)
IDLE = 1.0


def stall_config(server: ScriptedModelServer, provider: str) -> Config:
    cfg = Config()
    cfg.model.provider = provider
    cfg.api.base_url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    cfg.api.api_key = "test-key"
    cfg.model.name = "test-model"
    cfg.model.retries = 3
    cfg.model.retry_base_delay = 0.01
    cfg.model.stream_idle_timeout = IDLE
    return cfg


async def run_turn(server: ScriptedModelServer, provider: str, tmp_path: Path) -> tuple[RecordingUI, float]:
    cfg = stall_config(server, provider)
    ui = RecordingUI()
    client = create_provider(cfg)
    session = build_session(cfg, client, ui, cwd=tmp_path)
    await session.start()
    started = time.monotonic()
    try:
        await session.send("hello?")
    finally:
        await session.aclose()
        await client.aclose()
    return ui, time.monotonic() - started


def test_default_idle_timeout_is_90_seconds() -> None:
    assert Config().model.stream_idle_timeout == 90.0
    assert Config().model.connect_timeout == 15.0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("before_headers", [True, False], ids=["no-answer", "headers-then-silence"])
async def test_a_stall_is_retried_once_then_a_clear_error(
    provider: str, before_headers: bool, tmp_path
) -> None:
    script = [Reply.stall(30, before_headers=before_headers) for _ in range(3)] + [Reply.text("late")]
    with ScriptedModelServer(script) as server:
        ui, elapsed = await run_turn(server, provider, tmp_path)
        attempts = len(server.model_requests())
    assert attempts == 2  # the first try and one retry, although retries = 3
    assert len(ui.errors) == 1
    assert "stalled: no data from" in ui.errors[0] and "gave up after 2 stalled attempts" in ui.errors[0]
    assert elapsed < 20  # 2 x the idle timeout, not 30 s per stall nor minutes


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_one_stall_then_an_answer_recovers(provider: str, tmp_path) -> None:
    with ScriptedModelServer([Reply.stall(30), Reply.text("here I am")]) as server:
        ui, _elapsed = await run_turn(server, provider, tmp_path)
    assert not ui.errors and ui.text == "here I am"


async def test_cancel_stops_a_stalled_stream_at_once(tmp_path) -> None:
    with ScriptedModelServer([Reply.stall(30)]) as server:
        cfg = stall_config(server, "openai")
        cfg.model.stream_idle_timeout = 60.0
        ui = RecordingUI()
        client = create_provider(cfg)
        session = build_session(cfg, client, ui, cwd=tmp_path)
        await session.start()
        turn = asyncio.create_task(session.send("hello?"))
        await asyncio.to_thread(server.wait_for_requests, 1, 30)
        await asyncio.sleep(0.2)
        started = time.monotonic()
        session.cancel()  # what esc does
        await asyncio.wait_for(turn, 10)
        assert time.monotonic() - started < 30  # esc, not the 60 s idle timeout
        assert "Turn cancelled." in ui.infos and not ui.errors
        await session.aclose()
        await client.aclose()
