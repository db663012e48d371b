"""The prompt (history, completion) and the slash commands, checked on screen and at the engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette

from tests.app.helpers import answers, errors, infos, press_together, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.help import HelpScreen
from turnstone_tui.app.screens.permissions import PermissionsScreen
from turnstone_tui.app.screens.sessions import SessionPickerScreen
from turnstone_tui.widgets.chat_messages import AssistantMessage, UserMessage
from turnstone_tui.widgets.prompt_input import CompletionMenu
from turnstone_tui.widgets.status_bar import StatusBar

SIZE = (100, 30)


def menu_labels(app: TurnstoneApp) -> list[str]:
    menu = app.query_one(CompletionMenu)
    return [str(c.replacement) for c in menu.completions] if menu.is_open else []


async def test_history_up_and_down(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    model_server.script([Reply.text("one"), Reply.text("two")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "first prompt")
        await send(pilot, "second prompt")
        for char in "draft":
            await pilot.press(char)
        await pilot.press("up")
        assert app.prompt.text == "second prompt"
        await pilot.press("up")
        assert app.prompt.text == "first prompt"
        await pilot.press("up")  # at the oldest entry: stays
        assert app.prompt.text == "first prompt"
        await pilot.press("down")
        assert app.prompt.text == "second prompt"
        await pilot.press("down")
        assert app.prompt.text == "draft"  # the unsent draft comes back
        assert not app.query_one(CompletionMenu).is_open


async def test_enter_sends_and_shift_enter_or_ctrl_j_add_newlines(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("ok")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert app.prompt.text == "a\nb\nc"
        assert not model_server.model_requests()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.turns_finished == 1)
        assert model_server.model_requests()[0].body["messages"][-1]["content"] == "a\nb\nc"
        assert app.prompt.text == ""


@pytest.mark.parametrize(
    ("typed", "together", "text", "cursor"),
    [
        # The prompt's own bindings (backspace, the arrows) must not run after the letters typed
        # after them.
        ("abc", [("backspace", None), ("backspace", None), ("x", "x"), ("left", None), ("y", "y")], "ayx", 2),
        # End at the end of the text follows the chat, anywhere else it moves the cursor: typed
        # right after Home, End must see the cursor where Home put it, not where it was.
        ("hello", [("home", None), ("end", None), ("Z", "Z")], "helloZ", 6),
    ],
)
async def test_keys_read_together_are_applied_in_the_order_typed(
    app: TurnstoneApp,
    model_server: ScriptedModelServer,
    typed: str,
    together: list[tuple[str, str | None]],
    text: str,
    cursor: int,
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.prompt.focus()
        for char in typed:
            await pilot.press(char)
        await press_together(pilot, together)
        assert app.prompt.text == text
        assert app.prompt.cursor_location == (0, cursor)


async def test_slash_completion_filters_and_accepts(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("/")
        await wait_until(pilot, lambda: len(menu_labels(app)) == 17, what="all commands listed")
        await pilot.press("h", "e")
        await wait_until(pilot, lambda: menu_labels(app) == ["/help"], what="only /help")
        await pilot.press("enter")  # accept + run (no arguments)
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")
        assert app.prompt.text == ""
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        # tab completes a command that takes an argument and offers the arguments.
        await pilot.press("/", "m", "o")
        await wait_until(pilot, lambda: menu_labels(app) == ["/model "])
        await pilot.press("tab")
        assert app.prompt.text == "/model "
        await wait_until(pilot, lambda: menu_labels(app) == ["fast"], what="alias completion")
        await pilot.press("escape")
        assert not app.query_one(CompletionMenu).is_open
        assert app.prompt.text == "/model "
        assert app.busy is False and app.is_running  # escape closed the menu, nothing else


async def test_path_completion_after_at(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    workdir = Path(app.cwd)
    (workdir / "src").mkdir()
    (workdir / "src" / "main.py").write_text("print()\n")
    (workdir / "setup.cfg").write_text("")
    (workdir / ".hidden").write_text("")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        for char in "look at @s":
            await pilot.press("space" if char == " " else char)
        # fuzzy over the project (hidden files left out), best first; "src/" then browses the directory
        await wait_until(
            pilot, lambda: menu_labels(app) == ["src/", "setup.cfg", "src/main.py"], what="path completions"
        )
        await pilot.press("tab")
        assert app.prompt.text == "look at @src/"
        await wait_until(pilot, lambda: menu_labels(app) == ["src/main.py"], what="completions inside src/")
        await pilot.press("enter")  # accepts the completion, does not send
        assert app.prompt.text == "look at @src/main.py"
        assert not model_server.model_requests()


async def test_unknown_command_is_reported(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.run_slash_command("/frobnicate")
        await pilot.pause()
        assert any("Unknown command /frobnicate" in str(n.message) for n in app._notifications)
        assert not model_server.model_requests()


async def test_clear_empties_the_screen_but_keeps_the_conversation(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("Paris is the capital."), Reply.text("About 2 million.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "capital of france")
        await send(pilot, "/clear", wait=False)
        await wait_until(pilot, lambda: not app.query(AssistantMessage) and not app.query(UserMessage))
        await send(pilot, "population")
        messages = model_server.model_requests()[-1].body["messages"]
        contents = [m.get("content") for m in messages]
        assert "capital of france" in contents and "Paris is the capital." in contents


async def test_new_starts_a_fresh_conversation(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    model_server.script([Reply.text("First."), Reply.text("Fresh.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "remember 42")
        old_id = app.session.session_id
        await send(pilot, "/new", wait=False)
        await wait_until(
            pilot, lambda: app.session is not None and app.session.session_id != old_id and app.ready
        )
        assert answers(app) == []
        await send(pilot, "what number")
        messages = model_server.model_requests()[-1].body["messages"]
        assert [m["role"] for m in messages if m["role"] != "system"] == ["user"]
        assert app.query_one(StatusBar).status.session_id == app.session.session_id


async def test_model_shows_and_switches(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    model_server.script([Reply.text("from fast")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "/model", wait=False)
        await wait_until(
            pilot, lambda: any("scripted-model" in m.source for m in app.query(AssistantMessage))
        )
        await send(pilot, "/model fast", wait=False)
        await wait_until(pilot, lambda: any("Switched to scripted-fast" in t for t in infos(app)))
        assert app.query_one(StatusBar).status.model == "scripted-fast"
        assert "scripted-fast" in str(app.query_one("#status-model").render())
        await send(pilot, "hi")
        assert model_server.model_requests()[-1].body["model"] == "scripted-fast"
        await send(pilot, "/model other-model", wait=False)
        await wait_until(pilot, lambda: any("not a configured alias" in t for t in infos(app)))
        assert app.runtime.provider.model == "other-model"
        assert not errors(app)


async def test_history_and_resume(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    model_server.script([Reply.text("Zebras are striped."), Reply.text("Still here.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "tell me about zebras")
        first_id = app.session.session_id
        await send(pilot, "/new", wait=False)
        await wait_until(pilot, lambda: app.session.session_id != first_id and app.ready)
        await send(pilot, "/history zebras", wait=False)
        await wait_until(pilot, lambda: any(first_id[:12] in m.source for m in app.query(AssistantMessage)))
        await send(pilot, "/resume", wait=False)
        await wait_until(
            pilot, lambda: isinstance(app.screen, SessionPickerScreen), what="the session picker"
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.session.session_id == first_id and app.ready, what="resumed")
        assert "tell me about zebras" in [m.text for m in app.query(UserMessage)]
        assert "Zebras are striped." in answers(app)
        await send(pilot, "and then")
        contents = [m.get("content") for m in model_server.model_requests()[-1].body["messages"]]
        assert "tell me about zebras" in contents and "Zebras are striped." in contents


async def test_raw_toggles_markdown_source(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    model_server.script([Reply.text("Some **bold** words")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "x")
        message = app.query(AssistantMessage).last()
        raw = message.query_one(".raw")
        assert not raw.display or not raw.styles.display == "block"
        await send(pilot, "/raw", wait=False)
        await wait_until(pilot, lambda: app.chat.has_class("-raw"))
        assert "**bold**" in str(raw.render())
        assert raw.styles.display == "block"


async def test_command_palette_lists_slash_commands(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        for char in "permissions":
            await pilot.press(char)
        await wait_until(
            pilot, lambda: app.screen.query_one("CommandList").option_count > 0, what="palette hits"
        )
        await pilot.pause(0.2)
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: isinstance(app.screen, PermissionsScreen), what="/permissions via palette"
        )


async def test_permissions_lists_and_revokes(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.session.auto_approve.update({"bash", "write_file"})
        await app.runtime.persist_allow({"web_fetch"})
        app.session.auto_approve.add("web_fetch")
        await send(pilot, "/permissions", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        screen = app.screen
        assert [(e.rule.text, e.source) for e in screen.shown] == [
            ("bash", "session"),
            ("web_fetch", "saved"),
            ("write_file", "session"),
        ]
        await pilot.press("d")  # bash
        await wait_until(pilot, lambda: len(screen.shown) == 2)
        await pilot.press("d")  # then web_fetch (now the first row)
        await wait_until(pilot, lambda: len(screen.shown) == 1)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, PermissionsScreen))
        assert app.session.auto_approve == {"write_file"}
        assert await app.runtime.persisted_allow() == []


async def test_compact_replaces_history_with_a_summary(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    summary = "The user asked about zebras; they are striped."
    model_server.script([Reply.text("Zebras are striped."), Reply.text(summary), Reply.text("Yes.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "tell me about zebras")
        await send(pilot, "/compact", wait=False)
        await wait_until(pilot, lambda: any("compacted" in text for text in infos(app)), what="compaction")
        assert any(summary in m.source for m in app.query(AssistantMessage))
        await send(pilot, "are you sure?")
        messages = model_server.model_requests()[-1].body["messages"]
        contents = " ".join(str(m.get("content")) for m in messages)
        assert summary in contents and "tell me about zebras" not in contents


async def test_esc_cancels_a_compaction_and_keeps_the_history(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script(
        [
            Reply.text("Zebras are striped."),
            Reply.text("A summary that takes a long time to write " * 20, chunk_size=4, delay=0.05),
            Reply.text("Still here."),
        ]
    )
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "tell me about zebras")
        history = list(app.session.messages)
        await send(pilot, "/compact", wait=False)
        await wait_until(pilot, lambda: app.busy, what="the compaction to start")
        await pilot.press("escape")
        await wait_until(pilot, lambda: any("Compaction cancelled" in t for t in infos(app)), what="cancel")
        assert not app.busy
        assert app.session.messages == history
        await send(pilot, "and then")
        contents = [m.get("content") for m in model_server.model_requests()[-1].body["messages"]]
        assert "tell me about zebras" in contents and "Zebras are striped." in contents


async def test_export_writes_the_conversation_and_copy_takes_the_last_answer(
    app: TurnstoneApp, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.script(
        [
            Reply.tools([("read_file", {"path": "notes.txt"}, "call_1")]),
            Reply.text("The notes say:\n\n```\nuse ``` fences\n```\n\nThat is all."),
        ]
    )
    workdir = tmp_path / "work"
    (workdir / "notes.txt").write_text("use ``` fences\n")
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "/copy", wait=False)
        await wait_until(pilot, lambda: infos(app)[-1].startswith("Nothing to copy yet"), 20)
        await send(pilot, "what do the notes say?")
        await wait_until(pilot, lambda: any("That is all." in a for a in answers(app)), 20)

        await send(pilot, "/copy", wait=False)
        await wait_until(pilot, lambda: bool(app.clipboard), 20)
        assert app.clipboard == "The notes say:\n\n```\nuse ``` fences\n```\n\nThat is all."

        session_id = app.session.session_id
        await send(pilot, "/export", wait=False)
        exported = workdir / f"turnstone-{session_id}.md"
        await wait_until(pilot, lambda: exported.exists(), 20, "the export")
        assert infos(app)[-1] == f"Exported 4 messages to {exported}"
        text = exported.read_text()
        assert text.index("## You\n\nwhat do the notes say?") < text.index("**Tool call: `read_file`**")
        assert '"path": "notes.txt"' in text
        assert "Result:\n\n````\n     1\tuse ``` fences\n````" in text, (
            "the result is fenced past its own backticks"
        )
        assert text.rstrip().endswith("That is all.")

        before = text
        await send(pilot, "/export", wait=False)  # the same default name again: refused, the file kept
        await wait_until(pilot, lambda: bool(errors(app)), 20)
        assert errors(app)[-1].startswith(f"/export: {exported} exists")
        assert exported.read_text() == before
        await send(pilot, "/export out/chat.md", wait=False)  # no such folder: an error, no crash
        await wait_until(pilot, lambda: len(errors(app)) == 2, 20)
        assert "/export: could not write" in errors(app)[-1]
        await send(pilot, "/export chat.md", wait=False)
        await wait_until(pilot, lambda: (workdir / "chat.md").exists(), 20)
        await wait_until(pilot, lambda: (workdir / "chat.md").read_text() == before, 20)
