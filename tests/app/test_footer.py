"""The key bar recomposes only when the keys it shows change."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from tests.app.helpers import wait_until
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
