"""Keys typed together into a text field are applied in the order typed (widgets/ordered_keys.py)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from tests.app.helpers import press_together
from tests.app.test_approval import bash_item
from turnstone_tui.app.screens.approval import ApprovalScreen
from turnstone_tui.core.types import ApprovalDecision
from turnstone_tui.widgets.ordered_keys import OrderedInput, OrderedTextArea

pytestmark = pytest.mark.timeout(60)

# What a quick typist sends while the app is busy: two backspaces, a letter, an arrow, a letter,
# all read before the first is handled (Pilot.press would wait for each key to be handled).
BURST = [("backspace", None), ("backspace", None), ("x", "x"), ("left", None), ("y", "y")]


class Fields(App[None]):
    def compose(self) -> ComposeResult:
        yield OrderedInput(id="line")
        yield OrderedTextArea(id="area")


@pytest.mark.parametrize("selector", ["#line", "#area"])
async def test_a_burst_of_edits_lands_as_typed(selector: str) -> None:
    app = Fields()
    async with app.run_test(size=(60, 12)) as pilot:
        app.query_one(selector).focus()
        await pilot.press(*"abc")
        await press_together(pilot, BURST)
        field = app.query_one(selector)
        text = field.value if isinstance(field, OrderedInput) else field.text
        assert text == "ayx"  # not "abc" less two and the letters where the cursor was before


class ApprovalHarness(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.decisions: list[ApprovalDecision | None] = []

    def on_mount(self) -> None:
        self.push_screen(ApprovalScreen([bash_item()]), self.decisions.append)


async def test_the_approval_note_sent_is_what_was_typed_in_a_burst() -> None:
    app = ApprovalHarness()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("tab", *"use npmm")
        await press_together(pilot, [("backspace", None), ("home", None), ("N", "N"), ("o", "o"), (":", ":")])
        await pilot.press("space", "enter", "n")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(approved=False, feedback="No: use npm")]
