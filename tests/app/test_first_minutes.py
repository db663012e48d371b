"""Issue 11 (the first ten minutes): fast typing, ctrl+c, type-ahead while starting."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import events
from textual.pilot import Pilot
from textual.widgets import Static

from tests.app.conftest import make_runtime
from tests.app.helpers import answers, infos, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.help import HelpScreen
from turnstone_tui.app.screens.permissions import PermissionsScreen
from turnstone_tui.runtime import Runtime
from turnstone_tui.widgets.chat_messages import UserMessage
from turnstone_tui.widgets.prompt_input import CompletionMenu

SIZE = (100, 30)


def burst(app: TurnstoneApp, keys: str | list[str]) -> None:
    """Queue key presses on the prompt all at once, as a fast typist or a paste delivers them:
    every key is handled before any of the prompt's own Changed messages."""
    for key in keys:
        character = key if len(key) == 1 else None
        app.prompt.post_message(events.Key(key, character))


def notifications(app: TurnstoneApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def type_slowly(pilot: Pilot, text: str) -> None:
    for char in text:
        await pilot.press("space" if char == " " else char)


async def test_enter_on_fast_typed_command_runs_what_was_typed(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.click("#prompt")
        await type_slowly(pilot, "/h")
        menu = app.query_one(CompletionMenu)
        await wait_until(pilot, lambda: menu.is_open, what="the menu for /h")
        burst(app, ["e", "l", "p", "enter"])  # the menu still shows what it made for "/h"
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")
        assert not [n for n in notifications(app) if "Unknown command" in n]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))

        await type_slowly(pilot, "/model ")
        await wait_until(pilot, lambda: menu.is_open, what="the alias menu")
        burst(app, ["f", "a", "s", "t", "enter"])
        await wait_until(
            pilot, lambda: any("Switched to scripted-fast" in t for t in infos(app)), what="the switch"
        )
        assert app.runtime is not None and app.runtime.provider.model == "scripted-fast"
        assert not [n for n in notifications(app) if "Unknown command" in n]


async def test_ctrl_c_clears_text_then_interrupts_then_arms_quit(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("word " * 400, chunk_size=5, delay=0.05)])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.click("#prompt")
        await type_slowly(pilot, "half a thought")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.prompt.text == "" and app.is_running
        assert not [n for n in notifications(app) if "ctrl+c again" in n]

        await send(pilot, "stream for a while", wait=False)
        await wait_until(pilot, lambda: app.busy and answers(app), what="the answer to stream")
        await pilot.press("ctrl+c")  # during a turn: interrupts it, as esc does
        await wait_until(pilot, lambda: not app.busy, what="the turn to stop")
        assert app.is_running
        assert len(answers(app)[-1]) < len("word " * 400)
        assert not [n for n in notifications(app) if "ctrl+c again" in n]

        await pilot.press("ctrl+c")  # idle and empty: arms quit
        await pilot.pause()
        assert app.is_running
        assert [n for n in notifications(app) if "ctrl+c again" in n]
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")


async def test_type_ahead_while_starting_is_queued_visibly_and_sent_when_ready(
    model_server: ScriptedModelServer, tmp_path: Path, frozen_clock: None
) -> None:
    model_server.script([Reply.text("Here you go.")])
    release = asyncio.Event()

    async def slow_start() -> Runtime:
        await release.wait()
        return await make_runtime(model_server, tmp_path)

    app = TurnstoneApp(runtime_factory=slow_start, cwd=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.click("#prompt")
        await type_slowly(pilot, "typed early")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "queued: typed early" in infos(app), what="the queued notice")
        assert app.prompt.text == "" and not app.ready
        assert not model_server.model_requests()

        release.set()
        await wait_until(pilot, lambda: app.turns_finished == 1 and not app.busy, 20, "the queued turn")
        assert answers(app) == ["Here you go."]
        assert [u.text for u in app.query(UserMessage)] == ["typed early"]
        assert "queued: typed early" not in infos(app)
        assert model_server.model_requests()[0].body["messages"][-1]["content"] == "typed early"


async def test_permissions_tells_which_tools_never_ask(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert app.session is not None and not app.session.auto_approve
        await send(pilot, "/permissions", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionsScreen), what="/permissions")
        shown = " ".join(str(s.render()) for s in app.screen.query("#permissions-summary").results(Static))
        assert "read_file" in shown and "search" in shown and "never ask" in shown
        assert "bash" not in shown  # bash asks
        assert app.screen.shown == []  # no rules yet


async def test_ui_theme_from_the_config_is_used(
    model_server: ScriptedModelServer, tmp_path: Path, frozen_clock: None
) -> None:
    runtime = await make_runtime(model_server, tmp_path)
    runtime.config.ui.theme = "nord"
    app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await start(pilot)
            assert app.theme == "nord"
    finally:
        await runtime.aclose()


def test_help_lists_dialog_keys_and_wraps_inside_the_description_column() -> None:
    from rich.console import Console

    from turnstone_tui.app.screens.help import help_sections

    sections = dict(help_sections())
    assert {"Commands", "Keys", "Approving tools", "Reviewing a plan", "MCP panel"} <= set(sections)
    console = Console(width=60, record=True, color_system=None)
    for title, table in sections.items():
        lines = console.render_lines(table, console.options.update_width(60))
        texts = ["".join(segment.text for segment in line).rstrip() for line in lines]
        starts = set()
        for text in texts:
            if text.startswith(" "):  # a wrapped description line: it starts at the column
                starts.add(len(text) - len(text.lstrip()))
            else:
                key_end = text.index("  ") if "  " in text else len(text)
                column = key_end + len(text[key_end:]) - len(text[key_end:].lstrip())
                starts.add(column)
        assert len(starts) == 1, f"{title}: descriptions start at columns {sorted(starts)}"


def state_label(app: TurnstoneApp) -> str:
    from textual.widgets import Label

    return str(app.query_one("#status-state", Label).render())


async def test_status_says_writing_while_text_streams_and_compacting_during_compact(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script(
        [
            Reply.text("word " * 300, chunk_size=5, delay=0.03),
            Reply.text("A short summary.", chunk_size=2, delay=0.3),
        ]
    )
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "talk for a while", wait=False)
        await wait_until(pilot, lambda: app.busy and answers(app), what="the answer to stream")
        await wait_until(pilot, lambda: "writing" in state_label(app), what="'writing' in the status")
        assert "thinking" not in state_label(app)
        await wait_until(pilot, lambda: not app.busy, 30, "the turn to end")

        await send(pilot, "/compact", wait=False)
        await wait_until(pilot, lambda: "compacting" in state_label(app), what="'compacting' in the status")
        assert "thinking" not in state_label(app)
        await wait_until(pilot, lambda: any("compacted" in t for t in infos(app)), 30, "the summary")
        assert "idle" in state_label(app)


async def test_page_keys_and_end_scroll_the_chat_from_the_prompt(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    long_answer = "\n\n".join(f"Paragraph {i}." for i in range(60))
    model_server.script([Reply.text(long_answer, chunk_size=200), Reply.text("The newest answer.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "a long answer please")
        chat = app.chat
        await wait_until(pilot, lambda: chat.max_scroll_y > 20 and chat.scroll_y >= chat.max_scroll_y)
        await pilot.click("#prompt")
        await pilot.press("pageup")
        await wait_until(pilot, lambda: chat.scroll_y < chat.max_scroll_y - 5, what="pageup to scroll")
        assert app.focused is app.prompt
        up = chat.scroll_y
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: chat.scroll_y > up, what="pagedown to scroll")
        await pilot.press("pageup", "pageup")
        await wait_until(pilot, lambda: chat.scroll_y < up, what="scrolled up again")
        await pilot.press("end")  # the prompt is empty: End goes to the end of the chat
        await wait_until(pilot, lambda: chat.scroll_y >= chat.max_scroll_y, what="end of the chat")
        await send(pilot, "and now?")
        await wait_until(pilot, lambda: chat.scroll_y >= chat.max_scroll_y, what="following new output")

        await type_slowly(pilot, "abc")
        await pilot.press("left", "left", "end")  # inside the text, End moves the cursor
        assert app.prompt.cursor_location == (0, 3)


async def test_the_project_instructions_in_use_are_named_under_the_welcome(
    app: TurnstoneApp, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    (tmp_path / "work" / "AGENTS.md").write_text("Run `make check` before you answer.\n")
    model_server.script([Reply.text("Checked.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert infos(app)[1] == "Following project instructions: AGENTS.md", "right under the welcome"
        await send(pilot, "hello")
        await wait_until(pilot, lambda: "Checked." in answers(app), 20)
        system = model_server.requests[0].body["messages"][0]["content"]
        assert "Run `make check` before you answer." in system
