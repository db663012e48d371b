"""The approval modal answers with the exact ApprovalDecision for every key path."""

from __future__ import annotations

import difflib

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, Static

from turnstone_tui.app.screens.approval import ApprovalRow, ApprovalScreen
from turnstone_tui.core.types import ApprovalDecision, PreparedItem, Subject
from turnstone_tui.executors.bash_parts import command_parts
from turnstone_tui.widgets.diff_view import DiffView

pytestmark = pytest.mark.timeout(30)

_OLD = "def greet(name):\n    return 'hi ' + name\n"
_NEW = "def greet(name: str) -> str:\n    return f'hi {name}'\n"
DIFF = "".join(difflib.unified_diff(_OLD.splitlines(True), _NEW.splitlines(True), "a/greet.py", "b/greet.py"))


def bash_item(call_id: str = "c1", command: str = "make test") -> PreparedItem:
    return PreparedItem(
        call_id,
        "bash",
        {"command": command},
        header=f"bash: {command}",
        preview=command,
        preview_kind="bash",
        subject=Subject(commands=command_parts(command)),
    )


def granted(decision: ApprovalDecision | None) -> list[tuple[str, str, str]]:
    """(call id, rule, scope) of each rule an "always" answer grants."""
    assert decision is not None
    return [(call_id, rule.text, rule.scope) for call_id, rule in decision.rules]


def edit_item(call_id: str = "c2") -> PreparedItem:
    return PreparedItem(
        call_id,
        "edit_file",
        {"path": "greet.py"},
        header="edit_file greet.py",
        preview=DIFF,
        preview_kind="diff",
    )


def mcp_item(call_id: str = "c3") -> PreparedItem:
    return PreparedItem(
        call_id,
        "mcp__weather__forecast",
        {"city": "Paris"},
        header="mcp weather/forecast",
        preview_kind="json",
    )


class Harness(App[None]):
    def __init__(self, items: list[PreparedItem]) -> None:
        super().__init__()
        self.items = items
        self.decisions: list[ApprovalDecision | None] = []

    def compose(self) -> ComposeResult:
        yield Static("chat")

    def on_mount(self) -> None:
        self.push_screen(ApprovalScreen(self.items), self.decisions.append)


async def run_keys(items: list[PreparedItem], *keys: str) -> Harness:
    app = Harness(items)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    return app


async def test_the_answer_goes_out_before_the_modal_closes() -> None:
    """The engine gets the decision while the modal is still the screen: the approved calls start
    before the frame that redraws the screen under it (the screen then closes on its own)."""
    seen: list[tuple[ApprovalDecision, bool]] = []

    class Answering(App[None]):
        def __init__(self) -> None:
            super().__init__()
            self.decisions: list[ApprovalDecision | None] = []

        def compose(self) -> ComposeResult:
            yield Static("chat")

        def on_mount(self) -> None:
            def answer(decision: ApprovalDecision) -> None:
                seen.append((decision, isinstance(self.screen, ApprovalScreen)))

            self.push_screen(ApprovalScreen([bash_item()], answer=answer), self.decisions.append)

    app = Answering()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert seen == [(ApprovalDecision(approved=True, feedback=None, always=frozenset()), True)]
        assert not isinstance(app.screen, ApprovalScreen)
    assert app.decisions == [seen[0][0]]


async def test_y_approves_without_always() -> None:
    app = await run_keys([bash_item()], "y")
    assert app.decisions == [ApprovalDecision(approved=True, feedback=None, always=frozenset())]


async def test_n_denies() -> None:
    app = await run_keys([bash_item(), edit_item()], "n")
    assert app.decisions == [ApprovalDecision(approved=False)]


async def test_escape_denies() -> None:
    app = await run_keys([bash_item()], "escape")
    assert app.decisions == [ApprovalDecision(approved=False)]


async def test_a_approves_and_allows_each_calls_narrowest_rule_for_the_session() -> None:
    app = await run_keys(
        [bash_item("c1"), bash_item("c9", "ls -la && git status"), edit_item(), mcp_item()], "a"
    )
    assert app.decisions[0] is not None and app.decisions[0].approved
    assert granted(app.decisions[0]) == [
        ("c1", "bash(make test)", "session"),
        ("c9", "bash(ls:*)", "session"),
        ("c9", "bash(git status:*)", "session"),
        ("c2", "edit_file", "session"),
        ("c3", "mcp__weather__forecast", "session"),
    ]
    assert app.decisions[0].always == frozenset()  # no tool-wide "always" any more


async def test_space_cycles_the_rows_rule_through_session_project_user_and_off() -> None:
    # Row 1 bash: session; row 2 edit: session, project, user, off; row 3 mcp: session, project.
    keys = ["space", "down", "space", "space", "space", "space", "down", "space", "space", "y"]
    app = await run_keys([bash_item(), edit_item(), mcp_item()], *keys)
    assert granted(app.decisions[0]) == [
        ("c1", "bash(make test)", "session"),
        ("c3", "mcp__weather__forecast", "project"),
    ]


async def test_the_row_shows_the_rule_and_its_scope() -> None:
    app = Harness([bash_item("c1", "npm run test -- -x"), bash_item("c2", "ls -la"), edit_item("c3")])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("space", "space")
        rows = list(app.screen.query(ApprovalRow))
        assert [row.has_class("-always") for row in rows] == [True, False, False]  # per row now
        toggle = str(rows[0].query_one(".approval-row--toggle", Static).render())
        assert "always allow bash(npm run test:*)" in toggle and "saved: project" in toggle
        await pilot.press("y")
        await pilot.pause()
    assert granted(app.decisions[0]) == [("c1", "bash(npm run test:*)", "project")]


async def test_a_command_no_rule_can_match_offers_no_always() -> None:
    app = Harness([bash_item("c1", "[[ -f x ]] && make")])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        row = app.screen.query_one(ApprovalRow)
        assert "no rule can allow this command" in str(
            row.query_one(".approval-row--toggle", Static).render()
        )
        await pilot.press("space", "a")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(approved=True)]


async def test_the_row_says_whether_the_command_runs_sandboxed() -> None:
    confined = bash_item("c1")
    confined.sandboxed, confined.sandbox_note = True, "sandboxed: read-only system, writable workspace"
    loose = bash_item("c2", "make deploy")
    loose.sandbox_note = "not sandboxed: bubblewrap is not installed"
    app = Harness([confined, loose])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        notes = [str(s.render()) for s in app.screen.query(".approval-row--sandbox").results(Static)]
        await pilot.press("n")
    assert notes == [
        "■ sandboxed: read-only system, writable workspace",
        "▲ not sandboxed: bubblewrap is not installed",
    ]


async def test_denied_batch_never_carries_always_toggles() -> None:
    app = await run_keys([bash_item()], "space", "n")
    assert app.decisions == [ApprovalDecision(approved=False)]


async def test_tab_into_feedback_then_deny_sends_the_text() -> None:
    # Letters typed into the feedback line are text, not keys: "y" and "n" must not answer.
    app = await run_keys([bash_item()], "tab", *"not now, use npm", "enter", "n")
    assert app.decisions == [ApprovalDecision(approved=False, feedback="not now, use npm")]


async def test_feedback_goes_back_with_an_approval_too() -> None:
    app = await run_keys([bash_item()], "tab", *"run it quietly", "tab", "y")
    assert app.decisions == [ApprovalDecision(approved=True, feedback="run it quietly")]


async def test_escape_while_typing_feedback_denies_with_it() -> None:
    app = await run_keys([bash_item()], "tab", *"nope", "escape")
    assert app.decisions == [ApprovalDecision(approved=False, feedback="nope")]


async def test_click_on_the_always_checkbox_toggles() -> None:
    app = Harness([bash_item(), edit_item()])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.click(".approval-row--toggle")  # the first row's checkbox
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert granted(app.decisions[0]) == [("c1", "bash(make test)", "session")]


async def test_previews_by_kind_and_footer_keys() -> None:
    app = Harness([bash_item(), edit_item(), mcp_item()])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert isinstance(app.focused, ApprovalRow)  # AUTO_FOCUS: keys work at once
        diff = screen.query_one(DiffView)
        assert "+def greet(name: str) -> str:" in diff.render().plain
        json_preview = screen.query_one(".approval-preview.-json", Static)
        assert '"city": "Paris"' in str(json_preview.render())
        bash_preview = screen.query_one(".approval-preview.-bash", Static)
        assert "make test" in str(bash_preview.render())
        shown = {b.binding.key for b in screen.active_bindings.values() if b.binding.show and b.enabled}
        assert {"y", "n", "a", "space", "tab", "escape"} <= shown
        # While the feedback line has focus, y/n/a are text: the footer stops offering them.
        await pilot.press("tab")
        assert isinstance(app.focused, Input)
        shown = {b.binding.key for b in screen.active_bindings.values() if b.binding.show and b.enabled}
        assert not {"y", "n", "a"} & shown
        await pilot.press("escape")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(approved=False)]


async def test_a_second_key_after_answering_does_not_dismiss_twice() -> None:
    app = await run_keys([bash_item()], "y", "n")
    assert app.decisions == [ApprovalDecision(approved=True)]


async def test_x_skips_one_call_and_approves_the_rest() -> None:
    app = await run_keys([bash_item("c1", "make lint"), bash_item("c2", "make test")], "x", "y")
    assert app.decisions == [
        ApprovalDecision(approved=True, feedback=None, always=frozenset(), per_call={"c1": False})
    ]


async def test_x_again_undoes_the_skip() -> None:
    app = await run_keys([bash_item("c1"), edit_item("c2")], "x", "x", "y")
    assert app.decisions == [ApprovalDecision(approved=True, feedback=None, always=frozenset())]


async def test_skipping_every_call_is_a_denial() -> None:
    app = await run_keys([bash_item("c1"), edit_item("c2")], "x", "down", "x", "y")
    assert app.decisions == [ApprovalDecision(approved=False)]


async def test_always_is_not_granted_for_a_skipped_call() -> None:
    app = await run_keys([bash_item("c1"), edit_item("c2")], "down", "space", "x", "a")
    assert app.decisions[0] is not None and app.decisions[0].per_call == {"c2": False}
    assert granted(app.decisions[0]) == [("c1", "bash(make test)", "session")]


async def test_skip_is_offered_only_for_batches() -> None:
    single = Harness([bash_item()])
    async with single.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        keys = {key for key, active in single.screen.active_bindings.items() if active.enabled}
        assert "x" not in keys
        await pilot.press("x", "y")
        await pilot.pause()
    assert single.decisions == [ApprovalDecision(approved=True, feedback=None, always=frozenset())]
    batch = Harness([bash_item("c1"), edit_item("c2")])
    async with batch.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        row = batch.screen.query(ApprovalRow).first()
        assert "x" in {key for key, active in batch.screen.active_bindings.items() if active.enabled}
        await pilot.press("x")
        await pilot.pause()
        assert row.has_class("-skipped") and "skipped" in str(row._toggle.render())


async def test_no_part_of_a_command_hides_from_its_row() -> None:
    """What runs must be what the row shows. A command past the 20,000-character preview was cut
    without a word (the end, where a payload sits, was not there to scroll to); 30 blank lines or
    thousands of spaces pushed the rest out of the 14-line preview; a carriage return read as a line
    break. Now: a warning says how much is not shown, runs of blank lines and spaces are counted,
    control characters are written out."""
    long = "echo start; " + "x" * 25_000 + "; echo PAYLOAD"
    blanks = "ls" + "\n" * 30 + "echo AFTER-BLANKS"
    spaces = "ls" + " " * 5_000 + "; echo AFTER-SPACES"
    carriage = "echo one\recho two"
    app = Harness([bash_item(f"c{i}", c) for i, c in enumerate((long, blanks, spaces, carriage))])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        rows = list(app.screen.query(ApprovalRow))
        shown = ["\n".join(str(s.render()) for s in row.query(Static)) for row in rows]
    assert "5,026 more characters are not shown" in shown[0]
    assert "[... 29 blank lines ...]" in shown[1] and "echo AFTER-BLANKS" in shown[1]
    assert "[... 5000 spaces ...]" in shown[2] and "AFTER-SPACES" in shown[2]
    assert "echo one\\recho two" in shown[3]
