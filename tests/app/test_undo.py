"""/undo in the app: a real turn edits and creates files, /undo shows what it will do, puts them back
and tells the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.helpers import answers, infos, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.approval import ApprovalScreen
from turnstone_tui.app.screens.undo import UndoScreen
from turnstone_tui.core.checkpoints import UNDO_NOTE_KIND

pytestmark = pytest.mark.timeout(90)
SIZE = (100, 34)


def script_edit_turn(model_server: ScriptedModelServer) -> None:
    model_server.script(
        [
            Reply.tools([("read_file", {"path": "calc.py"}, "call_read")]),
            Reply.tools(
                [
                    (
                        "edit_file",
                        {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                        "call_e",
                    ),
                    ("write_file", {"path": "test_calc.py", "content": "assert add(1, 2) == 3\n"}, "call_w"),
                ]
            ),
            Reply.text("Fixed add and wrote a test."),
            Reply.text("Understood."),
        ]
    )


async def run_edit_turn(pilot, app: TurnstoneApp) -> None:
    await send(pilot, "fix add", wait=False)
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), 20, "the approval modal")
    await pilot.press("y")
    await wait_until(pilot, lambda: "Fixed add and wrote a test." in answers(app), 30, "the answer")
    await wait_until(pilot, lambda: not app.busy, 20)


async def test_undo_puts_the_files_back_and_tells_the_model(
    app: TurnstoneApp, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    (workdir / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script_edit_turn(model_server)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "/undo", wait=False)
        await wait_until(pilot, lambda: infos(app)[-1].startswith("Nothing to undo"), 20)

        await run_edit_turn(pilot, app)
        assert "a + b" in (workdir / "calc.py").read_text() and (workdir / "test_calc.py").exists()

        await send(pilot, "/undo", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, UndoScreen), 20, "the undo screen")
        await pilot.press("n")
        await wait_until(pilot, lambda: infos(app)[-1].startswith("Undo cancelled"), 20)
        assert (workdir / "test_calc.py").exists()

        await send(pilot, "/undo", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, UndoScreen), 20, "the undo screen")
        await pilot.press("y")
        await wait_until(pilot, lambda: infos(app)[-1].startswith("Undone"), 20)
        assert (workdir / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
        assert not (workdir / "test_calc.py").exists()
        notes = [m for m in app.session.messages if m.get("kind") == UNDO_NOTE_KIND]
        assert len(notes) == 1 and "calc.py: restored" in notes[0]["content"]

        await send(pilot, "what now?")
        wire = model_server.model_requests()[-1].body["messages"]
        told = [
            m["content"] for m in wire if m["role"] == "user" and "undid your file changes" in m["content"]
        ]
        assert told and "test_calc.py: deleted" in told[0], "the model learns its files were put back"
        assert "kind" not in wire[-2], "engine-only keys never reach the wire"

        await send(pilot, "/undo", wait=False)  # that turn is used up; the talk-only turn has none
        await wait_until(pilot, lambda: infos(app)[-1].startswith("Nothing to undo"), 20)


async def test_undo_leaves_a_file_the_user_changed_since(
    app: TurnstoneApp, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    (workdir / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script_edit_turn(model_server)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await run_edit_turn(pilot, app)
        (workdir / "calc.py").write_text("# my own version\n")
        await send(pilot, "/undo", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, UndoScreen), 20, "the undo screen")
        screen_text = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "calc.py  left alone: changed since the agent wrote it" in screen_text
        assert "test_calc.py  delete (the agent created it)" in screen_text
        await pilot.press("enter")
        await wait_until(pilot, lambda: infos(app)[-1].startswith("Undone"), 20)
        assert (workdir / "calc.py").read_text() == "# my own version\n"
        assert not (workdir / "test_calc.py").exists()
