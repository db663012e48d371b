"""What a long session leaves behind stays bounded: widgets that left the screen are not kept
alive by the ones that stay (the footer's key bar; the chat's entries)."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from tests.app.helpers import start, wait_until
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.widgets.footer import Footer


async def test_the_footer_keeps_only_the_keys_it_shows(app: TurnstoneApp) -> None:
    """The footer recomposes whenever the bindings change (focus moves, a turn starts or ends).
    The keys of earlier composes must not stay on its watcher list (Textual keeps them there until
    ``compact`` changes, which it never does: a few keys leaked per turn)."""
    async with app.run_test() as pilot:
        await start(pilot)
        footer = app.screen.query_one(Footer)
        for n in range(12):
            (app.chat if n % 2 else app.query_one("#prompt")).focus()
            app.screen.refresh_bindings()
            await pilot.pause(0.05)
        await wait_until(pilot, lambda: footer.query(FooterKey), 20, "the footer's keys")
        await pilot.pause(0.2)
        shown = len(footer.query(FooterKey))
        assert shown > 0
        assert footer.watcher_count <= shown
