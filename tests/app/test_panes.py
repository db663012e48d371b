"""Live bash panes (ParallelPanes / BashPane / OutputLog) and tool cards, driven like the app drives them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Input

from tests.app.helpers import wait_until
from turnstone_tui.core.outcomes import cancelled_result, denied_result
from turnstone_tui.core.types import ExecContext, PreparedItem, ProcessOutcome, ToolResult
from turnstone_tui.executors.bash import run_bash
from turnstone_tui.widgets import clock, pane_grid
from turnstone_tui.widgets import ticker as ticker_module
from turnstone_tui.widgets.bash_pane import BashPane, OutputLog, bash_outcome
from turnstone_tui.widgets.pane_grid import FLUSH_INTERVAL, ParallelPanes
from turnstone_tui.widgets.tool_card import ToolCard

pytestmark = pytest.mark.timeout(60)


class PanesHarness(App[None]):
    def __init__(self, max_lines: int = 5000) -> None:
        super().__init__()
        self.max_lines = max_lines

    def compose(self) -> ComposeResult:
        yield ParallelPanes(max_lines=self.max_lines, id="panes")
        yield Input(id="prompt")

    @property
    def panes(self) -> ParallelPanes:
        return self.query_one(ParallelPanes)


async def real_bash(panes: ParallelPanes, call_id: str, command: str, cwd: Path) -> ToolResult:
    """Run the real bash tool, streaming into the panes the way the app's bridge does."""
    panes.start(call_id, command)

    def emit(lines: list[str], stream: str) -> None:
        panes.write_lines(call_id, lines, stream)  # type: ignore[arg-type]

    return await run_bash(command, ExecContext(call_id, emit), cwd=cwd, time_limit=30, limit=256_000)


async def test_write_is_batched_per_frame_and_keeps_order() -> None:
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "seq 1 100")
        await pilot.pause()
        for i in range(1, 101):
            panes.write("c1", str(i), "stdout")
        assert pane.lines == []  # nothing rendered per line: it waits for the frame's flush
        await wait_until(pilot, lambda: len(pane.lines) == 100, 5)
        assert pane.lines == [str(i) for i in range(1, 101)]


async def test_real_bash_streams_into_two_panes_side_by_side(tmp_path: Path) -> None:
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        assert not panes.display  # hidden while nothing runs
        results = await asyncio.gather(
            real_bash(panes, "a", "for i in 1 2 3; do echo a$i; done", tmp_path),
            real_bash(panes, "b", "echo out; echo oops >&2; exit 1", tmp_path),
        )
        a, b = panes.pane("a"), panes.pane("b")
        assert a is not None and b is not None
        # Lines reach a pane at the next frame's flush.
        await wait_until(pilot, lambda: len(a.lines) == 3 and len(b.lines) == 2, 5)
        assert panes.display and panes.has_class("-two")
        assert a.lines == ["a1", "a2", "a3"]
        assert sorted(b.lines) == ["oops", "out"]
        assert a.region.y == b.region.y and a.region.x < b.region.x  # side by side
        lines_b = panes.finish("b", results[1])
        assert sorted(lines_b) == ["oops", "out"]
        assert panes.pane("b") is None
        await wait_until(pilot, lambda: panes.has_class("-one"), 20, "the grid for one pane")
        panes.finish("a", results[0])
        await pilot.pause()
        assert not panes.display and len(panes) == 0


async def test_grid_for_three_and_four_panes() -> None:
    app = PanesHarness()
    async with app.run_test(size=(120, 40)) as pilot:
        panes = app.panes
        for n in range(4):
            panes.start(f"c{n}", f"sleep {n}")
        await pilot.pause()
        assert panes.has_class("-four")
        regions = [p.region for p in panes.query(BashPane)]
        assert len({r.y for r in regions}) == 2 and len({r.x for r in regions}) == 2  # 2x2
        panes.finish("c3", ToolResult("[exit code: 0]", process=ProcessOutcome(0)))
        await pilot.pause()
        assert panes.has_class("-four") and len(panes) == 3


async def test_pane_is_bounded_and_returns_only_the_newest_lines() -> None:
    app = PanesHarness(max_lines=100)
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "seq 1 1000")
        for i in range(1, 1001):
            panes.write("c1", str(i))
        await wait_until(pilot, lambda: pane.log_view.total_lines == 1000, 5)  # batched per frame
        assert pane.log_view.line_count == 100
        assert pane.log_view.total_lines == 1000
        lines = panes.finish("c1", ToolResult("[exit code: 0]", process=ProcessOutcome(0)))
        assert lines == [str(i) for i in range(901, 1001)]


async def test_follows_the_end_unless_the_user_scrolled_up() -> None:
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "yes")
        for i in range(200):
            panes.write("c1", f"line {i}")
        log = pane.log_view
        await wait_until(pilot, lambda: log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y, 5)
        log.scroll_to(y=10, animate=False, immediate=True)
        await pilot.pause()
        for i in range(200, 300):
            panes.write("c1", f"line {i}")
        await wait_until(pilot, lambda: log.line_count >= 300, 5)
        await pilot.pause(0.1)
        assert log.scroll_y == 10  # the user reads on; new output does not yank the view
        log.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        for i in range(300, 310):
            panes.write("c1", f"line {i}")
        await wait_until(pilot, lambda: log.line_count >= 310 and log.scroll_y == log.max_scroll_y, 5)
        assert log.scroll_y == log.max_scroll_y  # back at the end: following again


async def test_the_scrollbar_thumb_follows_when_the_first_batch_overflows() -> None:
    """The first batch scrolls the log before its scrollbar exists; once the scrollbar shows, its
    thumb must be at the end too (it stayed at the top: panes at the end drawn as if at the start)."""
    app = PanesHarness()
    async with app.run_test(size=(90, 16)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "seq 1 30")
        await pilot.pause()
        panes.write_lines("c1", [str(i) for i in range(1, 31)], "stdout")
        log = pane.log_view
        await wait_until(
            pilot, lambda: log.show_vertical_scrollbar and log.scroll_y == log.max_scroll_y > 0, 5
        )
        await pilot.pause(0.1)
        assert log.vertical_scrollbar.position == log.scroll_y


async def test_a_running_pane_grows_without_laying_out_the_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines written into a pane scroll it and leave its size alone, so they lay nothing out
    (Textual's ``virtual_size`` is a layout reactive: every batch written into a pane was a full
    layout of the screen); the pane still shows the newest lines with its scroll bar at the end,
    and a line wider than the pane still brings the horizontal scroll bar (a layout)."""
    app = PanesHarness()
    async with app.run_test(size=(90, 20)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "seq 1 350")
        log = pane.log_view
        panes.write_lines("c1", [str(i) for i in range(1, 101)], "stdout")
        await wait_until(
            pilot, lambda: log.show_vertical_scrollbar and log.scroll_y == log.max_scroll_y > 0, 5
        )
        await pilot.pause(0.1)
        reflows: list[int] = []
        compositor = app.screen._compositor
        real_reflow = compositor.reflow

        def reflow(*args: object, **kwargs: object) -> object:
            reflows.append(log.line_count)
            return real_reflow(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(compositor, "reflow", reflow)
        for start in range(101, 351, 50):
            panes.write_lines("c1", [str(i) for i in range(start, start + 50)], "stdout")
            await wait_until(pilot, lambda end=start + 49: log.line_count == end, 5)
            await pilot.pause()
        await pilot.pause(0.1)
        assert reflows == []
        assert log.virtual_size.height == 350
        assert log.scroll_y == log.max_scroll_y == 350 - log.scrollable_content_region.height
        assert log.vertical_scrollbar.window_virtual_size == 350
        assert log.vertical_scrollbar.position == log.scroll_y
        last_row = log.scrollable_content_region.height - 1
        assert log.render_line(last_row).text.strip() == "350"
        panes.write_lines("c1", ["x" * 200], "stdout")
        await wait_until(pilot, lambda: log.show_horizontal_scrollbar, 5)
        assert log.virtual_size == (200, 351)
        assert reflows  # the new scroll bar was laid out


async def test_ansi_colours_rendered_and_stderr_marked() -> None:
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "ls --color")
        panes.write("c1", "\x1b[1;34mbin\x1b[0m plain")
        panes.write("c1", "broken", "stderr")
        log = pane.log_view
        await wait_until(pilot, lambda: log.line_count >= 2, 5)
        first = log.render_line(0)
        text = "".join(seg.text for seg in first)
        assert "\x1b" not in text and text.startswith("bin plain")
        bin_style = next(seg.style for seg in first if seg.text.startswith("bin"))
        plain_style = next(seg.style for seg in first if "plain" in seg.text)
        assert bin_style is not None and bin_style.bold and bin_style.color is not None
        assert bin_style.color != plain_style.color
        err_style = next(seg.style for seg in log.render_line(1) if "broken" in seg.text)
        assert err_style is not None and err_style.color != plain_style.color


async def test_status_colours_from_real_results(tmp_path: Path) -> None:
    async def result_of(command: str) -> ToolResult:
        return await run_bash(
            command, ExecContext("x", lambda *_: None), cwd=tmp_path, time_limit=1, limit=10_000
        )

    assert bash_outcome(await result_of("echo fine")).kind == "ok"
    assert bash_outcome(await result_of("exit 1")).kind == "warning"
    assert bash_outcome(await result_of("exit 3")).label == "exit 3"
    timed_out = bash_outcome(await result_of("sleep 5"))
    assert (timed_out.kind, timed_out.label) == ("error", "timed out")
    assert bash_outcome(await result_of("echo killed; echo cancelled")).kind == "ok"  # output is not status
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.panes.start("c1", "exit 2")
        await pilot.pause()
        pane.set_result(await result_of("exit 2"))
        await pilot.pause()
        assert pane.has_class("-error")
        status = pane.query_one(".bash-pane--status")
        assert "exit 2" in str(status.render())


async def test_frozen_clock_freezes_spinner_and_elapsed() -> None:
    clock.freeze(1000.0)
    try:
        app = PanesHarness()
        async with app.run_test(size=(100, 30)) as pilot:
            pane = app.panes.start("c1", "sleep 10")
            await pilot.pause(0.3)
            status = str(pane.query_one(".bash-pane--status").render())
            await pilot.pause(0.3)
            assert str(pane.query_one(".bash-pane--status").render()) == status
            assert status == f"{clock.spinner_frame()} 0.0s"
    finally:
        clock.freeze(None)


async def test_a_flooding_pane_does_not_block_the_input() -> None:
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        panes.start("flood", "yes")
        stop = asyncio.Event()

        async def flood() -> None:
            n = 0
            while not stop.is_set():
                for _ in range(2000):
                    panes.write("flood", f"y {n}")
                    n += 1
                await asyncio.sleep(0)

        prompt = app.query_one(Input)
        prompt.focus()
        await pilot.pause()
        task = asyncio.create_task(flood())
        await asyncio.sleep(0.1)
        for char in "hello":
            app.post_message(events.Key(char, char))
        # The flood never stops by itself: the keys must be handled while it runs (a starved
        # input would never show them). How fast is the benchmarks' business (bench/terminal_keys.py).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if prompt.value == "hello":
                break
            await asyncio.sleep(0.005)
        typed_while_flooding = prompt.value
        stop.set()
        await task
        assert typed_while_flooding == "hello"
        flooded = panes.pane("flood")
        assert flooded is not None
        # The lines reach the pane with the next per-frame flush (on a busy machine the keys can be
        # handled before the first one ran).
        for _ in range(1000):
            if flooded.log_view.total_lines > 2000:
                break
            await asyncio.sleep(0.005)
        assert flooded.log_view.total_lines > 2000


# --- tool cards ---------------------------------------------------------------------------


class CardHarness(App[None]):
    def __init__(self, item: PreparedItem) -> None:
        super().__init__()
        self.item = item
        self.toggles: list[bool] = []

    def compose(self) -> ComposeResult:
        yield ToolCard(self.item)

    def on_tool_card_toggled(self, event: ToolCard.Toggled) -> None:
        self.toggles.append(event.expanded)


def bash_item() -> PreparedItem:
    return PreparedItem("c1", "bash", {"command": "seq 1 50"}, header="bash: seq 1 50", preview_kind="bash")


async def test_card_lifecycle_and_expand_collapse_with_enter_and_click() -> None:
    clock.freeze(50.0)
    try:
        app = CardHarness(bash_item())
        async with app.run_test(size=(100, 40)) as pilot:
            card = app.query_one(ToolCard)
            assert card.status == "pending"
            card.mark_awaiting()
            assert card.has_class("-awaiting")
            card.mark_running()
            assert card.status == "running"
            clock.freeze(52.5)
            card.set_result(
                ToolResult("…\n[exit code: 0]", process=ProcessOutcome(0)), [str(i) for i in range(1, 51)]
            )
            await pilot.pause()
            assert (card.status, card.status_label, card.elapsed) == ("ok", "exit 0", 2.5)
            status = str(card.query_one(".tool-card--status").render())
            assert status == "✓ exit 0 · 2.5s"
            summary = str(card.query_one(".tool-card--summary").render())
            assert summary.splitlines()[:2] == ["1", "2"] and "+47 lines" in summary
            log = card.query_one(OutputLog)
            assert not log.display or not log.region.height
            card.focus()
            await pilot.press("enter")
            await pilot.pause()
            assert card.expanded and log.region.height == 20  # bounded height, scrolls inside
            assert log.lines == [str(i) for i in range(1, 51)]
            await pilot.press("enter")
            await pilot.pause()
            assert not card.expanded and log.region.height == 0
            await pilot.click(ToolCard)
            await pilot.pause()
            assert card.expanded
            assert app.toggles == [True, False, True]
    finally:
        clock.freeze(None)


@pytest.mark.parametrize(
    ("result", "status"),
    [
        (denied_result("bash"), "denied"),
        (cancelled_result(), "cancelled"),
        (ToolResult("out\n[exit code: 1]", process=ProcessOutcome(1)), "warning"),
        (ToolResult("boom\n[exit code: 127]", is_error=True, process=ProcessOutcome(127)), "error"),
        # The status is read from the fields, never from the text.
        (ToolResult("cancelled by user", process=ProcessOutcome(0)), "ok"),
    ],
)
async def test_card_status_from_result(result: ToolResult, status: str) -> None:
    app = CardHarness(bash_item())
    async with app.run_test(size=(100, 20)) as pilot:
        card = app.query_one(ToolCard)
        card.set_result(result)
        await pilot.pause()
        assert card.status == status and card.has_class(f"-{status}") and card.has_class("-done")


async def test_card_for_a_failed_preparation_shows_the_error() -> None:
    item = PreparedItem("c1", "read_file", {}, header="read_file", error="read_file: 'path' is required")
    app = CardHarness(item)
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.pause()
        card = app.query_one(ToolCard)
        assert card.status == "error"
        assert "'path' is required" in str(card.query_one(".tool-card--summary").render())


async def test_output_waits_while_the_user_types_and_then_shows_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Output that arrives while the user types is held back (the keys' frames go first), then
    shown whole once typing pauses."""
    monkeypatch.setattr(pane_grid, "INPUT_HOLD", 30.0)  # (a hold no slow machine outlasts)
    monkeypatch.setattr(pane_grid, "MAX_INPUT_HOLD", 60.0)
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.panes
        pane = panes.start("c1", "seq 1 3")
        await pilot.pause()
        panes.yield_to_input()
        panes.write_lines("c1", ["1", "2", "3"])
        await pilot.pause(FLUSH_INTERVAL * 6)
        assert pane.lines == []  # held while the user types
        monkeypatch.setattr(pane_grid, "INPUT_HOLD", 0.0)
        panes.yield_to_input()  # the last key: the hold ends now
        await wait_until(pilot, lambda: pane.lines == ["1", "2", "3"], 10, "the held output")


async def test_spinners_of_panes_and_cards_turn_on_one_tick() -> None:
    """Every running pane's spinner shows the same frame whenever the screen is drawn: one tick
    for all of them (they no longer repaint in different frames)."""
    app = PanesHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = [app.panes.start(f"c{n}", f"sleep {n}") for n in range(4)]
        await pilot.pause()
        ticker = ticker_module._TICKERS[app]
        assert len(ticker._subscriptions) == 4 and ticker._timer is not None
        frames: set[str] = set()
        for _ in range(8):
            await pilot.pause(0.07)
            shown = {str(p.query_one(".bash-pane--status").render()).split()[0] for p in panes}
            assert len(shown) == 1, shown
            frames |= shown
        assert len(frames) > 1  # and they do turn
        for n in range(len(panes)):
            app.panes.finish(f"c{n}", cancelled_result())
        await pilot.pause()
        assert ticker._timer is None  # nothing running: no tick


async def test_a_pane_starting_or_finishing_restyles_the_grid_once() -> None:
    """The grid's layout classes (-one/-two/-four/-many, -narrow, -compact) change together: each
    class changed on its own restyled every pane again; and a finishing pane that leaves the grid
    is not restyled on its way out."""
    app = PanesHarness()
    async with app.run_test(size=(120, 40)) as pilot:
        panes = app.panes
        for n in range(3):
            panes.start(f"c{n}", f"sleep {n}")
        await pilot.pause()
        restyled: list[object] = []
        update_styles = app.update_styles

        def counting(node, animate: bool = True) -> None:  # noqa: ANN001
            restyled.append(node)
            update_styles(node, animate=animate)

        app.update_styles = counting  # type: ignore[method-assign]
        leaving = panes.pane("c2")
        panes.finish("c2", ToolResult("[exit code: 0]", process=ProcessOutcome(0)))  # -four -> -two
        await wait_until(pilot, lambda: panes.has_class("-two"), 20, "the grid for two panes")
        assert restyled.count(panes) == 1 and leaving not in restyled
        restyled.clear()
        panes.start("c9", "sleep 9")  # -two -> -four
        await wait_until(pilot, lambda: panes.has_class("-four"), 20, "the grid for three panes")
        assert restyled.count(panes) == 1 and len(panes) == 3


async def test_panes_starting_or_finishing_together_restyle_the_grid_once_or_not_at_all() -> None:
    """Four panes starting together (a batch approved) restyle the grid once, not once per pane;
    four finishing together (four results at once) hide it without restyling it and the panes
    leaving it (that was three restyles of 10-17 ms each between the last result and the next
    request). The next pane still gets the one-pane grid."""
    app = PanesHarness()
    async with app.run_test(size=(120, 40)) as pilot:
        panes = app.panes
        await pilot.pause()
        restyled: list[object] = []
        update_styles = app.update_styles

        def counting(node, animate: bool = True) -> None:  # noqa: ANN001
            restyled.append(node)
            update_styles(node, animate=animate)

        app.update_styles = counting  # type: ignore[method-assign]
        for n in range(4):
            panes.start(f"c{n}", f"sleep {n}")
        await wait_until(pilot, lambda: panes.has_class("-four"), 20, "the grid for four panes")
        await pilot.pause()
        assert restyled.count(panes) == 1, restyled.count(panes)
        restyled.clear()
        for n in range(4):
            panes.finish(f"c{n}", ToolResult("[exit code: 0]", process=ProcessOutcome(0)))
        assert not panes.display
        await pilot.pause()
        await pilot.pause()
        assert restyled.count(panes) == 0, restyled.count(panes)
        panes.start("c9", "sleep 9")
        await wait_until(pilot, lambda: panes.has_class("-one"), 20, "the grid for one pane")
        assert panes.display and not panes.has_class("-four")


async def test_panes_finishing_together_leave_the_grid_at_once_and_the_dom_in_one_removal() -> None:
    """A removal is awaited after the message that asked for it (the widgets' tasks end over
    several loop turns): four panes removed one by one held each following result for a frame.
    Finished panes leave the grid at once (hidden) and the DOM together, not at the next frame:
    that removal's layout and repaint fell between a batch's results and the model's answer."""
    app = PanesHarness()
    async with app.run_test(size=(120, 40)) as pilot:
        panes = app.panes
        for n in range(4):
            panes.start(f"c{n}", f"sleep {n}")
        await pilot.pause()
        removals: list[int] = []
        prune = app._prune

        def counting(*nodes, parent=None):  # noqa: ANN001, ANN202
            removals.append(len(nodes))
            return prune(*nodes, parent=parent)

        app._prune = counting  # type: ignore[method-assign]
        leaving = [panes.pane(f"c{n}") for n in range(4)]
        for n in range(4):
            panes.finish(f"c{n}", ToolResult("[exit code: 0]", process=ProcessOutcome(0)))
        assert all(p is not None and not p.display for p in leaving) and len(panes) == 0
        assert not panes.display  # the empty grid is hidden at once
        started = time.monotonic()
        refreshed = asyncio.Event()
        panes.call_after_refresh(refreshed.set)
        await asyncio.wait_for(refreshed.wait(), 20)  # the next frame was drawn
        await pilot.pause()
        if time.monotonic() - started < pane_grid.LEAVE_DELAY / 2:  # (a busy machine may be later)
            assert len(list(panes.query(BashPane))) == 4  # still in the DOM after the next frame
        await wait_until(pilot, lambda: not list(panes.query(BashPane)), 20, "the panes removed")
        assert removals == [4], removals


async def test_an_ended_call_s_last_lines_wait_for_its_result() -> None:
    """A call that ended (its result held for the next thing the chat shows) keeps its last lines
    out of its pane: a line written into a pane is a full layout of the screen, drawn for a pane
    that leaves the screen with the result. The result takes them; other panes still flush."""
    app = PanesHarness()
    async with app.run_test(size=(120, 40)) as pilot:
        panes = app.panes
        panes.start("c0", "echo last")
        panes.start("c1", "echo other")
        await pilot.pause()
        panes.write_lines("c0", ["last"], "stdout")
        panes.write_lines("c1", ["other"], "stdout")
        panes.ended("c0")
        pane0, pane1 = panes.pane("c0"), panes.pane("c1")
        assert pane0 is not None and pane1 is not None
        await wait_until(pilot, lambda: pane1.lines == ["other"], 20, "the other pane's flush")
        await pilot.pause(FLUSH_INTERVAL * 2)
        assert pane0.lines == []
        assert panes.finish("c0", ToolResult("last\n[exit code: 0]", process=ProcessOutcome(0))) == ["last"]
