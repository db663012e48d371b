"""The watch inbox in the app (Pilot): results for conversations that are not open are counted in
the status bar, listed on the inbox screen (F3), and delivered when their conversation is opened.
A real Runtime is the watch host: its real runner polls a real command."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from textual.widgets import Label, OptionList

from tests.app.conftest import APP_SIZE, make_config
from tests.app.helpers import answers, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.inbox import InboxScreen
from turnstone_tui.runtime import Runtime, RuntimeOptions
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(120)


async def seed_closed_session(db: Path, *, prompt: str = "deploy the release") -> str:
    """A stored conversation (open nowhere) with a due watch whose condition holds at once."""
    storage = await Storage.open(db)
    try:
        sid = await storage.create_session()
        await storage.append_message(sid, {"role": "user", "content": prompt})
        await storage.append_message(sid, {"role": "assistant", "content": "Deploying; I will watch it."})
        now = time.time()
        await storage.add_watch(
            {
                "id": uuid.uuid4().hex[:8],
                "session_id": sid,
                "name": "deploy",
                "command": "echo deploy finished",
                "poll_every": 60.0,
                "stop_on": '"finished" in output',
                "max_polls": 10,
                "polls": 0,
                "next_run": now - 1,
                "prev_output": None,
                "active": 1,
                "created": now,
            }
        )
        return sid
    finally:
        await storage.close()


async def test_a_result_for_a_closed_conversation_is_counted_listed_and_delivered_when_opened(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    config = make_config(model_server, tmp_path)
    older = await seed_closed_session(tmp_path / "turnstone.db")
    model_server.script([Reply.text("Hi."), Reply.text("The deploy finished; all green.")])
    workdir = tmp_path / "work"
    workdir.mkdir()
    options = RuntimeOptions(cwd=workdir, start_mcp=False, watch_host=True)

    async def factory() -> Runtime:
        return await Runtime.create(config, options=options)

    app = TurnstoneApp(runtime_factory=factory, cwd=workdir)
    async with app.run_test(size=APP_SIZE) as pilot:
        await start(pilot)
        await wait_until(pilot, lambda: app.status_bar.inbox == 1, 30, "the inbox count")
        label = app.query_one("#status-inbox", Label)
        assert label.display and "inbox: 1 watch result (F3)" in str(label.render())
        # the result went neither into the open conversation nor into the closed one's history
        await send(pilot, "hello")
        assert model_server.model_requests()[0].body["messages"][-1]["content"] == "hello"
        await pilot.press("f3")
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), 10, "the inbox screen")
        options_list = app.screen.query_one("#inbox-list", OptionList)
        assert options_list.option_count == 1
        assert "deploy finished" in str(app.screen.query_one("#inbox-text").render())
        await pilot.press("enter")  # open that conversation: the result is delivered there
        await wait_until(pilot, lambda: app.session is not None and app.session.session_id == older, 20)
        await wait_until(pilot, lambda: "The deploy finished; all green." in answers(app), 30, "the answer")
        await wait_until(pilot, lambda: not app.busy, 20, "the watch turn to end")
        await wait_until(pilot, lambda: app.status_bar.inbox == 0, 20, "the inbox to empty")
        assert not label.display
    delivered = model_server.model_requests()[1].body["messages"]
    assert delivered[1]["content"] == "deploy the release"  # resumed history, then the result
    assert delivered[-1]["role"] == "user" and delivered[-1]["content"].startswith(
        "[watch deploy] condition met"
    )
    storage = await Storage.open(tmp_path / "turnstone.db")
    try:
        assert await storage.pending_watch_results() == []
        stored = [m["content"] for m in await storage.load_messages(older) if m["role"] == "user"]
        assert stored == ["deploy the release", delivered[-1]["content"]]
    finally:
        await storage.close()


async def test_a_result_for_the_open_conversation_runs_at_once_when_idle_and_the_app_is_idle_after(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    config = make_config(model_server, tmp_path)
    model_server.script([Reply.text("Got the watch result."), Reply.text("And your question.")])
    workdir = tmp_path / "work"
    workdir.mkdir()
    runtime = await Runtime.create(config, options=RuntimeOptions(cwd=workdir, start_mcp=False))
    try:
        app = TurnstoneApp(runtime, cwd=workdir)
        async with app.run_test(size=APP_SIZE) as pilot:
            await start(pilot)
            assert app.session is not None
            await app.session.inject("[watch build] output changed: passing")
            await wait_until(pilot, lambda: "Got the watch result." in answers(app), 20, "the watch turn")
            await wait_until(pilot, lambda: not app.busy, 20, "idle after the watch turn")
            await send(pilot, "and now?")  # the prompt is sent, not queued behind a stuck busy state
            assert "And your question." in answers(app)
    finally:
        await runtime.aclose()
