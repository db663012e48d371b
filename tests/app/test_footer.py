"""The key bar recomposes only when the keys it shows change."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from tests.app.helpers import send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.widgets.chat_messages import AssistantMessage
from turnstone_tui.widgets.footer import Footer

pytestmark = pytest.mark.timeout(60)


class FooterHarness(App[None]):
    BINDINGS = [Binding("x", "go", "Go"), Binding("y", "stay", "Stay")]

    def __init__(self) -> None:
        super().__init__()
        self.go_enabled = True

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "go":
            return self.go_enabled or None  # None: shown disabled
        return True

    def action_go(self) -> None:
        pass

    def action_stay(self) -> None:
        pass


async def test_a_bindings_refresh_that_changes_no_key_does_not_recompose_the_footer() -> None:
    """Textual recomposes the footer (every key unmounted, new ones mounted, a full layout) on
    every bindings refresh; most refreshes (a turn's state changes, a card's status) change no
    key. Only a refresh that changes what a key shows rebuilds the keys."""
    app = FooterHarness()
    async with app.run_test(size=(80, 10)) as pilot:
        footer = app.query_one(Footer)
        await wait_until(pilot, lambda: len(footer.children) >= 2, 20, "the keys shown")
        keys = list(footer.children)
        for _ in range(3):
            app.refresh_bindings()
            await pilot.pause()
        await pilot.pause()
        assert list(footer.children) == keys  # the same key widgets: not recomposed
        app.go_enabled = False
        app.refresh_bindings()
        await wait_until(pilot, lambda: list(footer.children) != keys, 20, "the keys rebuilt")
        go = [key for key in footer.children if getattr(key, "action", None) == "go"]
        assert go and go[0].has_class("-disabled")


async def test_the_key_bar_drops_cancel_only_after_a_frame_showing_the_whole_answer(
    app: TurnstoneApp, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a turn ends the key bar loses "esc Cancel turn": its keys are rebuilt (unmounted, new
    ones mounted, a layout). The engine ends its turn as soon as the answer's last words are read,
    while they are still on their way to the screen, and a rebuild done then went before them
    (~8-15 ms on the way to the answer's frame in traces of bench/terminal_parallel_tools.py). The
    key bar now changes once a frame showing the answer's end was drawn. Five turns, each answer
    in one piece (its last words read with the end of the turn)."""
    marks = [f"ZQ{i}X" for i in range(5)]
    model_server.script([Reply.text(f"The whole answer ends with {mark}.", chunk_size=100) for mark in marks])
    drawn: set[str] = set()  # the marks a frame has shown
    rebuilds: list[tuple[bool, set[str]]] = []  # per rebuild of the keys: cancel shown before, marks drawn
    display = app._display

    def record(screen, renderable) -> None:  # type: ignore[no-untyped-def]
        display(screen, renderable)
        if renderable is not None and screen is app.screen:
            sources = [message.rendered_source for message in app.query(AssistantMessage)]
            drawn.update(mark for mark in marks if any(mark in source for source in sources))

    recompose = Footer.recompose

    async def recording(footer: Footer) -> None:
        if footer._composed is not None and footer.is_attached and footer.shown() != footer._composed:
            cancel = any(key.action == "cancel_turn" for key in footer.query(FooterKey))
            rebuilds.append((cancel, set(drawn)))
        await recompose(footer)

    monkeypatch.setattr(Footer, "recompose", recording)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        monkeypatch.setattr(app, "_display", record)
        for turn in range(len(marks)):
            await send(pilot, f"go {turn}")
            await wait_until(
                pilot,
                lambda t=turn: sum(cancel for cancel, _ in rebuilds) > t,
                30,
                "the key bar's rebuild at the turn's end",
            )
    dropped = [shown for cancel, shown in rebuilds if cancel]
    assert dropped == [set(marks[: i + 1]) for i in range(len(marks))], rebuilds
