"""Watches that always arrive: results are queued in SQLite until their session stores them.

Real sessions against the scripted model server, the real watch runner running real commands,
real lock files (another process holding a session is a real subprocess), and the real
``turnstone-tui -p`` for the headless cases.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.core.test_headless import base_args, run_cli
from tests.helpers.model_server import Reply
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.executors.watch_runner import WatchRunner
from turnstone_tui.runtime import Runtime, RuntimeOptions, build_session
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(120)


def config_for(server, tmp_path: Path) -> Config:
    cfg = server.config()
    cfg.db_path = str(tmp_path / "t.db")
    return cfg


async def add_watch(storage: Storage, session_id: str, name: str = "ci", command: str = "echo done") -> str:
    watch_id = uuid.uuid4().hex[:8]
    now = time.time()
    await storage.add_watch(
        {
            "id": watch_id,
            "session_id": session_id,
            "name": name,
            "command": command,
            "poll_every": 10.0,
            "stop_on": '"done" in output',
            "max_polls": 5,
            "polls": 0,
            "next_run": now - 1,
            "prev_output": None,
            "active": 1,
            "created": now,
        }
    )
    return watch_id


async def until(condition: Callable[[], Awaitable[bool]], limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], str)]


async def noop_notify(session_id: str, text: str) -> None:
    return None


async def test_a_result_that_fires_while_the_session_is_busy_is_delivered_after_the_turn(
    model_server, tmp_path: Path
) -> None:
    # the first answer streams slowly: the watch fires in the middle of the user's turn
    model_server.script(
        [Reply.text("a b c d e f g h i j k l m n o p", delay=0.15), Reply.text("Noted the CI.")]
    )
    storage = await Storage.open(tmp_path / "t.db")
    cfg = config_for(model_server, tmp_path)
    from turnstone_tui.providers.factory import create_provider

    provider = create_provider(cfg)
    ui = RecordingUI()
    session = build_session(cfg, provider, ui, storage=storage, cwd=tmp_path)
    try:
        await session.start()
        session.watch_delivery = True
        await add_watch(storage, session.session_id)
        runner = WatchRunner(
            storage, lambda sid, text: _schedule(session), owns={session.session_id}.__contains__
        )
        turn = asyncio.create_task(session.send("a long question"))
        await asyncio.to_thread(model_server.wait_for_requests, 1)
        assert session.busy
        assert len(await runner.run_once()) == 1
        pending = await storage.pending_watch_results(session.session_id)
        assert len(pending) == 1 and pending[0]["text"].startswith("[watch ci] condition met")
        assert not any(t.startswith("[watch ci]") for t in user_texts(session.messages))
        await turn
        await asyncio.to_thread(model_server.wait_for_requests, 2)
        await until(lambda: _no_pending(storage, session.session_id))
        await until(_idle(session))
    finally:
        await session.aclose()
        await provider.aclose()
    last_user = model_server.model_requests()[1].body["messages"][-1]
    assert last_user["role"] == "user" and last_user["content"].startswith("[watch ci] condition met")
    stored = await storage.load_messages(session.session_id)
    assert [t for t in user_texts(stored) if t.startswith("[watch ci]")] == [last_user["content"]]
    assert ui.text.endswith("Noted the CI.")
    await storage.close()


def _schedule(session) -> Awaitable[None]:
    session.schedule_watch_delivery()
    return asyncio.sleep(0)


async def _no_pending(storage: Storage, session_id: str) -> bool:
    return not await storage.pending_watch_results(session_id)


def _idle(session) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        task = session._delivery_task
        return not session.busy and (task is None or task.done())

    return check


async def test_a_result_queued_when_the_process_stops_mid_turn_is_delivered_on_resume(
    model_server, tmp_path: Path
) -> None:
    model_server.script([Reply.stall(60), Reply.text("Welcome back; the CI is done.")])
    cfg = config_for(model_server, tmp_path)
    runtime = await Runtime.create(
        cfg, options=RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False)
    )
    try:
        session = await runtime.create_session(RecordingUI())
        sid = session.session_id
        await add_watch(runtime.storage, sid)
        runtime._start_watch_runner()
        turn = asyncio.create_task(session.send("wait for the model"))
        await asyncio.to_thread(model_server.wait_for_requests, 1)
        await until(lambda: _has_pending(runtime.storage, sid))  # fired while the turn ran
        turn.cancel()
    finally:
        await runtime.aclose()  # the process ends before the session was ever idle again
    runtime = await Runtime.create(
        cfg, options=RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False)
    )
    try:
        ui = RecordingUI()
        resumed = await runtime.create_session(ui, sid)
        assert await resumed.deliver_watch_results() == 1
        assert not await runtime.storage.pending_watch_results(sid)
        assert await resumed.deliver_watch_results() == 0  # delivered once
    finally:
        await runtime.aclose()
    last_user = model_server.model_requests()[-1].body["messages"][-1]
    assert last_user["content"].startswith("[watch ci] condition met")
    assert ui.text.endswith("Welcome back; the CI is done.")


async def _has_pending(storage: Storage, session_id: str) -> bool:
    return bool(await storage.pending_watch_results(session_id))


async def test_a_result_for_a_session_that_is_not_open_waits_in_the_inbox_until_resumed(
    model_server, tmp_path: Path
) -> None:
    model_server.script([Reply.text("First answer."), Reply.text("The CI finished, as you asked.")])
    cfg = config_for(model_server, tmp_path)
    options = RuntimeOptions(cwd=tmp_path, start_mcp=False, start_watches=False, watch_host=True)
    runtime = await Runtime.create(cfg, options=options)
    announced: list[str] = []
    runtime.add_inbox_listener(lambda: announced.append("inbox"))
    try:
        first = await runtime.create_session(RecordingUI())
        sid = first.session_id
        await first.send("watch the CI for me")
        await runtime.close_session(first)  # /new: the session is open nowhere now
        await add_watch(runtime.storage, sid)
        runtime._start_watch_runner()
        await until(lambda: _inbox_size(runtime, 1))
        [row] = await runtime.inbox()
        assert row["session_id"] == sid and row["name"] == "ci"
        assert row["first_prompt"] == "watch the CI for me"
        assert announced == ["inbox"]
        stored = await runtime.storage.load_messages(sid)
        assert not any(t.startswith("[watch") for t in user_texts(stored))  # not appended silently
        assert len(model_server.model_requests()) == 1  # and no turn ran
        ui = RecordingUI()
        resumed = await runtime.create_session(ui, sid)
        resumed.watch_delivery = True  # what the app does once the session is shown
        resumed.schedule_watch_delivery()
        await asyncio.to_thread(model_server.wait_for_requests, 2)
        await until(_idle(resumed))
        assert await runtime.inbox() == []
    finally:
        await runtime.aclose()
    last_user = model_server.model_requests()[1].body["messages"][-1]
    assert last_user["content"].startswith("[watch ci] condition met")
    assert ui.text.endswith("The CI finished, as you asked.")


async def _inbox_size(runtime: Runtime, size: int) -> bool:
    return len(await runtime.inbox()) == size


HOLD_LOCK = """
import sys, time
from pathlib import Path
from turnstone_tui.storage.session_lock import acquire_session_lock
acquire_session_lock(Path(sys.argv[1]), sys.argv[2])
print("locked", flush=True)
time.sleep(120)
"""


async def test_a_process_polls_only_the_watches_of_sessions_it_owns(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    storage = await Storage.open(db)
    for sid in ("mine", "orphan", "theirs"):
        await storage.create_session(sid)
        await add_watch(storage, sid, name=f"w-{sid}")
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLD_LOCK, str(db), "theirs", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and (await holder.stdout.readline()).strip() == b"locked"
        assert storage.held_elsewhere("theirs") and not storage.held_elsewhere("orphan")
        owns = {"mine"}.__contains__
        # a process that is not the watch host (headless): its own session only
        plain = WatchRunner(storage, noop_notify, owns=owns)
        assert await _fired_sessions(storage, await plain.run_once()) == {"mine"}
        # the watch host also adopts the orphan, never the session another process has open
        host = WatchRunner(storage, noop_notify, owns=owns, adopt_unowned=True)
        try:
            assert await _fired_sessions(storage, await host.run_once()) == {"orphan"}
        finally:
            await host.aclose()
        [theirs] = await storage.list_watches("theirs")
        assert theirs["polls"] == 0 and theirs["active"] == 1
        assert {r["session_id"] for r in await storage.pending_watch_results()} == {"mine", "orphan"}
    finally:
        holder.kill()
        await holder.wait()
        await storage.close()


async def _fired_sessions(storage: Storage, watch_ids: list[str]) -> set[str]:
    rows = await storage.list_watches(None, active_only=False)
    return {w["session_id"] for w in rows if w["id"] in watch_ids}


async def test_only_one_process_is_the_watch_host(tmp_path: Path) -> None:
    storage = await Storage.open(tmp_path / "t.db")
    await storage.create_session("orphan")
    await add_watch(storage, "orphan")
    first = WatchRunner(storage, noop_notify, owns=lambda sid: False, adopt_unowned=True)
    second = WatchRunner(storage, noop_notify, owns=lambda sid: False, adopt_unowned=True)
    try:
        assert first._host is not None and first._host.try_acquire()
        assert await second.run_once() == []  # the host lock is taken: no adopted polls
        assert (await storage.list_watches("orphan"))[0]["polls"] == 0
        assert len(await first.run_once()) == 1
    finally:
        await first.aclose()
        await second.aclose()
        await storage.close()


def test_a_headless_run_does_not_fire_other_sessions_watches(model_server, tmp_path: Path) -> None:
    async def seed() -> None:
        storage = await Storage.open(tmp_path / "t.db")
        await storage.create_session("other")
        await add_watch(storage, "other", command="echo done; sleep 1")
        await storage.close()

    asyncio.run(seed())
    model_server.script([Reply.text("hello", delay=0.3), Reply.text("more", delay=0.3)])
    proc = run_cli([*base_args(model_server, tmp_path, "openai"), "-p", "hi"], tmp_path)
    assert proc.returncode == 0, proc.stderr

    async def check() -> None:
        storage = await Storage.open(tmp_path / "t.db")
        try:
            [watch] = await storage.list_watches("other")
            assert watch["polls"] == 0 and watch["active"] == 1
            assert await storage.pending_watch_results() == []
            assert await storage.load_messages("other") == []
        finally:
            await storage.close()

    asyncio.run(check())


def test_a_headless_resume_delivers_the_waiting_result_before_the_prompt(
    model_server, tmp_path: Path
) -> None:
    model_server.script([Reply.text("Started."), Reply.text("CI is green."), Reply.text("Nothing else.")])
    args = base_args(model_server, tmp_path, "openai")
    first = run_cli([*args, "-p", "watch CI"], tmp_path)
    assert first.returncode == 0, first.stderr
    sid = first.stderr.strip().splitlines()[-1].removeprefix("session: ")

    async def queue() -> None:
        storage = await Storage.open(tmp_path / "t.db")
        await storage.queue_watch_result(sid, "[watch ci] condition met: green", watch_id="w", name="ci")
        await storage.close()

    asyncio.run(queue())
    proc = run_cli([*args, "--resume", sid, "-p", "anything else?"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["CI is green.", "Nothing else."]
    requests = model_server.model_requests()
    assert requests[1].body["messages"][-1]["content"] == "[watch ci] condition met: green"
    assert requests[2].body["messages"][-1]["content"] == "anything else?"

    async def check() -> None:
        storage = await Storage.open(tmp_path / "t.db")
        try:
            assert await storage.pending_watch_results() == []
        finally:
            await storage.close()

    asyncio.run(check())
