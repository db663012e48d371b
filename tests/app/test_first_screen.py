"""What the app does before its first frame (issue 11 item 2): the first screen parses each
stylesheet once and no other screen's, and mounts nothing the user has not asked for yet.

Counted, not timed (the speed is bench/cold_start.py's): Textual's parser is wrapped to record the
sources it parses while the app starts with its engine held back.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
import textual.css.stylesheet as stylesheet_module

from tests.app.helpers import wait_until
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.core.resources import styles_dir
from turnstone_tui.runtime import Runtime

SIZE = (100, 30)


def held_app(tmp_path: Path) -> TurnstoneApp:
    """The app as the console script starts it, its engine never arriving (the first screen only)."""

    async def never() -> Runtime:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return TurnstoneApp(runtime_factory=never, cwd=tmp_path)


async def test_the_first_screen_parses_its_stylesheets_once_and_no_other_screens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: Counter[str] = Counter()
    real_parse = stylesheet_module.parse

    def counting_parse(scope, css, read_from, **kwargs):  # noqa: ANN001, ANN202
        parsed[str(read_from[0])] += 1
        return real_parse(scope, css, read_from, **kwargs)

    monkeypatch.setattr(stylesheet_module, "parse", counting_parse)
    app = held_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.is_mounted and app.prompt.has_focus, what="the first screen")
        await pilot.pause()
        ours = {Path(source).name: count for source, count in parsed.items() if source.endswith(".tcss")}
        # Each read once (a mode's screen had main.tcss and every default style re-parsed twice more)
        assert ours == {"app.tcss": 1, "main.tcss": 1}, ours
        assert sorted(p.name for p in styles_dir().glob("*.tcss")) != ["app.tcss", "main.tcss"]


async def test_starting_runs_no_after_turn_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before any turn there is nothing to collect after: the after-turn collection (0.2 s after a
    turn ends) once also ran at start-up, and on a loaded machine it read the chat before the first
    screen had mounted one, which ended the app (NoMatches)."""
    collections: list[float] = []
    real = TurnstoneApp._collect_after_turn

    def counting(self: TurnstoneApp) -> None:
        collections.append(asyncio.get_running_loop().time())
        real(self)

    monkeypatch.setattr(TurnstoneApp, "_collect_after_turn", counting)
    app = held_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.is_mounted and app.prompt.has_focus, what="the first screen")
        await pilot.pause(0.6)
        assert collections == []
        app.busy = True
        app.busy = False
        await wait_until(pilot, lambda: len(collections) == 1, what="the collection after a turn")


async def test_the_first_screen_mounts_no_pane_grid_or_mcp_panel_until_used(tmp_path: Path) -> None:
    """Hidden at start, so not mounted at start: the bash panes' grid comes with the first bash
    call (above the prompt, where the layout had it), the MCP panel with F2."""
    from turnstone_tui.widgets.mcp_panel import McpPanel
    from turnstone_tui.widgets.pane_grid import ParallelPanes

    app = held_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.is_mounted and app.prompt.has_focus, what="the first screen")
        await pilot.pause()
        assert not app.query(ParallelPanes) and not app.query(McpPanel)
        assert app.main.mounted_panes is None

        app.panes.start("call_1", "make")
        app.panes.write("call_1", "building")
        await wait_until(pilot, lambda: app.panes.is_mounted and app.panes.display, what="the panes")
        order = [child.id for child in app.main.children if child.id]
        assert order.index("panes") == order.index("prompt-area") - 1, order
        assert app.query_one(ParallelPanes) is app.main.mounted_panes
        await wait_until(pilot, lambda: app.panes.pane("call_1").lines == ["building"], what="the line")


def test_the_console_script_draws_the_first_frame_before_reading_the_tool_definitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_app`` hands over to the app without reading ``tools/*.json`` (the engine reads them
    after the first frame; a broken one is said on the screen as the session fails to start)."""
    from turnstone_tui import cli
    from turnstone_tui.config import Config
    from turnstone_tui.core import registry

    monkeypatch.setenv("TURNSTONE_LOG_FILE", str(tmp_path / "log"))  # no log routing to the user's dir
    read_before_run: list[int] = []

    def run(self: TurnstoneApp) -> None:
        read_before_run.append(registry.default_registry.cache_info().currsize)

    monkeypatch.setattr(TurnstoneApp, "run", run)
    registry.default_registry.cache_clear()
    args = cli.build_parser().parse_args([])
    assert cli.run_app(Config(), args) == 0
    assert read_before_run == [0]


def test_the_console_script_runs_the_app_with_a_short_gil_switch_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual writes frames from a thread of its own: with Python's default 5 ms switch
    interval a frame waited up to 5 ms for the GIL per piece the terminal took while the loop
    worked on."""
    import sys

    from turnstone_tui import cli
    from turnstone_tui.config import Config

    monkeypatch.setenv("TURNSTONE_LOG_FILE", str(tmp_path / "log"))
    seen: list[float] = []
    monkeypatch.setattr(TurnstoneApp, "run", lambda self: seen.append(sys.getswitchinterval()))
    before = sys.getswitchinterval()
    try:
        assert cli.run_app(Config(), cli.build_parser().parse_args([])) == 0
    finally:
        sys.setswitchinterval(before)
    assert seen and seen[0] <= 0.001
