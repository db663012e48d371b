"""Tool cards as the user sees them: expanded output shown once, focus visible in 256 colours."""

from __future__ import annotations

import pytest
from rich.color import ColorSystem
from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer

from tests.app.helpers import answers, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.approval import ApprovalScreen
from turnstone_tui.core.types import PreparedItem, ProcessOutcome, ToolResult
from turnstone_tui.widgets.bash_pane import OutputLog
from turnstone_tui.widgets.tool_card import ToolCard

pytestmark = pytest.mark.timeout(60)


def bash_item(call_id: str) -> PreparedItem:
    return PreparedItem(
        call_id, "bash", {"command": "seq 1 20"}, header="bash: seq 1 20", preview_kind="bash"
    )


class Cards(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield ToolCard(bash_item("c1"), id="first")
            yield ToolCard(bash_item("c2"), id="second")


def screen_text(app: App[None]) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def record_restyles(app: App[None], monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The nodes the app's stylesheet restyles from now on, in order (one entry per restyle)."""
    restyled: list[object] = []
    apply = app.stylesheet.apply

    def recording(node, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        restyled.append(node)
        return apply(node, *args, **kwargs)

    monkeypatch.setattr(app.stylesheet, "apply", recording)
    return restyled


def rows_in_256_colours(app: App[None], card: ToolCard) -> list[tuple[tuple[str, str], ...]]:
    """The card's screen rows as a 256-colour terminal shows them: text with downgraded colours."""

    def cell(segment: Segment) -> tuple[str, str]:
        style = segment.style
        if style is None:
            return (segment.text, "")
        colours = [
            c.downgrade(ColorSystem.EIGHT_BIT).name if c is not None else "-"
            for c in (style.color, style.bgcolor)
        ]
        return (segment.text, f"{colours} {style.bold} {style.reverse}")

    strips = app.screen._compositor.render_strips()
    region = card.region
    rows = []
    for y in range(region.y, region.bottom):
        segments = strips[y].crop(region.x, region.right)
        rows.append(tuple(cell(s) for s in Segment.simplify(segments)))
    return rows


async def test_expanded_card_shows_the_output_once_without_the_preview_or_its_hint() -> None:
    app = Cards()
    async with app.run_test(size=(80, 50)) as pilot:
        card = app.query_one("#first", ToolCard)
        card.set_result(
            ToolResult("out\n[exit code: 0]", process=ProcessOutcome(0)), [f"line {i}" for i in range(1, 21)]
        )
        await pilot.pause()
        collapsed = "\n".join(screen_text(app))
        assert "line 1" in collapsed and "(+17 lines, enter to expand)" in collapsed
        card.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert card.expanded
        text = "\n".join(screen_text(app))
        assert "enter to expand" not in text and "+17 lines" not in text
        assert text.count("line 1\n") + text.count("line 1 ") == 1, "the first line appears once"
        log = card.query_one(OutputLog)
        assert log.region.height == 20 and log.lines[0] == "line 1" and log.lines[-1] == "line 20"
        # Collapsing brings the preview back.
        await pilot.press("enter")
        await pilot.pause()
        assert "(+17 lines, enter to expand)" in "\n".join(screen_text(app))


async def test_a_focused_card_is_distinct_in_a_256_colour_terminal() -> None:
    app = Cards()
    async with app.run_test(size=(80, 30)) as pilot:
        cards = list(app.query(ToolCard))
        for card in cards:
            card.set_result(ToolResult("ok\n[exit code: 0]", process=ProcessOutcome(0)), ["alpha", "beta"])
        app.set_focus(None)
        await pilot.pause()
        first, second = cards
        assert rows_in_256_colours(app, first) == rows_in_256_colours(app, second), "same look unfocused"
        first.focus()
        await pilot.pause()
        assert first.has_focus
        focused, other = rows_in_256_colours(app, first), rows_in_256_colours(app, second)
        assert len(focused) == len(other)
        assert focused != other
        # The header row itself differs (not only a tint that rounds away).
        assert focused[0] != other[0]


# --- a resumed conversation ------------------------------------------------------------------


async def test_resumed_chat_shows_tool_cards_with_their_output_and_keeps_the_token_count(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    command = "for i in 1 2 3 4 5 6; do echo row-$i; done"
    model_server.script(
        [
            Reply.tools([("bash", {"command": command}, "call_1")]),
            Reply.text("Six rows printed."),
            Reply.text("Fresh start."),
        ]
    )
    async with app.run_test(size=(100, 40)) as pilot:
        await start(pilot)
        await send(pilot, "print rows", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), 20, "the approval modal")
        await pilot.press("y")
        await wait_until(pilot, lambda: "Six rows printed." in answers(app), 30, "the answer")
        await wait_until(pilot, lambda: not app.busy, 20)
        first_id = app.session.session_id
        tokens_before = str(app.query_one("#status-tokens").render())
        assert not tokens_before.startswith("0 tok")
        await send(pilot, "/new", wait=False)
        await wait_until(
            pilot, lambda: app.session is not None and app.session.session_id != first_id and app.ready, 20
        )
        assert str(app.query_one("#status-tokens").render()).startswith("0 tok")
        await send(pilot, f"/resume {first_id}", wait=False)
        await wait_until(
            pilot,
            lambda: app.session is not None and app.session.session_id == first_id and app.ready,
            20,
            "resumed",
        )
        await pilot.pause()
        cards = list(app.query(ToolCard))
        assert len(cards) == 1
        card = cards[0]
        assert card.status == "ok" and "echo row-$i" in card.item.header
        assert [line for line in card.output_lines if line.startswith("row-")] == [
            f"row-{i}" for i in range(1, 7)
        ]
        summary = str(card.query_one(".tool-card--summary").render())
        assert summary.startswith("row-1\nrow-2\nrow-3") and "enter to expand" in summary
        card.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert card.expanded and card.query_one(OutputLog).region.height >= 6
        assert str(app.query_one("#status-tokens").render()) == tokens_before


async def test_an_edit_card_previews_the_changed_lines_in_colour(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    """A finished edit's preview is its summary and the changed lines, not the diff's file headers;
    expanded, the diff's added and removed lines are coloured."""
    model_server.script(
        [
            Reply.tools([("read_file", {"path": "calc.py"}, "call_r")]),
            Reply.tools(
                [("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}, "call_e")]
            ),
            Reply.text("Fixed."),
        ]
    )
    async with app.run_test(size=(100, 40)) as pilot:
        await start(pilot)
        workdir = app.session.cwd
        (workdir / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        await send(pilot, "fix calc", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), 20, "the approval modal")
        await pilot.press("y")
        await wait_until(pilot, lambda: "Fixed." in answers(app), 30, "the answer")
        card = next(c for c in app.query(ToolCard) if c.item.func_name == "edit_file")
        assert card.status == "ok"
        summary = card.query_one(".tool-card--summary").render()
        lines = str(summary).splitlines()
        assert lines[0].startswith("Edited calc.py")
        assert lines[1:] == ["-    return a - b", "+    return a + b   (+4 lines, enter to expand)"], lines
        assert not any(line.startswith(("---", "+++", "@@")) for line in lines)
        rows = screen_text(app)
        assert any("+    return a + b" in row for row in rows)
        card.focus()
        await pilot.press("enter")
        await pilot.pause()
        log = card.query_one(OutputLog)
        added = next(line for line in card.output_lines if "return a + b" in line)
        removed = next(line for line in card.output_lines if "return a - b" in line)
        assert added.startswith("\x1b[32m+") and removed.startswith("\x1b[31m-")
        assert log.region.height >= 6


# --- cost of a status change -------------------------------------------------------------------


class CardsWithFooter(Cards):
    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield Footer()


async def test_status_changes_of_cards_not_in_focus_leave_the_footer_alone() -> None:
    """A bindings refresh recomposes the whole footer: four cards changing status (running, then
    done) must not do that eight times; only the focused card's "Expand" concerns the footer."""
    app = CardsWithFooter()
    async with app.run_test(size=(80, 30)) as pilot:
        first, second = list(app.query(ToolCard))
        app.set_focus(None)
        await pilot.pause()
        refreshes: list[object] = []
        app.screen.bindings_updated_signal.subscribe(app, refreshes.append)
        for card in (first, second):
            card.mark_running()
        for card in (first, second):
            card.set_result(ToolResult("ok\n[exit code: 0]", process=ProcessOutcome(0)), ["alpha"])
        await pilot.pause()
        assert refreshes == [], "cards out of focus asked for a bindings refresh"
        # The focused card that becomes expandable does show "Expand" in the footer.
        app2_card = ToolCard(bash_item("c3"))
        await app.query_one(VerticalScroll).mount(app2_card)
        app2_card.focus()
        await pilot.pause()
        refreshes.clear()
        app2_card.set_result(ToolResult("ok\n[exit code: 0]", process=ProcessOutcome(0)), ["alpha"])
        await pilot.pause()
        assert refreshes, "the focused card's new Expand binding was not shown"
        footer_text = "\n".join(screen_text(app)[-1:])
        assert "Expand" in footer_text


async def test_a_status_change_restyles_the_card_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each class changed on its own restyled the card and all it holds again; a status change
    switches its classes in one update."""
    app = Cards()
    async with app.run_test(size=(80, 30)) as pilot:
        card = app.query_one("#first", ToolCard)
        await pilot.pause()
        restyled = record_restyles(app, monkeypatch)
        card.mark_running()
        assert restyled.count(card) == 1
        restyled.clear()
        card.set_result(ToolResult("ok\n[exit code: 0]", process=ProcessOutcome(0)), ["alpha"])
        assert restyled.count(card) == 1
        await pilot.pause()
        assert card.has_class("-ok") and not card.has_class("-running")


async def test_a_card_shows_how_long_the_call_ran_not_when_the_screen_saw_it() -> None:
    """The engine measures each call (ToolResult.elapsed); the card shows that, not the time
    between the screen marking it running and finished, which on a busy loop is late by varying
    amounts (four sleep 1 calls showed 0.8-2.0 s)."""
    app = Cards()
    async with app.run_test(size=(80, 30)) as pilot:
        card = app.query_one("#first", ToolCard)
        card.mark_running()  # the screen got to it late: the call had already run a while
        card.set_result(ToolResult("ok\n[exit code: 0]", process=ProcessOutcome(0), elapsed=1.0), ["ok"])
        await pilot.pause()
        assert card.elapsed == pytest.approx(1.0)
        assert any("exit 0 · 1.0s" in row for row in screen_text(app))
        # A card drawn again from its recipe (scrolled back to) shows the same.
        again = card.recipe()()
        assert again.elapsed == pytest.approx(1.0)


async def test_a_status_change_restyles_the_card_alone_not_everything_in_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual restyles a node's whole subtree for a class change; a card's status classes style
    its own border only, so a status change restyles the card (and its status label, whose own
    classes colour it), not its header, title, preview and log: ~2.5 ms a card on a quiet machine,
    paid for four cards between a batch's last result and the model's answer. The border still
    takes the status's colour."""
    app = Cards()
    async with app.run_test(size=(80, 30)) as pilot:
        card = app.query_one("#first", ToolCard)
        await pilot.pause()
        border_before = card.styles.border_left
        restyled = record_restyles(app, monkeypatch)
        card.mark_running()
        card.set_result(ToolResult("done\n[exit code: 0]", process=ProcessOutcome(0)), ["done"])
        status_label = card.query_one(".tool-card--status")
        assert restyled and set(restyled) <= {card, status_label}, sorted(
            {type(n).__name__ for n in restyled}
        )
        monkeypatch.undo()
        await pilot.pause()
        assert card.has_class("-ok") and card.has_class("-done") and not card.has_class("-running")
        assert card.styles.border_left != border_before  # the -ok colour
        assert status_label.has_class("-ok")
        other = app.query_one("#second", ToolCard)
        assert other.styles.border_left == border_before  # (the pending card keeps its colour)
