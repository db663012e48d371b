"""plan_agent in the real app (issue 11 item 12): the plan review is the one question (no approval
modal before it), the plan file lives in the data dir beside the database (never the project), and
after an annotation the card and the review show the refined version."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Markdown, Static

from tests.app.helpers import send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.approval import ApprovalScreen
from turnstone_tui.app.screens.plan_review import PlanReviewScreen
from turnstone_tui.widgets.tool_card import ToolCard

pytestmark = pytest.mark.timeout(60)

SIZE = (100, 30)
PLAN_V1 = "# Plan v1\n\n1. Add the flag."
PLAN_V2 = "# Plan v2\n\n1. Add the flag.\n2. Add a test for it."


def screens(app: TurnstoneApp) -> list[str]:
    return [type(screen).__name__ for screen in app.screen_stack]


async def test_plan_is_asked_once_kept_in_the_data_dir_and_the_card_shows_the_refinement(
    app: TurnstoneApp, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.script(
        [
            Reply.tools([("plan_agent", {"goal": "Add a --json flag"}, "call_plan")]),
            Reply.text(PLAN_V1),  # the planning sub-agent
            Reply.text(PLAN_V2),  # the refinement after the annotation
            Reply.text("Proceeding with v2."),
        ]
    )
    seen: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.click("#prompt")
        app.prompt.insert("plan the flag")
        await pilot.press("enter")

        def asked() -> bool:
            seen.extend(name for name in screens(app) if name not in seen)
            return isinstance(app.screen, (PlanReviewScreen, ApprovalScreen))

        await wait_until(pilot, asked, 30, "a question")
        assert isinstance(app.screen, PlanReviewScreen), f"asked first: {screens(app)}"
        assert "ApprovalScreen" not in seen

        review = app.screen
        plans = tmp_path / "plans"
        assert Path(review.path).parent == plans and review.plan.startswith("# Plan v1")
        assert not any((tmp_path / "work").iterdir()), "the plan file must not land in the project"  # noqa: ASYNC240
        assert "v1" in str(review.query_one("#plan-version", Static).render())

        await pilot.press("e", *"add a test", "ctrl+s")

        def second_review() -> bool:
            screen = app.screen
            return isinstance(screen, PlanReviewScreen) and screen is not review

        await wait_until(pilot, second_review, 30, "the refined plan's review")
        refined = app.screen
        assert refined.query_one(Markdown).source.startswith("# Plan v2")
        assert "v2" in str(refined.query_one("#plan-version", Static).render())
        card = app.chat.tool_card("call_plan")
        assert card is not None
        await wait_until(pilot, lambda: "# Plan v2" in card.output_lines, 10, "the card to show v2")
        assert card.output_lines[0].startswith("Plan v2") and "# Plan v1" not in card.output_lines

        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.busy and app.turns_finished >= 1, 30, "the turn to end")
        assert "ApprovalScreen" not in seen

        # resumed, the card shows the version the live card ended with (v2), not the stored v1
        first_id = app.session.session_id
        await send(pilot, "/new", wait=False)
        await wait_until(pilot, lambda: app.session.session_id != first_id and app.ready, 20, "a new chat")
        await send(pilot, f"/resume {first_id}", wait=False)
        await wait_until(pilot, lambda: app.session.session_id == first_id and app.ready, 20, "resumed")
        await pilot.pause()
        (resumed,) = [c for c in app.query(ToolCard) if c.item.func_name == "plan_agent"]
        assert resumed.output_lines[0].startswith("Plan v2") and "# Plan v2" in resumed.output_lines
        assert "# Plan v1" not in resumed.output_lines
    last_user = [m for m in model_server.model_requests()[-1].body["messages"] if m["role"] == "user"][-1]
    assert "ACCEPTED" in last_user["content"] and "# Plan v2" in last_user["content"]
