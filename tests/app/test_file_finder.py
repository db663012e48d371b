"""The fuzzy file finder behind @ in the prompt (pure functions) and in the real app (Pilot)."""

from __future__ import annotations

from pathlib import Path

from tests.app.helpers import infos, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.widgets.file_finder import FileIndex, fuzzy_find, fuzzy_match, list_project_paths

PATHS = [
    "README.md",
    "styles/app.tcss",
    "styles/panes.tcss",
    "turnstone_tui/app/app.py",
    "turnstone_tui/core/session.py",
    "turnstone_tui/app/screens/sessions.py",
    "turnstone_tui/widgets/pane_grid.py",
    "turnstone_tui/widgets/prompt_input.py",
    "tests/app/test_panes.py",
]


def best(query: str) -> str:
    return fuzzy_find(query, PATHS)[0].path


def test_abbreviations_find_the_file_a_user_means() -> None:
    assert best("pgrid") == "turnstone_tui/widgets/pane_grid.py"
    assert best("apptcss") == "styles/app.tcss"
    assert best("coresess") == "turnstone_tui/core/session.py"
    assert best("promptin") == "turnstone_tui/widgets/prompt_input.py"
    assert best("readme") == "README.md"
    assert fuzzy_find("zzz", PATHS) == []


def test_a_match_knows_which_characters_matched() -> None:
    match = fuzzy_match("pgr", "widgets/pane_grid.py")
    assert match is not None
    assert "".join(match.path[i] for i in match.positions) == "pgr"
    assert match.positions[0] == len("widgets/")  # at the start of the name, not inside "widgets"


def test_listing_skips_vcs_virtualenvs_and_hidden_and_is_bounded(tmp_path: Path) -> None:
    for folder in (".git", ".venv", "node_modules", "__pycache__", "src/deep"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "file.py").write_text("")
    (tmp_path / ".env").write_text("")
    (tmp_path / "main.py").write_text("")
    assert list_project_paths(tmp_path) == ["main.py", "src/", "src/deep/", "src/deep/file.py"]
    assert len(list_project_paths(tmp_path, limit=2)) == 2
    index = FileIndex(tmp_path)
    assert [m.path for m in index.search("deepfile")] == ["src/deep/file.py"]


async def test_at_fuzzy_finds_a_file_and_its_contents_reach_the_model(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    workdir = Path(app.cwd)
    (workdir / "turnstone_tui" / "widgets").mkdir(parents=True)
    (workdir / "turnstone_tui" / "widgets" / "pane_grid.py").write_text("GRID_MARKER = 42\n")
    (workdir / "turnstone_tui" / "widgets" / "prompt_input.py").write_text("")
    (workdir / "huge.log").write_text("line\n" * 30_000)
    model_server.script([Reply.text("It defines GRID_MARKER."), Reply.text("A log.")])
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        await pilot.click("#prompt")
        for char in "what is in @pgrid":
            await pilot.press("space" if char == " " else char)
        menu = app.query_one("#completion-menu")
        await wait_until(
            pilot,
            lambda: menu.display and menu.completions[0].replacement == "turnstone_tui/widgets/pane_grid.py",  # type: ignore[attr-defined]
            what="the fuzzy match first",
        )
        await pilot.press("tab")
        assert app.prompt.text == "what is in @turnstone_tui/widgets/pane_grid.py"
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.turns_finished == 1 and not app.busy, 20, "the turn")
        sent = model_server.model_requests()[-1].body["messages"][-1]["content"]
        assert sent.startswith("what is in @turnstone_tui/widgets/pane_grid.py\n\n<attached-file")
        assert "GRID_MARKER = 42" in sent
        assert any(t.startswith("Attached: turnstone_tui/widgets/pane_grid.py") for t in infos(app))
        # The chat shows what the user typed, not the file.
        assert "GRID_MARKER" not in "".join(str(m.render()) for m in app.query("UserMessage"))
        # A big file is cut, and the user is told.
        app.prompt.insert("and @huge.log")
        await pilot.press("escape")  # close the completion menu
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.turns_finished == 2 and not app.busy, 20, "the second turn")
        sent = model_server.model_requests()[-1].body["messages"][-1]["content"]
        assert "[cut: the first 50,000 of 150,000 characters are attached]" in sent
        assert len(sent) < 51_000
        assert any("huge.log: cut to 50,000 chars of 150,000" in t for t in infos(app))
        # Resumed, the conversation shows the words and what was attached, not the file's text.
        first_id = app.session.session_id
        app.run_slash_command("/new")
        await wait_until(
            pilot,
            lambda: app.session is not None and app.session.session_id != first_id and app.ready,
            20,
            "a new session",
        )
        app.run_slash_command(f"/resume {first_id}")
        await wait_until(
            pilot,
            lambda: app.session is not None and app.session.session_id == first_id and app.ready,
            20,
            "resumed",
        )
        await pilot.pause()
        users = [str(m.render()) for m in app.query("UserMessage")]
        assert any("what is in @turnstone_tui/widgets/pane_grid.py" in u for u in users)
        assert not any("GRID_MARKER" in u for u in users)
        assert "Attached: turnstone_tui/widgets/pane_grid.py" in infos(app)
        # The prompt history holds what was typed, not the attached files.
        assert app.prompt.prompt_history[-2:] == [
            "what is in @turnstone_tui/widgets/pane_grid.py",
            "and @huge.log",
        ]
