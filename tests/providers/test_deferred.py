"""The app's provider built in a thread (DeferredProvider): real SDKs against the scripted server."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.core.provider import ContentDelta, ModelRequest, ProviderError, StreamDone
from turnstone_tui.providers import registry
from turnstone_tui.providers.anthropic_provider import AnthropicProvider
from turnstone_tui.providers.deferred import DeferredProvider, deferred_provider
from turnstone_tui.runtime import Runtime, RuntimeOptions

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_deferred_provider_streams_through_the_real_sdk_once_built(
    model_server: ScriptedModelServer, protocol: str
) -> None:
    model_server.script([Reply.text("built in a thread")])
    config = model_server.config(protocol)
    provider = deferred_provider(config, protocol)
    assert isinstance(provider, DeferredProvider)
    assert provider.name == protocol and provider.model == config.model.name
    try:
        events = [
            e async for e in provider.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        ]
        assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "built in a thread"
        assert isinstance(events[-1], StreamDone)
        real = await provider.ready()
        assert real.name == protocol and provider.built is real
        if protocol == "anthropic":
            assert isinstance(real, AnthropicProvider)
            assert provider.native_web_search == real.native_web_search  # forwarded once built
            assert provider.native_tool_search == real.native_tool_search
    finally:
        await provider.aclose()


def test_the_local_provider_is_not_deferred(model_server: ScriptedModelServer) -> None:
    assert deferred_provider(model_server.config(), "local") is None


async def test_a_provider_that_cannot_be_built_fails_the_first_request_with_a_clear_error(
    model_server: ScriptedModelServer, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = dataclasses.replace(registry.PROVIDERS["openai"], module="no_such_provider_module")
    monkeypatch.setitem(registry.PROVIDERS, "openai", broken)
    config = model_server.config()
    config.db_path = str(tmp_path / "t.db")
    runtime = await Runtime.create(
        config,
        options=RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False, defer_provider=True),
    )
    try:
        with pytest.raises(ProviderError, match="could not be set up"):
            await runtime.provider.ready()  # type: ignore[attr-defined]
        ui = RecordingUI()
        session = await runtime.create_session(ui)  # the session itself starts
        await session.send("hello")
        assert ui.errors and "could not be set up" in ui.errors[0]
        assert session.messages[0] == {"role": "user", "content": "hello"}  # the prompt is kept
    finally:
        await runtime.aclose()
    assert model_server.model_requests() == []


async def test_the_app_says_at_once_when_the_background_provider_cannot_be_built(
    model_server: ScriptedModelServer, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.app.helpers import errors, start, wait_until
    from turnstone_tui.app.app import TurnstoneApp

    broken = dataclasses.replace(registry.PROVIDERS["openai"], module="no_such_provider_module")
    monkeypatch.setitem(registry.PROVIDERS, "openai", broken)
    config = model_server.config()
    config.db_path = str(tmp_path / "t.db")
    options = RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False, defer_provider=True)

    async def factory() -> Runtime:
        return await Runtime.create(config, options=options)

    app = TurnstoneApp(runtime_factory=factory, cwd=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        await wait_until(pilot, lambda: any("provider is not usable" in e for e in errors(app)), 20)
        assert app.ready  # the app stays usable (/resume, /history, /model …)


async def test_the_app_session_is_on_screen_before_the_provider_build_begins(
    model_server: ScriptedModelServer, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the console script starts the app (provider_build_on_request): the SDK's import does not
    compete with the session's start; it begins once the welcome is drawn, with no prompt sent,
    and the first prompt is answered through the real SDK."""
    from tests.app.helpers import answers, send, start, wait_until
    from turnstone_tui.app.app import TurnstoneApp
    from turnstone_tui.providers import factory
    from turnstone_tui.widgets.chat_messages import WelcomeMessage

    model_server.script([Reply.text("built after the welcome")])
    config = model_server.config()
    config.db_path = str(tmp_path / "t.db")
    options = RuntimeOptions(
        cwd=tmp_path,
        start_mcp=False,
        start_watches=False,
        defer_provider=True,
        provider_build_on_request=True,
    )
    app = TurnstoneApp(runtime_factory=lambda: Runtime.create(config, options=options), cwd=tmp_path)
    builds: list[tuple[bool, int]] = []
    real_create = factory.create_provider

    def recording_create(config):  # noqa: ANN001, ANN202 - runs in the build thread
        builds.append((app.ready, len(app.query(WelcomeMessage))))
        return real_create(config)

    monkeypatch.setattr(factory, "create_provider", recording_create)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        await wait_until(pilot, lambda: builds, 30, "the provider's build to begin")
        assert builds == [(True, 1)], builds
        assert model_server.model_requests() == []
        await send(pilot, "hello")
        assert answers(app) == ["built after the welcome"]
        assert len(builds) == 1


def test_the_import_warm_up_and_the_provider_build_never_import_at_once(
    model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK (in the build thread) and the web tools (warmed in another) both import httpx; two
    threads importing it at once could leave the provider's build with a half-initialised httpx
    ('partially initialized module' - the app then refused every request)."""
    import threading

    from turnstone_tui import runtime as runtime_module
    from turnstone_tui.executors import catalog
    from turnstone_tui.providers import factory

    release, entered = threading.Event(), threading.Event()
    order: list[str] = []

    def held_build(config: object) -> object:
        entered.set()
        release.wait(30)
        order.append("built")
        return object()

    monkeypatch.setattr(factory, "create_provider", held_build)
    monkeypatch.setattr(catalog, "warm", lambda: order.append("warmed"))
    monkeypatch.setattr(runtime_module, "WARM_MODULES", ())
    provider = DeferredProvider(model_server.config(), "openai")  # the build begins, and is held
    assert provider.started and entered.wait(30)
    warm = threading.Thread(target=runtime_module._warm_imports)
    warm.start()
    warm.join(0.5)
    assert warm.is_alive() and order == []  # waiting for the build's imports
    release.set()
    warm.join(30)
    assert order == ["built", "warmed"]


def test_the_app_provider_build_imports_httpx_whole_and_anyios_backend_before_any_request(
    model_server: ScriptedModelServer, tmp_path
) -> None:
    """openai's httpx2 layer looks sys.modules['httpx'] up on every request and uses it if there:
    the app's warm-up importing the legacy httpx in its thread at that moment failed the request
    ('partially initialized module 'httpx' has no attribute 'Timeout''). The app's runtime (with
    the warm-up) builds its provider with httpx imported whole; the SDK alone does not import it
    (a fresh interpreter). The build also imports anyio's asyncio backend, which the first request
    otherwise imported on the event loop (15-25 ms, 96 ms under load)."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import asyncio, sys\n"
        "from tests.helpers.scripted_config import scripted_config\n"
        "from turnstone_tui.runtime import Runtime, RuntimeOptions\n"
        f"config = scripted_config({model_server.openai_base_url!r}, {str(tmp_path / 't.db')!r}, api_key='k')\n"
        "async def main():\n"
        f"    options = RuntimeOptions(cwd={str(tmp_path)!r}, start_mcp=False, start_watches=False,\n"
        "        defer_provider=True, provider_build_on_request=True, warm_imports=True)\n"
        "    runtime = await Runtime.create(config, options=options)\n"
        "    await runtime.provider.ready()\n"
        "    module = sys.modules.get('httpx')\n"
        "    print(module is not None and hasattr(module, 'Timeout'), 'anyio._backends._asyncio' in sys.modules)\n"
        "    await runtime.aclose()\n"
        "asyncio.run(main())\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.stdout.strip().splitlines()[-1:] == ["True True"], (
        result.stdout[-500:] + result.stderr[-2000:]
    )


async def test_a_built_provider_is_handed_over_without_a_turn_of_the_loop(
    model_server: ScriptedModelServer,
) -> None:
    """Once built, ``ready()`` (the first step of every request) does not yield to the loop: through
    asyncio.wrap_future the finished build arrived a loop turn later, and whatever was due meanwhile
    (the app's frame) ran before the request went out."""
    provider = deferred_provider(model_server.config(), "openai")
    assert isinstance(provider, DeferredProvider)
    try:
        real = await provider.ready()  # the build: waited for once
        ran: list[str] = []
        asyncio.get_running_loop().call_soon(ran.append, "a callback queued before")
        assert await provider.ready() is real
        assert ran == []  # (the old code ran the queued callback first)
        await asyncio.sleep(0)
        assert ran == ["a callback queued before"]
    finally:
        await provider.aclose()
