"""Full garbage collections are put off while a turn streams and run when it ends; what survives
is frozen, and cyclic garbage among frozen objects is still freed."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from collections.abc import Iterator

import pytest

from tests.app.helpers import send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app import gc_pacing
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.gc_pacing import GcPacer


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pacer's clock, moved by hand (``now[0] += seconds``)."""
    clock = [1000.0]
    monkeypatch.setattr(gc_pacing.time, "monotonic", lambda: clock[0])
    return clock


@pytest.fixture
def restore_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


def test_a_turn_defers_collections_and_its_end_runs_one(restore_gc: None) -> None:
    normal = gc.get_threshold()
    pacer = GcPacer(max_deferral=60)
    pacer.turn_started()
    assert pacer.deferring
    assert gc.get_threshold()[:2] == normal[:2] and gc.get_threshold()[2] > 10_000
    pacer.turn_ended()
    assert not pacer.deferring
    assert gc.get_threshold() == normal
    assert pacer.collections == 1


def test_a_long_turn_still_collects(restore_gc: None) -> None:
    pacer = GcPacer(max_deferral=0.0)
    pacer.tick()
    assert pacer.collections == 0  # not in a turn: the interpreter's own schedule applies
    pacer.turn_started()
    pacer.tick()
    assert pacer.collections == 1
    assert pacer.deferring


def test_a_long_turn_collects_at_a_quiet_moment_if_one_comes(restore_gc: None, now: list[float]) -> None:
    pacer = GcPacer(max_deferral=30)
    pacer.turn_started()
    now[0] += 31
    pacer.tick(quiet=False)  # due, but output is streaming: wait for a pause
    assert pacer.collections == 0
    pacer.tick(quiet=True)
    assert pacer.collections == 1
    now[0] += 31 * gc_pacing.QUIET_WAIT_FACTOR
    pacer.tick(quiet=False)  # no pause came for long: collect anyway
    assert pacer.collections == 2


def test_freezing_waits_for_the_end_of_a_turn(restore_gc: None) -> None:
    pacer = GcPacer()
    pacer.turn_started()
    pacer.freeze_startup()
    assert gc.get_freeze_count() == 0  # not in the middle of a streaming turn
    pacer.turn_ended()
    assert gc.get_freeze_count() > 1000
    pacer.restore()


def test_freezing_moves_startup_objects_out_of_collections(restore_gc: None) -> None:
    pacer = GcPacer()
    pacer.freeze_startup()
    assert gc.get_freeze_count() > 1000
    pacer.restore()
    assert gc.get_freeze_count() == 0


async def test_the_app_defers_during_a_turn_and_restores_after(
    app: TurnstoneApp, model_server: ScriptedModelServer, restore_gc: None
) -> None:
    normal = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    model_server.script([Reply.text("one two three four five six", chunk_size=3, delay=0.05)])
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        for _ in range(60):  # start-up objects are frozen a second after the session is ready
            if gc.get_freeze_count() > 1000:
                break
            await pilot.pause(0.05)
        assert gc.get_freeze_count() > 1000
        original = app.bridge.on_content_token

        def spy(text: str) -> None:
            seen.append(gc.get_threshold())
            original(text)

        app.bridge.on_content_token = spy  # type: ignore[method-assign]
        await send(pilot, "hi")
        assert seen and all(threshold[2] > 10_000 for threshold in seen)
        # (the prompt was typed within the second before the turn ended: its collection waits for
        # that second to pass)
        await wait_until(pilot, lambda: not app._gc.deferring and not app._gc.waiting_for_typing, 30)
        assert gc.get_threshold() == normal
        assert app._gc.collections >= 1
    assert gc.get_freeze_count() == 0


async def test_the_collection_after_a_turn_waits_for_the_frame_that_shows_the_answer(
    app: TurnstoneApp, model_server: ScriptedModelServer, restore_gc: None
) -> None:
    """The answer is settled (its widgets hold all of it) before the frame that shows its end is
    drawn; on a loaded machine that frame can come later than the end-of-turn check, and a full
    collection (up to a second) must not go ahead of it. Frames are held here after the turn."""
    model_server.script([Reply.text("the answer, at last", chunk_size=4, delay=0.01)])
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        screen = app.screen
        collected_while_held: list[bool] = []
        holding = False
        real_turn_ended = app._gc.turn_ended

        def turn_ended() -> None:
            if app._gc.deferring:  # the end of a turn (not of the start-up)
                collected_while_held.append(holding)
            real_turn_ended()

        app._gc.turn_ended = turn_ended  # type: ignore[method-assign]
        timer = screen._update_timer
        real_resume = timer.resume
        finished = app.turns_finished
        await send(pilot, "hi", wait=False)
        # From the turn's end on, no frame is drawn until released (a slow frame).
        for _ in range(3000):
            if app.turns_finished > finished and not app.busy:
                break
            await asyncio.sleep(0.005)
        assert app.turns_finished > finished
        holding = True
        timer.resume = lambda: None  # type: ignore[method-assign]
        screen.refresh()
        await asyncio.sleep(1.0)  # the end-of-turn check runs 0.2 s after the turn
        assert collected_while_held == []
        holding = False
        timer.resume = real_resume  # type: ignore[method-assign]
        real_resume()
        await wait_until(pilot, lambda: collected_while_held, 15, "the collection")
        assert collected_while_held == [False]


@pytest.mark.parametrize("during_a_turn", [False, True])
def test_the_end_of_start_up_turns_the_collector_back_on(restore_gc: None, during_a_turn: bool) -> None:
    """The console script starts the app with the collector off (``cli.entry``): the end of
    start-up turns it on, also when the freeze itself waits for a turn's end."""
    pacer = GcPacer(max_deferral=60)
    if during_a_turn:
        pacer.turn_started()
    gc.disable()
    try:
        pacer.freeze_startup()
        assert gc.isenabled()
    finally:
        gc.enable()
        pacer.turn_ended()


def test_scrolling_defers_collections_until_it_settles(restore_gc: None) -> None:
    normal = gc.get_threshold()
    pacer = GcPacer(max_deferral=60)
    pacer.scrolling()
    pacer.scrolling()
    assert gc.get_threshold()[:2] == normal[:2] and gc.get_threshold()[2] > 10_000
    assert pacer.collections == 0
    pacer.scroll_settled()
    assert gc.get_threshold() == normal
    assert pacer.collections == 1
    pacer.scroll_settled()  # nothing put off any more
    assert pacer.collections == 1


def test_scrolling_during_a_turn_leaves_the_collection_to_the_turns_end(restore_gc: None) -> None:
    pacer = GcPacer(max_deferral=60)
    pacer.turn_started()
    pacer.scrolling()
    pacer.scroll_settled()
    assert pacer.collections == 0 and gc.get_threshold()[2] > 10_000  # the turn still defers
    pacer.turn_ended()
    assert pacer.collections == 1
    pacer.scrolling()  # a turn's end restored the threshold; scrolling defers again
    assert gc.get_threshold()[2] > 10_000


def test_scrolling_for_long_still_collects(restore_gc: None, now: list[float]) -> None:
    pacer = GcPacer(max_deferral=30)
    pacer.scrolling()
    now[0] += 29
    pacer.scrolling()
    assert pacer.collections == 0
    now[0] += 2
    pacer.scrolling()
    assert pacer.collections == 1
    assert gc.get_threshold()[2] > 10_000  # and it goes on deferring


async def test_paging_through_the_chat_defers_collections_until_it_stops(
    app: TurnstoneApp, restore_gc: None
) -> None:
    normal = gc.get_threshold()
    async with app.run_test(size=(100, 20)) as pilot:
        await start(pilot)
        for n in range(30):
            await app.chat.add_user(f"question {n}")
        await wait_until(pilot, lambda: app.chat.max_scroll_y > 20, 30, "the chat to overflow")
        await wait_until(pilot, lambda: gc.get_freeze_count() > 1000, 30, "the start-up freeze")
        collections = app._gc.collections
        await pilot.press("pageup")
        await pilot.pause()
        assert gc.get_threshold()[2] > 10_000  # no automatic full collection while paging
        assert app._gc.collections == collections
        await pilot.press("pageup")
        await wait_until(pilot, lambda: app._gc.collections > collections, 30, "the put-off collection")
        assert gc.get_threshold() == normal


class _Node:
    """A tracked object in a reference cycle (as a widget and its parent, styles and queue are)."""

    def __init__(self) -> None:
        self.me = self


def _is_walked(obj: object) -> bool:
    """Whether collections still look at ``obj`` (frozen objects are in no generation)."""
    return any(candidate is obj for candidate in gc.get_objects())


def test_what_survives_a_turn_is_frozen_so_later_collections_skip_it(restore_gc: None) -> None:
    pacer = GcPacer()
    pacer.freeze_startup()
    frozen = gc.get_freeze_count()
    pacer.turn_started()
    survivor = _Node()
    assert _is_walked(survivor)
    pacer.turn_ended()
    assert not _is_walked(survivor)  # the next turn's collection does not walk it again
    assert gc.get_freeze_count() > frozen
    assert pacer.thorough_collections == 1  # the start-up one only: little grew since


def _nodes_worth(fraction: float, of: int) -> list[_Node]:
    """Nodes enough to grow the heap by ``fraction`` of ``of`` memory blocks."""
    start = sys.getallocatedblocks()
    nodes: list[_Node] = []
    while sys.getallocatedblocks() - start < fraction * of:
        nodes.extend(_Node() for _ in range(1000))
    return nodes


def test_cyclic_garbage_among_frozen_objects_is_freed_once_the_heap_grew_by_the_ratio(
    restore_gc: None,
) -> None:
    pacer = GcPacer()
    pacer.freeze_startup()
    base = sys.getallocatedblocks()
    pacer.turn_started()
    pruned = _nodes_worth(gc_pacing.GROWTH_RATIO * 0.5, base)
    probe = weakref.ref(pruned[0])
    pacer.turn_ended()  # they are alive at the turn's end: frozen
    del pruned
    for _ in range(3):  # garbage under the ratio is kept a while
        pacer.turn_started()
        pacer.turn_ended()
    assert probe() is not None
    assert pacer.thorough_collections == 1
    pacer.turn_started()
    more = _nodes_worth(gc_pacing.GROWTH_RATIO * 0.7, base)
    pacer.turn_ended()  # with these the heap grew by more than the ratio: a thorough one
    assert pacer.thorough_collections == 2
    assert probe() is None
    assert more[0].me is more[0]


async def test_a_widget_removed_after_it_was_frozen_is_freed_by_the_thorough_collection(
    app: TurnstoneApp, model_server: ScriptedModelServer, restore_gc: None
) -> None:
    """Frozen objects are never looked at by the collection after a turn, so a widget pruned from
    the chat after it was frozen (a cycle: its parent, styles and message queue refer to it) waits
    for the thorough collection that the frozen objects' growth brings (forced here: ratio 0)."""
    model_server.script([Reply.text(f"answer number {n}") for n in range(1, 4)])
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        await wait_until(pilot, lambda: gc.get_freeze_count() > 1000, 30, "the start-up freeze")
        app._gc.growth_ratio = 1_000.0  # no thorough collection until asked
        collections = app._gc.collections
        await send(pilot, "one")
        await wait_until(pilot, lambda: app._gc.collections > collections, 30, "the turn's collection")
        answer = app.chat.last_answer
        assert answer is not None and not _is_walked(answer)  # frozen
        probe = weakref.ref(answer)
        await answer.remove()
        del answer
        collections = app._gc.collections
        await send(pilot, "two")
        await wait_until(pilot, lambda: app._gc.collections > collections, 30, "the turn's collection")
        assert probe() is not None  # garbage, but frozen: not looked at
        app._gc.growth_ratio = 0.0
        thorough = app._gc.thorough_collections
        await send(pilot, "three")
        await wait_until(pilot, lambda: app._gc.thorough_collections > thorough, 30, "a thorough collection")
        assert probe() is None


def test_the_collection_after_a_turn_waits_for_a_pause_in_the_typing(
    restore_gc: None, now: list[float]
) -> None:
    """A user typing ahead while the answer streams must not have their keys held by the turn's
    collection (a thorough one takes 0.5 s and more in a long session): it runs at a pause."""
    normal = gc.get_threshold()
    pacer = GcPacer(max_deferral=30)
    pacer.turn_started()
    now[0] += 5
    pacer.key_pressed()
    now[0] += 0.2
    pacer.turn_ended()
    assert pacer.collections == 0 and pacer.waiting_for_typing
    assert gc.get_threshold()[2] > 10_000  # the automatic full collections wait too
    now[0] += 0.5
    pacer.key_pressed()
    now[0] += 0.7
    pacer.tick()
    assert pacer.collections == 0  # a key 0.7 s ago: still typing
    now[0] += 0.4
    pacer.tick()
    assert pacer.collections == 1 and not pacer.waiting_for_typing
    assert gc.get_threshold() == normal
    pacer.tick()
    assert pacer.collections == 1


def test_typing_without_a_pause_still_gets_its_collection(restore_gc: None, now: list[float]) -> None:
    pacer = GcPacer(max_deferral=30)
    pacer.turn_started()
    pacer.key_pressed()
    pacer.turn_ended()
    for _ in range(29):
        now[0] += 1
        pacer.key_pressed()
        pacer.tick()
    assert pacer.collections == 0
    now[0] += 1.5
    pacer.key_pressed()
    pacer.tick()
    assert pacer.collections == 1


def test_sending_the_typed_prompt_runs_the_collection_put_off_for_it(
    restore_gc: None, now: list[float]
) -> None:
    """The user typed through the end of a turn and sent the next prompt without a pause: the
    put-off collection runs as that turn starts (before its answer streams), not later while
    they type ahead again."""
    pacer = GcPacer(max_deferral=30)
    for turn in range(1, 4):  # turns of 10 s, each typed through and the next sent at once
        pacer.turn_started()
        assert pacer.collections == turn - 1 and not pacer.waiting_for_typing
        assert pacer.deferring and gc.get_threshold()[2] > 10_000
        now[0] += 10
        pacer.key_pressed()
        pacer.turn_ended()
        assert pacer.collections == turn - 1 and pacer.waiting_for_typing
    pacer.turn_started()
    assert pacer.collections == 3
    pacer.turn_ended()  # no key since it started (the prompt that started it does not count)
    assert pacer.collections == 4 and not pacer.waiting_for_typing


def test_the_start_up_freeze_waits_for_a_pause_in_the_typing(restore_gc: None, now: list[float]) -> None:
    """Typing in the first second: the start-up's collection (everything alive walked) waits."""
    pacer = GcPacer(max_deferral=30)
    pacer.key_pressed()
    gc.disable()
    pacer.freeze_startup()
    assert gc.isenabled()
    assert pacer.thorough_collections == 0 and gc.get_freeze_count() == 0
    now[0] += 1.5
    pacer.tick()
    assert pacer.thorough_collections == 1 and gc.get_freeze_count() > 1000


def test_each_collection_first_lets_go_of_what_it_is_given(restore_gc: None) -> None:
    calls: list[int] = []
    pacer = GcPacer(before_collection=lambda: calls.append(gc.get_count()[2]))
    pacer.freeze_startup()  # thorough
    pacer.turn_started()
    pacer.turn_ended()  # ordinary
    assert len(calls) == 2


async def test_keys_typed_across_the_end_of_a_turn_put_off_its_collection(
    app: TurnstoneApp, model_server: ScriptedModelServer, restore_gc: None
) -> None:
    """In the app: the user types on while the answer ends; no full collection runs until they
    stop for a second, then it does."""
    model_server.script([Reply.text("the answer comes in slowly", chunk_size=3, delay=0.05)])
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot)
        await wait_until(pilot, lambda: gc.get_freeze_count() > 1000, 30, "the start-up freeze")
        collections = app._gc.collections
        finished = app.turns_finished
        await send(pilot, "hi", wait=False)
        loop = asyncio.get_running_loop()
        typing_until: float | None = None
        while typing_until is None or loop.time() < typing_until:
            await pilot.press("x")
            await asyncio.sleep(0.25)
            if typing_until is None and app.turns_finished > finished and not app.busy:
                typing_until = loop.time() + 2.0  # type on for 2 s after the turn ended
            assert app._gc.collections == collections, "a collection ran while the user typed"
        assert app._gc.waiting_for_typing
        await wait_until(pilot, lambda: app._gc.collections > collections, 30, "the put-off collection")
        assert not app._gc.waiting_for_typing
        assert "xxxx" in app.prompt.text
