"""Tool calls through the real app: cards in the chat, the approval modal, bash panes, cancel."""

from __future__ import annotations

import psutil
from textual import events

from tests.app.helpers import answers, send, start, start_four_floods, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.approval import ApprovalScreen
from turnstone_tui.app.screens.permissions import PermissionsScreen
from turnstone_tui.core.types import SessionState
from turnstone_tui.widgets.pane_grid import ParallelPanes
from turnstone_tui.widgets.status_bar import StatusBar
from turnstone_tui.widgets.tool_card import ToolCard

SIZE = (110, 34)


def tool_messages(server: ScriptedModelServer) -> list[dict]:
    return [m for m in server.model_requests()[-1].body["messages"] if m["role"] == "tool"]


async def test_bash_call_approved_runs_in_a_pane_then_collapses_into_its_card(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    command = "echo line-one; sleep 0.6; echo line-two"
    model_server.script([Reply.tools([("bash", {"command": command}, "call_1")]), Reply.text("All done.")])
    bells: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]  # the terminal bell is the edge
        await send(pilot, "run it", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval modal")
        bar = app.query_one(StatusBar)
        assert bells == [1]
        assert bar.state is SessionState.ATTENTION and bar.pending == 1
        assert "1 pending approval" in str(bar.query_one("#status-pending").render())
        card = app.chat.tool_card("call_1")
        assert isinstance(card, ToolCard)
        await pilot.press("y")
        panes = app.query_one(ParallelPanes)
        await wait_until(pilot, lambda: "call_1" in panes.call_ids, what="the bash pane")
        assert panes.display
        assert bar.state is not SessionState.ATTENTION and bar.pending == 0
        await wait_until(pilot, lambda: app.turns_finished == 1, what="the turn")
        assert not panes.call_ids and not panes.display  # the pane collapsed into its card
        assert answers(app) == ["All done."]
        results = tool_messages(model_server)
        assert (
            len(results) == 1 and "line-one" in results[0]["content"] and "line-two" in results[0]["content"]
        )
        # The chat keeps the order: user, card, answer.
        order = [type(w).__name__ for w in app.chat.children]
        assert order.index("UserMessage") < order.index("ToolCard") < order.index("AssistantMessage")


async def test_denied_call_reaches_the_model_as_denied(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script(
        [Reply.tools([("bash", {"command": "rm -rf build"}, "call_9")]), Reply.text("Okay, not.")]
    )
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "clean", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("n")
        await wait_until(pilot, lambda: app.turns_finished == 1)
        results = tool_messages(model_server)
        assert len(results) == 1 and "den" in results[0]["content"].lower()
        assert answers(app) == ["Okay, not."]
        assert not app.query(ParallelPanes)  # nothing ran: the panes were never mounted


async def test_skipping_one_call_of_a_batch_denies_it_and_runs_the_other(
    app: TurnstoneApp, model_server: ScriptedModelServer, tmp_path
) -> None:
    model_server.script(
        [
            Reply.tools(
                [
                    ("bash", {"command": "touch skipped-marker"}, "call_1"),
                    ("bash", {"command": "echo ran-second"}, "call_2"),
                ]
            ),
            Reply.text("One ran."),
        ]
    )
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "do both", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("x", "y")  # skip the focused (first) call, approve the rest
        await wait_until(pilot, lambda: app.turns_finished == 1, what="the turn")
        results = {m["tool_call_id"]: m["content"] for m in tool_messages(model_server)}
        assert "den" in results["call_1"].lower()
        assert "ran-second" in results["call_2"]
        assert not (app.cwd / "skipped-marker").exists()
        assert app.chat.tool_card("call_1").status == "denied"
        assert answers(app) == ["One ran."]


async def test_cancelling_while_the_modal_is_open_closes_it(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.tools([("bash", {"command": "echo hi"}, "call_5")]), Reply.text("Next turn.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "go", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        app.action_cancel_turn()
        await wait_until(pilot, lambda: not isinstance(app.screen, ApprovalScreen), what="the modal to close")
        await wait_until(pilot, lambda: app.turns_finished == 1)
        assert app.query_one(StatusBar).state is not SessionState.ATTENTION
        assert app.query_one(StatusBar).pending == 0
        await send(pilot, "again")
        assert answers(app)[-1] == "Next turn."
        messages = model_server.model_requests()[-1].body["messages"]
        # Every tool call the model made has its result (the conversation stays consistent).
        call_ids = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        result_ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
        assert call_ids == result_ids


async def test_always_then_permissions_revoke_asks_again(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script(
        [
            Reply.tools([("bash", {"command": "echo 1"}, "c1")]),
            Reply.text("one"),
            Reply.tools([("bash", {"command": "echo 2"}, "c2")]),
            Reply.text("two"),
            Reply.tools([("bash", {"command": "echo 3"}, "c3")]),
            Reply.text("three"),
        ]
    )
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "first", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("a")
        await wait_until(pilot, lambda: app.turns_finished == 1)
        assert [r.text for r in app.session.policy.session_rules] == ["bash(echo:*)"]
        await send(pilot, "second")  # no modal this time
        assert answers(app)[-1] == "two"
        assert "2" in tool_messages(model_server)[-1]["content"]
        await send(pilot, "/permissions", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        await pilot.press("d")  # deletes the highlighted rule (the only one)
        await wait_until(pilot, lambda: not app.session.policy.session_rules, what="the rule deleted")
        await pilot.press("escape")
        await send(pilot, "third", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="asked again")
        await pilot.press("y")
        await wait_until(pilot, lambda: app.turns_finished == 3)
        assert answers(app)[-1] == "three"


async def test_escape_while_bash_runs_kills_it_and_marks_the_card(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    marker = "turnstone-esc-test-marker"
    command = f"echo started; sleep 30 # {marker}"
    model_server.script([Reply.tools([("bash", {"command": command}, "call_s")]), Reply.text("After.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "sleep", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("y")
        panes = app.query_one(ParallelPanes)
        await wait_until(pilot, lambda: (p := panes.pane("call_s")) is not None and "started" in p.lines)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.turns_finished == 1, 10, "the cancelled turn")
        card = app.chat.tool_card("call_s")
        assert card is not None and card.status in ("cancelled", "error", "warning")
        assert not panes.call_ids
        await pilot.pause(0.3)
        leftovers = [
            p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])
        ]
        assert not leftovers
        await send(pilot, "next")
        messages = model_server.model_requests()[-1].body["messages"]
        call_ids = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        assert call_ids == [m["tool_call_id"] for m in messages if m["role"] == "tool"]


async def test_keys_typed_during_a_four_pane_flood_show_in_the_prompt_while_the_panes_stream(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    """Four endless floods (``seq 1 inf``) run in their panes; what the user types appears in the
    prompt while every pane is still running and still receiving output, and esc ends them all."""
    async with app.run_test(size=SIZE) as pilot:
        streamed = await start_four_floods(pilot, model_server)
        panes = app.query_one(ParallelPanes)
        app.prompt.focus()
        before = streamed()
        for char in "hello":
            app.post_message(events.Key(char, char))
        await wait_until(pilot, lambda: app.prompt.text == "hello", 30, "the typed keys in the prompt")
        assert len(panes.call_ids) == 4  # still running: the keys did not wait for the output to end
        await wait_until(
            pilot,
            lambda: all(now > then for now, then in zip(streamed(), before, strict=True)),
            30,
            "every pane still receiving output",
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.turns_finished == 1, 30, "the cancelled turn")
        assert not panes.call_ids
        assert app.prompt.text == "hello"  # nothing typed was lost
