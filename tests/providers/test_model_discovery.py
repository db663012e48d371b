"""No model configured: the model an OpenAI-compatible server serves, when it serves exactly one.

Before, the app sent ``"model": ""`` (vLLM and Ollama refuse that; the hosted API says "you must
provide a model parameter") and its header read "no model" with no hint how to set one.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from tests.app.conftest import make_config
from tests.faults.harness import run
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.runtime import Runtime, RuntimeOptions

pytestmark = pytest.mark.timeout(180)


def chat_requests(server: ScriptedModelServer) -> list[dict]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


async def runtime_without_model(server: ScriptedModelServer, tmp_path: Path) -> Runtime:
    config = make_config(server, tmp_path)
    config.model.name = ""
    config.model.provider = ""
    options = RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False)
    return await Runtime.create(config, options=options)


async def test_the_only_model_a_server_offers_is_used(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    runtime = await runtime_without_model(model_server, tmp_path)
    try:
        assert runtime.provider.model == "scripted-model"
        assert "using scripted-model" in runtime.model_notice
    finally:
        await runtime.aclose()


async def test_several_models_are_named_and_none_is_guessed(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.served_models = [f"model-{n}" for n in range(12)]
    runtime = await runtime_without_model(model_server, tmp_path)
    try:
        assert runtime.provider.model == ""
        notice = runtime.model_notice
        assert "offers 12 (model-0, model-1" in notice and "model-7 …" in notice and "model-8" not in notice
        assert "/model NAME" in notice and "--model" in notice
    finally:
        await runtime.aclose()


async def test_a_server_that_is_down_is_said_and_start_up_goes_on(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ScriptedModelServer()  # never started: only its config is used
    config = make_config(server, tmp_path)
    config.api.base_url = f"http://127.0.0.1:{port}/v1"
    config.model.name = ""
    runtime = await asyncio.wait_for(
        Runtime.create(config, options=RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False)), 30
    )
    try:
        assert runtime.provider.model == ""
        assert f"127.0.0.1:{port}/v1/models could not be asked" in runtime.model_notice
    finally:
        await runtime.aclose()
    server.stop()


async def test_a_configured_model_is_never_replaced(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    config = make_config(model_server, tmp_path)
    runtime = await Runtime.create(
        config, options=RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False)
    )
    try:
        assert runtime.provider.model == "scripted-model" and runtime.model_notice == ""
        assert not [r for r in model_server.requests if r.path.endswith("/models")]
    finally:
        await runtime.aclose()


def test_headless_run_without_model_sends_the_served_one(tmp_path: Path) -> None:
    with ScriptedModelServer([Reply.text("hello from the only model")]) as server:
        server.served_models = ["qwen2.5-coder-7b"]
        args = ["--base-url", server.openai_base_url, "--api-key", "k", "--db", str(tmp_path / "t.db")]
        done = run([*args, "-p", "hi"], tmp_path)
        assert done.returncode == 0, done.stderr
        assert "hello from the only model" in done.stdout
        assert "using qwen2.5-coder-7b" in done.stderr
        assert [body["model"] for body in chat_requests(server)] == ["qwen2.5-coder-7b"]


async def test_the_app_shows_the_chosen_model_and_why(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    from tests.app.helpers import infos, send, start
    from turnstone_tui.app.app import TurnstoneApp
    from turnstone_tui.widgets.status_bar import StatusBar

    model_server.script([Reply.text("hi")])
    runtime = await runtime_without_model(model_server, tmp_path)
    try:
        app = TurnstoneApp(runtime, cwd=tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            await start(pilot)
            assert any("using scripted-model, the one the server offers" in text for text in infos(app))
            model_label = app.query_one(StatusBar).query_one("#status-model")
            assert str(model_label.render()) == "scripted-model · openai"
            await send(pilot, "hello")
            assert [body["model"] for body in chat_requests(model_server)] == ["scripted-model"]
    finally:
        await runtime.aclose()
