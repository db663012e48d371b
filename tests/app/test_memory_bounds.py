"""What a long session leaves behind stays bounded: widgets that left the screen are not kept
alive by the ones that stay (the footer's key bar; the chat's entries)."""

from __future__ import annotations

import gc
import weakref

from textual.widgets import Static
from textual.widgets._footer import FooterKey

from tests.app.helpers import send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
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


async def test_a_removed_widgets_drawn_lines_are_freed_when_a_turn_ends(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    """Textual's ``StylesCache.get_inner_outer`` (an lru_cache on a method) keeps the line cache of
    the last 1024 widgets that drew, removed or not; at the end of a turn the app lets go of those
    (app/textual_caches.py). A widget drawn and removed: after the next turn, nothing keeps its
    drawn lines alive (Textual's cache did before)."""
    model_server.script([Reply.text("Done.")])
    async with app.run_test() as pilot:
        await start(pilot)
        note = Static("drawn, then removed")
        await app.chat.mount(note)  # (in the chat: the turn's new entries refresh its list of children)
        lines = weakref.ref(note._styles_cache)
        await wait_until(pilot, lambda: getattr(lines(), "_cache", None), 20, "the note drawn")
        await note.remove()
        del note
        await send(pilot, "hello")

        def freed() -> bool:
            gc.unfreeze()  # (the app freezes what survives its collections: a widget is a cycle)
            gc.collect()
            return lines() is None

        await wait_until(pilot, freed, 30, "the note's lines freed")
