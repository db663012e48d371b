"""A long conversation keeps only what is near the view mounted, and scrolling back shows the rest:
a resumed long session and a live one that outgrew the screen, both through the real app."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.app.conftest import make_runtime
from tests.app.helpers import answers, errors, infos, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.runtime import Runtime
from turnstone_tui.storage.db import read_session_messages
from turnstone_tui.widgets.chat_messages import AssistantMessage, UserMessage
from turnstone_tui.widgets.chat_view import ChatView
from turnstone_tui.widgets.tool_card import ToolCard

pytestmark = pytest.mark.timeout(360)  # a loaded CI machine pages slowly
SIZE = (100, 30)


def stored_turn(n: int) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "user", "content": f"question number {n}"}]
    if n % 5 == 0:
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "ls"}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "name": "bash", "content": f"listing {n}"})
    messages.append({"role": "assistant", "content": f"Answer number {n}.\n\nA second paragraph for {n}."})
    return messages


def screen_text(app: TurnstoneApp) -> str:
    """What the terminal shows now."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def chat_texts(app: TurnstoneApp) -> list[str]:
    """The mounted entries' texts in order (user prompts, answers, tool cards)."""
    texts: list[str] = []
    for entry in app.chat.entries:
        if isinstance(entry, UserMessage):
            texts.append(entry.text)
        elif isinstance(entry, AssistantMessage) and not entry.has_class("-info"):
            texts.append(entry.source.split("\n")[0])
        elif isinstance(entry, ToolCard) and entry.result is not None:
            texts.append(entry.result.text)
    return texts


async def scroll_back_to_the_start(pilot: Pilot, app: TurnstoneApp) -> None:
    for _ in range(400):
        if app.chat.older_count == 0 and app.chat.scroll_y == 0:
            return
        await pilot.press("pageup")
        await pilot.pause(0.02)
    raise AssertionError(f"still {app.chat.older_count} entries above after 400 page-ups")


async def test_a_resumed_long_session_shows_its_end_first_and_the_rest_on_scrolling_up(
    runtime: Runtime, model_server: ScriptedModelServer
) -> None:
    storage = runtime.storage
    assert storage is not None
    session_id = await storage.create_session(name="long one")
    for n in range(1, 61):
        await storage.append_messages(session_id, stored_turn(n))
    app = TurnstoneApp(runtime, resume_id=session_id, cwd=runtime.options.cwd)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await wait_until(pilot, lambda: "Answer number 60." in screen_text(app), 20, "the last answer")
        # Only the end is mounted; the rest waits above.
        assert app.chat.older_count > 50
        assert len(app.chat.entries) < 40
        assert "question number 1\n" not in screen_text(app)
        await scroll_back_to_the_start(pilot, app)
        assert "question number 1" in screen_text(app)
        expected: list[str] = []
        for n in range(1, 61):
            expected.append(f"question number {n}")
            if n % 5 == 0:
                expected.append(f"listing {n}")
            expected.append(f"Answer number {n}.")
        assert chat_texts(app) == expected  # every entry, once, in the stored order
        # Back to the end: the chat follows it again and the old entries leave the DOM once more.
        await pilot.press("end")
        model_server.script([Reply.text("A fresh answer at the end.")])
        await send(pilot, "one more")
        await wait_until(pilot, lambda: "A fresh answer at the end." in screen_text(app), 20)
        await wait_until(pilot, lambda: app.chat.older_count > 0, 20, "old entries to leave the DOM")


async def test_a_live_session_keeps_what_scrolled_away_and_shows_it_again(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    turns = 30
    model_server.script([Reply.text(f"Reply {n}.\n\nWith a second paragraph.") for n in range(turns)])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        for n in range(turns):
            await send(pilot, f"ask {n}")
        await wait_until(pilot, lambda: f"Reply {turns - 1}." in screen_text(app), 20)
        assert app.chat.older_count > 0  # the first turns left the DOM
        assert len(answers(app)) < turns
        await scroll_back_to_the_start(pilot, app)
        assert answers(app) == [f"Reply {n}.\n\nWith a second paragraph." for n in range(turns)]
        assert "ask 0" in screen_text(app)


async def test_a_resumed_session_is_drawn_from_the_database_before_the_engine_is_ready(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """The resumed conversation's end is on screen while the engine (provider SDK, MCP) still
    loads; once it is ready, the conversation is there once, not twice, and takes prompts."""
    runtime = await make_runtime(model_server, tmp_path)
    storage = runtime.storage
    assert storage is not None
    session_id = await storage.create_session(name="early")
    for n in range(1, 41):
        await storage.append_messages(session_id, stored_turn(n))
    engine_may_start = asyncio.Event()

    async def slow_engine() -> Runtime:
        await engine_may_start.wait()
        return runtime

    async def stored() -> list[dict[str, Any]]:
        return await asyncio.to_thread(read_session_messages, storage.path, session_id[:6])

    app = TurnstoneApp(runtime_factory=slow_engine, resume_id=session_id, stored_history=stored)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot, lambda: "Answer number 40." in screen_text(app), 20, "the stored conversation"
        )
        assert not app.ready and app.runtime is None
        engine_may_start.set()
        await start(pilot)
        assert app.session is not None and app.session.session_id == session_id
        assert chat_texts(app).count("Answer number 40.") == 1
        assert infos(app).count("— resumed —") == 1
        model_server.script([Reply.text("Still here.")])
        await send(pilot, "are you there")
        assert answers(app)[-1] == "Still here."
        await scroll_back_to_the_start(pilot, app)
        assert chat_texts(app).count("question number 1") == 1


async def test_an_early_drawn_conversation_the_session_cannot_open_is_cleared(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """What was drawn early goes away when the session then cannot be opened (here: the id is
    unknown by the time the engine looks; in life, another process took the session)."""
    runtime = await make_runtime(model_server, tmp_path)
    storage = runtime.storage
    assert storage is not None
    drawn = await storage.create_session(name="drawn")
    await storage.append_messages(drawn, stored_turn(1))

    async def stored() -> list[dict[str, Any]]:
        return read_session_messages(storage.path, drawn)

    async def engine() -> Runtime:
        return runtime

    app = TurnstoneApp(runtime_factory=engine, resume_id="nosuchsession", stored_history=stored)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert app.session is not None and app.session.session_id != drawn
        assert "Answer number 1." not in chat_texts(app) and app.chat.older_count == 0
        assert any("nosuchsession" in text for text in errors(app))


def without_scroll_bar(app: TurnstoneApp) -> list[str]:
    """The screen's lines without the right edge (the scroll bar's thumb moves as entries load)."""
    return [line[:-3] for line in screen_text(app).splitlines()]


async def test_paging_back_loads_older_entries_in_few_large_steps_and_the_view_holds_still(
    runtime: Runtime, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step that mounts older entries costs Textual a layout of every mounted widget (twice),
    so they come in steps of LOAD_BATCH (8), not 2: paging from the end of a resumed 60-turn
    session to its start takes at most 16 steps (59 before). The view does not move while they
    load, and every entry is there in order."""
    storage = runtime.storage
    assert storage is not None
    session_id = await storage.create_session(name="long one")
    for n in range(1, 61):
        await storage.append_messages(session_id, stored_turn(n))
    steps: list[int] = []
    load_older = ChatView._load_older

    async def counted(self: ChatView) -> None:
        before = self.older_count
        await load_older(self)
        if self.older_count < before:
            steps.append(before - self.older_count)

    monkeypatch.setattr(ChatView, "_load_older", counted)
    app = TurnstoneApp(runtime, resume_id=session_id, cwd=runtime.options.cwd)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        chat = app.chat
        await wait_until(pilot, lambda: "Answer number 60." in screen_text(app), 20, "the last answer")
        held = chat.older_count
        steps.clear()
        for _ in range(400):
            if chat.older_count == 0 and chat.scroll_y == 0:
                break
            await pilot.press("pageup")
            await pilot.pause()
            shown = without_scroll_bar(app)
            await wait_until(pilot, lambda: not chat._load_pending, 20, "older entries to load")
            await pilot.pause()
            assert without_scroll_bar(app) == shown, "the view moved while older entries loaded"
        assert re.search(r"question number 1\b", screen_text(app))
        assert sum(steps) == held
        assert len(steps) <= held // 8 + 2, steps
        expected: list[str] = []
        for n in range(1, 61):
            expected.append(f"question number {n}")
            if n % 5 == 0:
                expected.append(f"listing {n}")
            expected.append(f"Answer number {n}.")
        assert chat_texts(app) == expected


async def test_paging_back_arranges_the_screen_only_in_layouts_and_the_marker_counts_right(
    runtime: Runtime, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load of older entries right after a scroll used to update the marker above them while it
    was off screen, and Textual arranged every widget to find where it was (the layouts after a
    scroll already arrange everything). The marker's count is brought up to date once the view
    is within a screen of it, so whenever it is seen, it is right."""
    storage = runtime.storage
    assert storage is not None
    session_id = await storage.create_session(name="long one")
    for n in range(1, 61):
        await storage.append_messages(session_id, stored_turn(n))
    app = TurnstoneApp(runtime, resume_id=session_id, cwd=runtime.options.cwd)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        chat = app.chat
        await wait_until(pilot, lambda: "Answer number 60." in screen_text(app), 20, "the last answer")
        compositor = app.main._compositor
        outside: list[str] = []
        in_layout = [False]
        real_arrange, real_reflow = compositor._arrange_root, compositor.reflow

        def arrange_root(*args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("visible_only", True) and not in_layout[0]:
                outside.append("arrange")
            return real_arrange(*args, **kwargs)

        def reflow(*args: Any, **kwargs: Any) -> Any:
            in_layout[0] = True
            try:
                return real_reflow(*args, **kwargs)
            finally:
                in_layout[0] = False

        monkeypatch.setattr(compositor, "_arrange_root", arrange_root)
        monkeypatch.setattr(compositor, "reflow", reflow)
        for _ in range(400):
            if chat.older_count == 0 and chat.scroll_y == 0:
                break
            await pilot.press("pageup")
            await wait_until(pilot, lambda: not chat._load_pending, 20, "older entries to load")
            await pilot.pause()
            shown = re.search(r"↑ (\d+) earlier entr", screen_text(app))
            if shown is not None:
                assert int(shown.group(1)) == chat.older_count
            marker = chat._marker
            if marker is not None and chat.scroll_y <= chat.scrollable_content_region.height:
                assert marker.count == chat.older_count  # within a screen of the view: up to date
        assert re.search(r"question number 1\b", screen_text(app))
        assert outside == []


async def test_the_older_entries_marker_shows_the_count_when_the_view_reaches_it(
    runtime: Runtime, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its count is updated only near the view; jumping to the top (a scroll bar dragged there)
    before more entries load shows the count of those still held."""
    storage = runtime.storage
    assert storage is not None
    session_id = await storage.create_session(name="long one")
    for n in range(1, 61):
        await storage.append_messages(session_id, stored_turn(n))
    app = TurnstoneApp(runtime, resume_id=session_id, cwd=runtime.options.cwd)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        chat = app.chat
        await wait_until(pilot, lambda: "Answer number 60." in screen_text(app), 20, "the last answer")
        await wait_until(pilot, lambda: not chat._load_pending, 20, "older entries to load")
        monkeypatch.setattr(chat, "_schedule_load", lambda: None)  # nothing more loads
        held = chat.older_count
        assert held > 0
        chat.scroll_home(animate=False, immediate=True)
        await wait_until(pilot, lambda: "earlier entries" in screen_text(app), 20, "the marker")
        assert f"↑ {held} earlier entries" in screen_text(app)
