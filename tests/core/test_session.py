"""ChatSession end to end: real provider SDK -> scripted model server, real tools, real SQLite."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from tests.helpers.tool_files import BUILTIN_TOOL_COUNT
from turnstone_tui.config import Config
from turnstone_tui.core.session import ChatSession
from turnstone_tui.core.types import ApprovalDecision, PlanReview
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(60)


def make_config(server: ScriptedModelServer, tmp_path: Path, *, provider: str = "openai") -> Config:
    cfg = Config()
    cfg.model.provider = provider
    cfg.api.base_url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    cfg.api.api_key = "test-key"
    cfg.model.name = "test-model"
    cfg.model.retries = 2
    cfg.model.retry_base_delay = 0.01
    cfg.db_path = str(tmp_path / "t.db")
    return cfg


async def new_session(
    cfg: Config, ui: RecordingUI, tmp_path: Path, *, storage: Storage | None = None, **kw: object
) -> ChatSession:
    session = build_session(cfg, create_provider(cfg), ui, storage=storage, cwd=tmp_path, **kw)  # type: ignore[arg-type]
    await session.start()
    return session


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_text_answer_streams_and_is_sent_with_tools_and_system(model_server, tmp_path) -> None:
    model_server.script([Reply.text("Hello there!", reasoning="let me think")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("hi")
    assert ui.text == "Hello there!" and "".join(ui.reasoning) == "let me think"
    body = model_server.model_requests()[0].body
    assert body["messages"][0]["role"] == "system" and "turnstone" in body["messages"][0]["content"]
    assert body["messages"][-1] == {"role": "user", "content": "hi"}
    sent = {t["function"]["name"]: t["function"] for t in body["tools"]}
    assert len(sent) == BUILTIN_TOOL_COUNT and "bash" in sent
    for fn in sent.values():
        assert not {"agent", "task_agent", "auto_approve", "primary_key"} & set(fn)
    assert session.messages[-1] == {"role": "assistant", "content": "Hello there!"}


async def test_parallel_tool_calls_run_and_results_go_back(model_server, tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    model_server.script(
        [
            Reply.tools([("bash", {"command": "echo one; echo two"}), ("read_file", {"path": "notes.txt"})]),
            Reply.text("Done."),
        ]
    )
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("go")
    assert ui.text == "Done."
    # bash needed approval, read_file did not
    assert [[i.func_name for i in batch] for batch in ui.approval_requests] == [["bash"]]
    bash_id = ui.approval_requests[0][0].call_id
    assert [line for line, _ in ui.chunks[bash_id]] == ["one", "two"]
    second = model_server.model_requests()[1].body
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(second)}
    assert len(results) == 2
    assert "one\ntwo" in results[bash_id] and "[exit code: 0]" in results[bash_id]
    assert any("alpha" in text and "beta" in text for text in results.values())


async def test_a_flood_of_output_reaches_the_ui_whole_in_batches_not_line_by_line(
    model_server, tmp_path
) -> None:
    """200,000 lines arrive in order and complete, handed over a chunk at a time: the UI's event loop
    does one call per read, not one per line (which kept keys waiting behind output)."""
    model_server.script([Reply.tools([("bash", {"command": "seq 1 200000"})]), Reply.text("Done.")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("count")
    call_id = ui.approval_requests[0][0].call_id
    assert [line for line, _ in ui.chunks[call_id]] == [str(n) for n in range(1, 200_001)]
    assert ui.output_calls[call_id] <= 1_000  # ~1.3 MB read in chunks of up to 64 KiB


async def test_bare_string_arguments_use_the_primary_key(model_server, tmp_path) -> None:
    model_server.script([Reply.tools([("bash", "echo fallback-works")]), Reply.text("ok")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    (result,) = tool_messages(model_server.model_requests()[1].body)
    assert "fallback-works" in result["content"]


async def test_garbage_arguments_give_the_model_a_clear_error(model_server, tmp_path) -> None:
    model_server.script([Reply.tools([("write_file", "{not json at all")]), Reply.text("sorry")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    (result,) = tool_messages(model_server.model_requests()[1].body)
    assert "not valid JSON" in result["content"]
    assert ui.approval_requests == []  # nothing to approve: the call never became runnable
    assert ui.text == "sorry"


async def test_denial_with_feedback_reaches_the_model_and_nothing_runs(model_server, tmp_path) -> None:
    marker = tmp_path / "ran"
    model_server.script([Reply.tools([("bash", {"command": f"touch {marker}"})]), Reply.text("ok")])
    ui = RecordingUI(approvals=[ApprovalDecision(approved=False, feedback="use python instead")])
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    assert not marker.exists()
    (result,) = tool_messages(model_server.model_requests()[1].body)
    assert "denied by user" in result["content"] and "use python instead" in result["content"]


async def test_approval_feedback_is_appended_to_the_result(model_server, tmp_path) -> None:
    model_server.script([Reply.tools([("bash", {"command": "echo hi"})]), Reply.text("ok")])
    ui = RecordingUI(approvals=[ApprovalDecision(approved=True, feedback="and be quick")])
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    (result,) = tool_messages(model_server.model_requests()[1].body)
    assert "hi" in result["content"] and "and be quick" in result["content"]


async def test_always_auto_approves_that_tool_only(model_server, tmp_path) -> None:
    model_server.script(
        [
            Reply.tools([("bash", {"command": "echo 1"})]),
            Reply.tools([("bash", {"command": "echo 2"}), ("write_file", {"path": "f.txt", "content": "x"})]),
            Reply.text("ok"),
        ]
    )
    ui = RecordingUI(approvals=[ApprovalDecision(approved=True, always=frozenset({"bash"}))])
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    assert "bash" in session.auto_approve
    # the second batch asked only about write_file: bash was auto-approved
    assert [[i.func_name for i in b] for b in ui.approval_requests] == [["bash"], ["write_file"]]
    assert (tmp_path / "f.txt").read_text() == "x"


async def test_skip_permissions_approves_everything(model_server, tmp_path) -> None:
    model_server.script([Reply.tools([("write_file", {"path": "g.txt", "content": "y"})]), Reply.text("ok")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path, skip_permissions=True)
    await session.send("x")
    assert ui.approval_requests == [] and (tmp_path / "g.txt").read_text() == "y"


async def test_at_most_four_tools_run_at_once(model_server, tmp_path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    # unique names from mktemp, not $$: in the sandbox's PID namespace every shell may be the same pid
    cmd = (
        f"me=$(mktemp -p {live}); sleep 0.4; ls {live} | wc -l > $(mktemp -p {tmp_path} count_XXXXXX); "
        "sleep 0.4; rm $me"
    )
    model_server.script([Reply.tools([("bash", {"command": cmd})] * 6), Reply.text("ok")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path, skip_permissions=True)
    await session.send("x")
    counts = [int(p.read_text()) for p in tmp_path.glob("count_*")]
    assert len(counts) == 6
    assert max(counts) == 4  # four ran together, never five or six


async def test_cancel_kills_running_tools_and_keeps_the_conversation_consistent(
    model_server, tmp_path
) -> None:
    pid_file = tmp_path / "pid"
    model_server.script(
        [
            Reply.tools(
                [("bash", {"command": f"echo $$ > {pid_file}; sleep 30"}), ("bash", {"command": "sleep 30"})]
            )
        ]
    )
    ui = RecordingUI()
    storage = await Storage.open(tmp_path / "t.db")
    config = make_config(model_server, tmp_path)
    config.sandbox.mode = "off"  # the test reads the shell's host pid ($$); a PID namespace would renumber it
    session = await new_session(config, ui, tmp_path, storage=storage, skip_permissions=True)
    turn = asyncio.create_task(session.send("x"))
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    session.cancel()
    await asyncio.wait_for(turn, 10)
    await asyncio.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "Turn cancelled." in ui.infos
    stored = await storage.load_messages(session.session_id)
    calls = [c["id"] for c in stored[1]["tool_calls"]]
    results = {m["tool_call_id"]: m for m in stored if m["role"] == "tool"}
    assert set(results) == set(calls)
    assert all("cancelled by user" in m["content"] for m in results.values())
    # the session goes on: the next turn sends the consistent history
    model_server.script([Reply.text("fine")])
    await session.send("again")
    body = model_server.model_requests()[-1].body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "tool", "user"]
    await storage.close()


async def test_cancel_during_streaming_keeps_partial_answer(model_server, tmp_path) -> None:
    model_server.script([Reply.text("word " * 200, chunk_size=5, delay=0.02)])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    turn = asyncio.create_task(session.send("talk"))
    while len(ui.content) < 5:  # noqa: ASYNC110 - polling what the UI received
        await asyncio.sleep(0.01)
    session.cancel()
    await asyncio.wait_for(turn, 5)
    last = session.messages[-1]
    assert last["role"] == "assistant" and last["content"].endswith("[interrupted by user]")
    assert len(ui.text) < len("word " * 200)


async def test_long_output_is_truncated_head_and_tail(model_server, tmp_path) -> None:
    model_server.script([Reply.tools([("bash", {"command": "seq 1 100000"})]), Reply.text("ok")])
    cfg = make_config(model_server, tmp_path)
    cfg.tools.truncation = 2000
    ui = RecordingUI()
    session = await new_session(cfg, ui, tmp_path, skip_permissions=True)
    await session.send("x")
    (result,) = tool_messages(model_server.model_requests()[1].body)
    text = result["content"]
    assert len(text) < 2300
    assert text.startswith("1\n2\n3\n") and "100000" in text and "truncated" in text


async def test_provider_500_is_retried_then_answers(model_server, tmp_path) -> None:
    model_server.script([Reply.error(500), Reply.text("recovered")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    assert ui.text == "recovered" and len(model_server.model_requests()) == 2 and ui.errors == []


async def test_provider_failure_is_reported_and_the_session_survives(model_server, tmp_path) -> None:
    model_server.script([Reply.error(500)] * 3 + [Reply.text("back")])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    assert ui.errors and "500" in ui.errors[0]
    await session.send("y")
    assert ui.text == "back"


async def test_plan_gate_annotate_refines_then_accept(model_server, tmp_path) -> None:
    model_server.script(
        [
            Reply.tools([("plan_agent", {"goal": "add a feature"})]),
            Reply.text("# Plan v1\n1. do it"),  # the plan sub-agent's answer
            Reply.text("# Plan v2\n1. do it carefully"),  # the refinement after the annotation
            Reply.text("Proceeding."),
        ]
    )
    ui = RecordingUI(plan_reviews=[PlanReview("annotate", "be careful"), PlanReview("accept")])
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("plan it")
    assert ui.approval_requests == []  # the review is the only question
    assert [p.strip() for p, _ in ui.plans_shown] == ["# Plan v1\n1. do it", "# Plan v2\n1. do it carefully"]
    assert {path for _, path in ui.plans_shown} == {str(tmp_path / "plans" / f"{session.session_id}.md")}
    refine_request = model_server.model_requests()[2].body
    assert "be careful" in json.dumps(refine_request["messages"])
    call_id = ui.prepared[0].call_id
    assert ui.results[call_id][1].text.startswith("Plan v2 (refined):")  # the call's card shows v2
    last_user = [m for m in model_server.model_requests()[3].body["messages"] if m["role"] == "user"][-1]
    assert "ACCEPTED" in last_user["content"] and "# Plan v2\n1. do it carefully" in last_user["content"]
    assert ui.text.endswith("Proceeding.")


async def test_watch_injections_are_capped_without_a_user_turn_and_the_rest_deferred(
    model_server, tmp_path
) -> None:
    model_server.script([Reply.text(f"seen {i}") for i in range(8)])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    for i in range(6):
        await session.inject(f"[watch w] fired {i}")
    assert len(model_server.model_requests()) == 5
    assert any("held back" in info and "after your next message" in info for info in ui.infos)
    await session.send("user is back")  # a user turn resets the streak
    assert len(model_server.model_requests()) == 6
    await session.deliver_watch_results()  # the held-back result was deferred, not dropped
    assert len(model_server.model_requests()) == 7
    assert model_server.model_requests()[-1].body["messages"][-1]["content"] == "[watch w] fired 5"


async def test_usage_is_reported_in_status(model_server, tmp_path) -> None:
    model_server.script([Reply.text("counted", usage=(120, 7))])
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("x")
    status = session.status()
    assert status.prompt_tokens == 120 and status.completion_tokens == 7
    assert ui.statuses[-1].prompt_tokens == 120


async def test_sub_agents_are_sent_their_scoped_tool_sets(model_server, tmp_path) -> None:
    """A plan sub-agent is sent the read-only AGENT_TOOLS, a task sub-agent TASK_AGENT_TOOLS; the
    main session every tool."""
    from turnstone_tui.core.registry import default_registry

    registry = default_registry()
    model_server.script(
        [
            Reply.tools([("plan_agent", {"goal": "a feature"})]),
            Reply.text("# Plan\n1. do it"),  # the plan sub-agent
            Reply.tools([("task_agent", {"prompt": "do step 1"})]),
            Reply.text("step 1 done"),  # the task sub-agent
            Reply.text("All done."),
        ]
    )
    ui = RecordingUI(plan_reviews=[PlanReview("accept")])
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("plan it, then do it")
    assert ui.text.endswith("All done.")
    sent = [{t["function"]["name"] for t in r.body["tools"]} for r in model_server.model_requests()]
    names = lambda schemas: {s["function"]["name"] for s in schemas}  # noqa: E731
    assert sent[0] == names(registry.TOOLS)
    assert sent[1] == names(registry.AGENT_TOOLS)  # plan: read-only
    assert not sent[1] & {"bash", "write_file", "edit_file", "task_agent", "plan_agent"}
    assert sent[3] == names(registry.TASK_AGENT_TOOLS)  # task: writes, no agents
    assert {"bash", "write_file"} <= sent[3] and not sent[3] & {"task_agent", "plan_agent"}


async def test_the_active_skill_is_restored_on_resume(model_server, tmp_path) -> None:
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "haiku.md").write_text(
        "---\nname: haiku\ndescription: Answer in haiku\n---\nWrite every answer as a haiku.\n"
    )
    model_server.script(
        [
            Reply.tools([("skill", {"action": "load", "name": "haiku"})]),
            Reply.text("Loaded."),
            Reply.text("ok"),
        ]
    )
    cfg = make_config(model_server, tmp_path)
    cfg.tools.skip_permissions = True
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session = await new_session(cfg, RecordingUI(), tmp_path, storage=storage)
        session.ctx.skills_dir = skills
        await session.send("use the haiku skill")
        assert "Write every answer as a haiku." in session.system_prompt
        await session.aclose()
        resumed = await new_session(
            cfg, RecordingUI(), tmp_path, storage=storage, session_id=session.session_id
        )
        assert "Write every answer as a haiku." in resumed.system_prompt
        await resumed.send("hello again")
        system = model_server.model_requests()[-1].body["messages"][0]
        assert system["role"] == "system" and "Write every answer as a haiku." in system["content"]
        other = await new_session(cfg, RecordingUI(), tmp_path, storage=storage)  # a new conversation
        assert "Write every answer as a haiku." not in other.system_prompt
    finally:
        await storage.close()


async def test_the_model_is_told_the_permission_mode_when_it_changes(model_server, tmp_path) -> None:
    """A mode change (shift+tab) reaches the model as a short note appended to the history before
    the next request, mid-turn too; the system prompt (the cached prefix) stays the same; a resumed
    session knows what it last told the model."""
    from turnstone_tui.core.permissions import Mode

    model_server.script(
        [
            Reply.text("default answer"),
            Reply.tools([("write_file", {"path": "a.txt", "content": "x"}, "call_w")]),
            Reply.text("planned"),
            Reply.text("still planning"),
            Reply.text("back to default"),
        ]
    )
    cfg = make_config(model_server, tmp_path)
    storage = await Storage.open(tmp_path / "t.db")
    try:
        ui = RecordingUI()
        session = await new_session(cfg, ui, tmp_path, storage=storage)
        await session.send("hello")  # default mode: nothing to tell
        session.set_mode(Mode.ACCEPT_EDITS)

        def switch_to_plan(items: list) -> ApprovalDecision:  # the user presses shift+tab mid-turn
            session.set_mode(Mode.PLAN)
            return ApprovalDecision(approved=False)

        ui.approvals.append(switch_to_plan)
        session.set_mode(Mode.DEFAULT)  # and back before the turn: no note for a mode never in force
        await session.send("write a.txt")
        await session.send("go on")  # the mode did not change: no second note
        await session.aclose()

        resumed = await new_session(
            cfg, RecordingUI(), tmp_path, storage=storage, session_id=session.session_id
        )
        await resumed.send("do it")  # a resumed session starts in default: the model is told so
    finally:
        await storage.close()
    bodies = [r.body for r in model_server.model_requests()]
    assert len({json.dumps(b["messages"][0]) for b in bodies}) == 1  # one system prompt throughout
    notes = [
        [
            m["content"]
            for m in b["messages"]
            if m["role"] == "user" and m["content"].startswith("[permission mode")
        ]
        for b in bodies
    ]
    assert notes[0] == notes[1] == []
    assert len(notes[2]) == 1 and notes[2][0].startswith("[permission mode: plan] Only read-only tools run")
    assert bodies[2]["messages"][-1]["content"] == notes[2][0]  # after the refused call's result
    assert bodies[2]["messages"][-2]["role"] == "tool"
    assert notes[3] == notes[2]
    assert notes[4][-1].startswith("[permission mode: default]") and len(notes[4]) == 2
    assert bodies[4]["messages"][-2:] == [
        {"role": "user", "content": "do it"},
        {"role": "user", "content": notes[4][-1]},
    ]


async def test_a_task_sub_agent_reads_its_parents_plan(model_server, tmp_path, monkeypatch) -> None:
    """The plan lives in the data dir (a secret store but for the session's own plan): a task
    sub-agent handed the plan's path reads it, as its parent could."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    cfg = make_config(model_server, tmp_path)
    cfg.db_path = ""  # the default: plans in ~/.local/share/turnstone/plans
    work = tmp_path / "work"
    work.mkdir()
    plan = tmp_path / "home" / ".local" / "share" / "turnstone" / "plans" / "sess-plan.md"
    model_server.script(
        [
            Reply.tools([("plan_agent", {"goal": "a feature"})]),
            Reply.text("# Plan\n1. add the flag"),  # the plan sub-agent
            Reply.tools([("task_agent", {"prompt": f"carry out the plan in {plan}"})]),
            Reply.tools([("read_file", {"path": str(plan)}, "call_read")]),  # the task sub-agent
            Reply.text("read it"),
            Reply.text("All done."),
        ]
    )
    ui = RecordingUI(plan_reviews=[PlanReview("accept")])
    session = await new_session(cfg, ui, work, session_id="sess-plan")
    await session.send("plan it, then do it")
    assert plan.is_file()
    (name, result) = ui.results["call_read"]
    assert name == "read_file" and not result.is_error, result.text
    assert "1. add the flag" in result.text


async def test_the_next_request_does_not_wait_for_the_results_to_be_stored(model_server, tmp_path) -> None:
    """A finished call's result is stored at once, but the request that carries the batch's
    results goes out without waiting for that write (a round trip to the database thread, tens of
    ms on a busy loop); the model's reply is stored after them, in order."""
    model_server.script(
        [
            Reply.tools([("bash", {"command": f"echo r{n}"}) for n in range(3)]),
            Reply.text("All three ran."),
        ]
    )
    storage = await Storage.open(tmp_path / "t.db")
    gate = asyncio.Event()
    real = storage._in_worker

    async def held(fn, *args):  # noqa: ANN001, ANN202 - writes of tool results wait for the gate
        rows = args[0] if args and isinstance(args[0], list) else []
        if any(message.get("role") == "tool" for _, message, _ in rows):
            await gate.wait()
        return await real(fn, *args)

    try:
        session = await new_session(
            make_config(model_server, tmp_path),
            RecordingUI(),
            tmp_path,
            storage=storage,
            skip_permissions=True,
        )
        storage._in_worker = held  # type: ignore[method-assign]
        turn = asyncio.create_task(session.send("run three"))
        for _ in range(1000):  # up to 20 s
            if len(model_server.model_requests()) >= 2:
                break
            await asyncio.sleep(0.02)
        assert len(model_server.model_requests()) == 2, "the second request waited for the stored results"
        assert len(tool_messages(model_server.model_requests()[1].body)) == 3
        gate.set()
        await asyncio.wait_for(turn, 20)
        stored = await storage.load_messages(session.session_id)
        assert [m["role"] for m in stored] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
        assert stored[-1]["content"] == "All three ran."
    finally:
        gate.set()
        await storage.close()


async def test_a_running_sub_agent_follows_a_mode_change_at_once(model_server, tmp_path) -> None:
    """The user switches from accept-edits back to default while a task sub-agent runs (shift+tab
    to stop edits running unasked): its next write must ask. The sub-agent copied the mode when it
    started and kept writing unasked until it finished."""
    from turnstone_tui.core.permissions import Mode

    model_server.script(
        [
            Reply.tools([("task_agent", {"prompt": "write two files"}, "call_task")]),
            Reply.tools([("write_file", {"path": "a.txt", "content": "a\n"}, "call_a")]),
            Reply.tools([("write_file", {"path": "b.txt", "content": "b\n"}, "call_b")]),
            Reply.text("both written"),  # the sub-agent
            Reply.text("All done."),
        ]
    )
    session: ChatSession | None = None

    class SwitchingUI(RecordingUI):
        def on_tool_result(self, call_id: str, name: str, result) -> None:  # type: ignore[no-untyped-def]
            super().on_tool_result(call_id, name, result)
            if call_id == "call_a" and session is not None:
                session.set_mode(Mode.DEFAULT)  # the user presses shift+tab

    ui = SwitchingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    session.set_mode(Mode.ACCEPT_EDITS)
    await session.send("delegate it")
    assert ui.text.endswith("All done.")
    asked = [item.call_id for batch in ui.approval_requests for item in batch]
    assert "call_task" in asked and "call_a" not in asked  # accept-edits: the first write ran unasked
    assert "call_b" in asked  # default again: the second asks
    assert (tmp_path / "b.txt").read_text() == "b\n"  # approved (the default answer)


async def test_each_executed_result_carries_how_long_the_call_ran(model_server, tmp_path) -> None:
    """ToolResult.elapsed: measured by the engine around the call (the cards show it); a call
    refused before running has none."""
    model_server.script(
        [
            Reply.tools([("bash", {"command": "sleep 0.3"}, "call_sleep"), ("nope_tool", {}, "call_bad")]),
            Reply.text("Done."),
        ]
    )
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path, skip_permissions=True)
    await session.send("go")
    ran = ui.results["call_sleep"][1]
    assert ran.elapsed is not None and ran.elapsed >= 0.3
    assert ui.results["call_bad"][1].elapsed is None
