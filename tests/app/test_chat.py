"""The chat: prompts reach the model, answers stream in, reasoning, errors, cancel, quitting."""

from __future__ import annotations

from tests.app.helpers import answers, errors, infos, send, start, submit_now, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.core.types import SessionState
from turnstone_tui.widgets.chat_messages import ReasoningBlock, UserMessage
from turnstone_tui.widgets.status_bar import StatusBar

SIZE = (100, 30)


async def test_prompt_is_sent_and_answer_streams_in(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    answer = "# Result\n\nHere is **bold** text and a list:\n\n- one\n- two\n"
    model_server.script([Reply.text(answer, chunk_size=3)])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "hello model")
        assert [m.text for m in app.query(UserMessage)] == ["hello model"]
        assert answers(app) == [answer]
        body = model_server.model_requests()[0].body
        assert body["stream"] is True
        assert body["messages"][-1] == {"role": "user", "content": "hello model"}
        # The Markdown was rendered (a heading block and list items exist), not shown as source.
        assert app.query("AssistantMessage MarkdownH1")
        lists = app.query("AssistantMessage CompactBulletList")
        assert [(marker.strip(), text.plain) for item in lists for _, marker, text in item._rows] == [
            ("•", "one"),
            ("•", "two"),
        ]
        bar = app.query_one(StatusBar)
        assert bar.state is SessionState.IDLE
        assert bar.status is not None and bar.status.prompt_tokens > 0
        assert "tok" in str(app.query_one("#status-tokens").render())


async def test_reasoning_is_shown_dimmed_then_collapsed(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("The answer is 4.", reasoning="Two plus two makes four, clearly.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "what is 2+2")
        block = app.query_one(ReasoningBlock)
        assert block.text == "Two plus two makes four, clearly."
        assert block.collapsed and block.finished
        assert "Thought" in str(block.title)
        assert answers(app) == ["The answer is 4."]
        # The block comes before the answer, as the model produced it.
        chat_children = list(app.chat.children)
        assert chat_children.index(block) < chat_children.index(app.chat.query("AssistantMessage").last())
        await pilot.click(ReasoningBlock)
        await wait_until(pilot, lambda: not block.collapsed, what="reasoning expanded by a click")


async def test_escape_cancels_a_streaming_answer_and_history_stays_consistent(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    long_answer = "word " * 400
    model_server.script([Reply.text(long_answer, chunk_size=5, delay=0.02), Reply.text("Second answer.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "write a lot", wait=False)
        await wait_until(pilot, lambda: answers(app) and len(answers(app)[0]) > 20, what="streaming to begin")
        assert app.busy
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.busy, what="the turn to stop")
        assert "Turn cancelled." in infos(app)
        partial = answers(app)[0]
        assert 0 < len(partial) < len(long_answer)
        assert app.query_one(StatusBar).state is SessionState.IDLE
        # The next turn works and the model sees a well-formed conversation.
        await send(pilot, "again")
        assert answers(app)[-1] == "Second answer."
        messages = model_server.model_requests()[-1].body["messages"]
        roles = [m["role"] for m in messages if m["role"] != "system"]
        assert roles[0] == "user" and roles[-1] == "user"
        assert messages[-1]["content"] == "again"
        assert all(roles[i] != roles[i + 1] or roles[i] == "tool" for i in range(len(roles) - 1))


async def test_escape_does_nothing_when_idle(app: TurnstoneApp, model_server: ScriptedModelServer) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert app.check_action("cancel_turn", ()) is False
        await pilot.press("escape")
        await pilot.pause()
        assert not errors(app) and app.is_running


async def test_model_error_is_visible_and_app_keeps_running(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.error(500, "backend exploded"), Reply.text("Recovered.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "break please")
        assert any("backend exploded" in e or "500" in e for e in errors(app)), errors(app)
        assert app.query_one(StatusBar).state is SessionState.ERROR
        await send(pilot, "try again")
        assert answers(app)[-1] == "Recovered."
        assert app.query_one(StatusBar).state is SessionState.IDLE


async def test_ctrl_c_twice_quits_and_first_press_only_warns(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        assert any("ctrl+c again" in str(n.message) for n in app._notifications)
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    assert app.session is not None and app.session.busy is False


async def test_chat_widgets_are_pruned_past_the_bound(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.chat.max_widgets = 30
        for i in range(100):
            await app.chat.add_info(f"note {i}")
        await pilot.pause()
        children = list(app.chat.children)
        assert len(children) <= 30
        assert "note 99" in infos(app) and "note 0" not in infos(app)


async def test_prompt_sent_while_busy_is_queued_then_sent(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("slow " * 60, chunk_size=5, delay=0.05), Reply.text("Second done.")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "first", wait=False)
        await wait_until(pilot, lambda: app.busy)
        await submit_now(pilot, "second")
        assert any(text == "queued: second" for text in infos(app))
        await wait_until(pilot, lambda: app.turns_finished == 2 and not app.busy, 15, "both turns")
        assert answers(app)[-1] == "Second done."
        assert model_server.model_requests()[-1].body["messages"][-1]["content"] == "second"
        assert not any(text.startswith("queued:") for text in infos(app))


async def test_escape_returns_queued_prompts_to_the_input(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("slow " * 400, chunk_size=5, delay=0.05)])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "first", wait=False)
        await wait_until(pilot, lambda: app.busy)
        await submit_now(pilot, "second")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.busy)
        await pilot.pause(0.2)
        assert app.prompt.text == "second"
        assert len(model_server.model_requests()) == 1
