"""The start-up import boundary: what a user pays for before the first frame.

The app's module and the command line must not import any model SDK, the MCP SDK or the math
stack (seconds of CPU in a real terminal); the runtime imports only the selected provider's SDK,
and ``mcp`` only when a server is configured. Checked in a fresh interpreter (sys.modules), not
by timing.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.app.helpers import start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp

ROOT = Path(__file__).resolve().parents[2]
HEAVY = [
    "anthropic",
    "openai",
    "mcp",
    "sympy",
    "numpy",
    "scipy",
    "llama_cpp",
    "bashlex",
    "jsonschema",
    # the Markdown machinery loads with the first answer shown, pygments with the first bash pane
    "markdown_it",
    "pygments",
    "textual.widgets._markdown",
    # the tool families load when a tool of theirs is first prepared (or warmed in a thread)
    "httpx",
    "html2text",
    "turnstone_tui.executors.web",
    "turnstone_tui.executors.files",
    "turnstone_tui.executors.bash",
    "turnstone_tui.executors.math",
    # MCP's own config reading too, when no server is configured
    "turnstone_tui.mcp.config",
    # repairs broken tool-call arguments: loaded by the first call that needs it
    "json_repair",
    # the chat's tool cards (and their output logs) come with the first tool call
    "turnstone_tui.widgets.tool_card",
    "turnstone_tui.widgets.bash_pane",
]
SESSION_LOADS = {"httpx"}  # the SDK's HTTP client (the selected provider's, by design)
ENGINE = [
    # imported in a thread once the first frame is drawn (the app's runtime factory)
    "turnstone_tui.runtime",
    "turnstone_tui.core.session",
    "turnstone_tui.core.pipeline",
    "turnstone_tui.core.permissions",
    "turnstone_tui.storage.db",
    # a resumed chat's replay: imported when there is something to replay
    "turnstone_tui.app.replay",
    # @file attachments: the session's (and a resumed chat's prompt history)
    "turnstone_tui.core.mentions",
]


def loaded_after(code: str, tmp_path: Path, names: list[str] = HEAVY) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; which of ``names`` it left in sys.modules."""
    script = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        print(json.dumps({{name: name in sys.modules for name in {names!r}}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


APP_START = """
    import turnstone_tui.cli
    import turnstone_tui.app.app
    from turnstone_tui.cli import apply_cli, build_parser
    from turnstone_tui.config import Config
    apply_cli(Config(), build_parser().parse_args(["--model", "gpt-x", "--provider", "openai"]))
    """


def test_the_app_module_and_command_line_import_no_sdk(tmp_path: Path) -> None:
    loaded = loaded_after(APP_START, tmp_path)
    assert [name for name, present in loaded.items() if present] == []


def test_the_app_module_and_command_line_import_no_engine(tmp_path: Path) -> None:
    """Everything before the first frame is on the event loop: the engine (session, pipeline,
    permission rules, storage) loads after it, in a thread."""
    loaded = loaded_after(APP_START, tmp_path, ENGINE)
    assert [name for name, present in loaded.items() if present] == []


def test_the_runtime_imports_only_the_selected_provider_and_no_mcp_without_servers(tmp_path: Path) -> None:
    loaded = loaded_after(
        f"""
        import asyncio
        from turnstone_tui.config import Config
        from turnstone_tui.runtime import Runtime, RuntimeOptions

        async def main():
            config = Config()
            config.api.base_url = "http://127.0.0.1:9/v1"
            config.api.api_key = "k"
            config.model.name = "some-model"
            config.model.provider = "openai"
            config.db_path = {str(tmp_path / "t.db")!r}
            runtime = await Runtime.create(config, options=RuntimeOptions(start_watches=False))
            assert runtime.mcp is None
            assert runtime.provider.name == "openai", runtime.provider.name
            await runtime.aclose()

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert loaded["openai"], "the selected provider's SDK is imported"
    assert [
        name for name, present in loaded.items() if present and name not in {"openai", *SESSION_LOADS}
    ] == []


def test_an_app_session_starts_before_the_sdk_is_imported_and_without_the_tool_modules(
    tmp_path: Path,
) -> None:
    """The app's runtime (defer_provider): the session is created on the loop without the SDK
    (it loads in a thread; a lock held here keeps that thread from finishing first) and without
    importing any tool family's module; the first request then finds the real provider."""
    loaded = loaded_after(
        f"""
        import asyncio, builtins, sys, threading
        from turnstone_tui.config import Config
        from turnstone_tui.headless import HeadlessUI
        from turnstone_tui.runtime import Runtime, RuntimeOptions

        hold = threading.Event()
        real_import = builtins.__import__

        def gated_import(name, *args, **kwargs):
            if name == "openai" and threading.current_thread().name.startswith("provider-build"):
                hold.wait(60)
            return real_import(name, *args, **kwargs)

        builtins.__import__ = gated_import

        async def main():
            config = Config()
            config.api.base_url = "http://127.0.0.1:9/v1"
            config.api.api_key = "k"
            config.model.name = "some-model"
            config.model.provider = "openai"
            config.db_path = {str(tmp_path / "t.db")!r}
            options = RuntimeOptions(start_watches=False, defer_provider=True)
            runtime = await Runtime.create(config, options=options)
            session = await runtime.create_session(HeadlessUI())
            assert session.status().model == "some-model" and runtime.provider.name == "openai"
            assert "openai" not in sys.modules, "the session waited for the SDK"
            hold.set()
            real = await runtime.provider.ready()
            assert type(real).__name__ == "OpenAIProvider", real
            await runtime.aclose()

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert loaded["openai"]
    assert not loaded["turnstone_tui.executors.web"] and not loaded["html2text"]


def test_a_configured_mcp_server_brings_the_mcp_sdk(tmp_path: Path) -> None:
    servers = tmp_path / "mcp.json"
    servers.write_text(json.dumps({"mcpServers": {"never": {"command": "/nonexistent/server"}}}))
    loaded = loaded_after(
        f"""
        import asyncio
        from turnstone_tui.config import Config
        from turnstone_tui.runtime import Runtime, RuntimeOptions

        async def main():
            config = Config()
            config.api.base_url = "http://127.0.0.1:9/v1"
            config.api.api_key = "k"
            config.model.name = "claude-x"
            config.model.provider = "anthropic"
            config.db_path = {str(tmp_path / "t.db")!r}
            options = RuntimeOptions(start_watches=False, mcp_config_path={str(servers)!r})
            runtime = await Runtime.create(config, options=options)
            assert runtime.mcp is not None and [s.name for s in runtime.mcp.statuses()] == ["never"]
            await runtime.aclose()

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert loaded["anthropic"] and loaded["mcp"]
    assert not loaded["openai"]


def test_a_headless_run_imports_no_textual_and_starts_the_sdk_import_before_the_engine(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """``-p`` through the real command line: Textual is never imported, and the selected SDK's
    import (most of the run's CPU) begins in its own thread before the engine's modules load, so
    the two overlap, holding the import lock; the answer is printed."""
    model_server.script([Reply.text("headless answer")])
    config = tmp_path / "config.toml"
    config.write_text(
        f'db_path = "{tmp_path / "t.db"}"\n\n[api]\nbase_url = "{model_server.openai_base_url}"\n'
        'api_key = "k"\n\n[model]\nname = "scripted-model"\nprovider = "openai"\nretries = 0\n',
        encoding="utf-8",
    )
    script = textwrap.dedent(
        f"""
        import json, sys, threading

        seen = {{}}

        class Recorder:
            def find_spec(self, name, path=None, target=None):
                if name in ("httpcore2", "openai", "turnstone_tui.runtime") and name not in seen:
                    deferred = sys.modules.get("turnstone_tui.providers.deferred")
                    seen[name] = {{
                        "thread": threading.current_thread().name,
                        "runtime_loaded": "turnstone_tui.runtime" in sys.modules,
                        "alone": deferred is not None and deferred.IMPORT_LOCK.locked(),
                    }}
                return None

        sys.meta_path.insert(0, Recorder())
        from turnstone_tui.cli import main

        code = main(["--config", {str(config)!r}, "-p", "say something"])
        print(json.dumps({{"code": code, "seen": seen, "textual": "textual" in sys.modules}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "headless answer" in done.stdout
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and not report["textual"]
    # under the import lock: the provider's build and MCP's import (both reach httpx2) wait for it;
    # the thread starts with the SDK's HTTP core (httpcore2: its TLS context is then built in a
    # thread of its own, see providers.tls), then the SDK
    expected = {"thread": "sdk-import", "runtime_loaded": False, "alone": True}
    assert report["seen"]["httpcore2"] == expected, report
    assert {k: v for k, v in report["seen"]["openai"].items() if k != "runtime_loaded"} == {
        "thread": "sdk-import",
        "alone": True,
    }, report


def test_warming_the_markdown_loads_what_the_first_answer_needs(tmp_path: Path) -> None:
    """What the app loads in a worker thread once started (see the next test), so that the first
    answer does not import it on the event loop: the Markdown widgets, markdown-it, pygments."""
    names = [
        "markdown_it",
        "textual.widgets._markdown",
        "turnstone_tui.widgets.markdown_chunks",
        "pygments.lexers.python",
    ]
    before = loaded_after("import turnstone_tui.widgets.chat_messages", tmp_path, names)
    assert not any(before.values()), before
    after = loaded_after(
        "from turnstone_tui.widgets.chat_messages import warm_markdown\nwarm_markdown()", tmp_path, names
    )
    assert all(after.values()), after


@pytest.mark.parametrize(
    ("module", "warm"),
    [("turnstone_tui.widgets.chat_messages", "warm_markdown"), ("turnstone_tui.widgets.tool_card", "warm")],
)
async def test_the_app_warms_in_a_worker_thread_after_start_up(
    app: TurnstoneApp, monkeypatch: pytest.MonkeyPatch, module: str, warm: str
) -> None:
    """The Markdown, and what the first tool batch needs, are loaded once, off the event loop."""
    on_main_thread: list[bool] = []
    monkeypatch.setattr(
        importlib.import_module(module),
        warm,
        lambda: on_main_thread.append(threading.current_thread() is threading.main_thread()),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        await wait_until(pilot, lambda: on_main_thread, 30, f"{module}.{warm}")
        assert on_main_thread == [False]


CELL_TABLE_LOADED = textwrap.dedent(
    """
    import sys
    if any(name.startswith("rich._unicode_data.unicode") for name in sys.modules):
        import json as cell_table_loaded  # (a marker under a name loaded_after can look for)
        sys.modules["cell_table_loaded"] = cell_table_loaded
    """
)


def test_warming_the_tool_cards_loads_what_the_first_batch_needs(tmp_path: Path) -> None:
    """What the app loads in the same worker thread for the first tool batch: the panes' grid and
    rich's table of character widths (imported when the first finished card's "✓" is measured, on
    the event loop between the batch's last result and the model's answer: ~11 ms)."""
    names = ["turnstone_tui.widgets.pane_grid", "cell_table_loaded"]
    before = loaded_after("import turnstone_tui.widgets.tool_card\n" + CELL_TABLE_LOADED, tmp_path, names)
    assert not any(before.values()), before
    after = loaded_after(
        "from turnstone_tui.widgets.tool_card import warm\nwarm()\n" + CELL_TABLE_LOADED, tmp_path, names
    )
    assert all(after.values()), after
