"""The plan review screen answers accept / reject / annotate with the exact PlanReview."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Markdown, Static, TextArea

from turnstone_tui.app.screens.plan_review import PlanReviewScreen
from turnstone_tui.core.types import PlanReview

pytestmark = pytest.mark.timeout(30)

PLAN = "# Plan\n\n1. Parse `--json`.\n2. Print JSON.\n\n## Risks\n- none\n"


class Harness(App[None]):
    def __init__(self, plan: str = PLAN) -> None:
        super().__init__()
        self.plan = plan
        self.reviews: list[PlanReview | None] = []

    def compose(self) -> ComposeResult:
        yield Static("chat")

    def on_mount(self) -> None:
        self.push_screen(
            PlanReviewScreen(self.plan, "/home/u/.local/share/turnstone/plans/1.md"), self.reviews.append
        )


async def run_keys(*keys: str) -> Harness:
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    return app


@pytest.mark.parametrize("key", ["enter", "a"])
async def test_accept(key: str) -> None:
    app = await run_keys(key)
    assert app.reviews == [PlanReview("accept")]


async def test_reject() -> None:
    app = await run_keys("r")
    assert app.reviews == [PlanReview("reject")]


async def test_annotate_with_ctrl_s() -> None:
    # Keys that mean accept/reject outside the editor are text inside it.
    app = await run_keys("e", *"add a test", "enter", *"rename it", "ctrl+s")
    assert app.reviews == [PlanReview("annotate", "add a test\nrename it")]


async def test_escape_closes_the_editor_and_keys_work_again() -> None:
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlanReviewScreen)
        await pilot.press("e", *"draft")
        assert screen.editor_open and isinstance(app.focused, TextArea)
        await pilot.press("escape")
        assert not screen.editor_open
        assert app.reviews == []
        await pilot.press("r")
        await pilot.pause()
    assert app.reviews == [PlanReview("reject")]


async def test_empty_annotation_is_not_sent() -> None:
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("e", "ctrl+s")
        await pilot.pause()
        assert app.reviews == []
        assert isinstance(app.screen, PlanReviewScreen)
        await pilot.press(*"ok", "ctrl+s")
        await pilot.pause()
    assert app.reviews == [PlanReview("annotate", "ok")]


async def test_plan_is_rendered_as_markdown_and_footer_follows_the_mode() -> None:
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        markdown = screen.query_one(Markdown)
        assert markdown.source == PLAN

        def shown() -> set[str]:
            return {b.binding.key for b in screen.active_bindings.values() if b.binding.show and b.enabled}

        assert {"enter", "r", "e"} <= shown() and "ctrl+s" not in shown()
        await pilot.press("e")
        assert "ctrl+s" in shown() and not {"enter", "r", "e"} & shown()
