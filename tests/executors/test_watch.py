"""watch: the tool (create / list / cancel and its limits), the stop_on sandbox, and the runner."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.executors.local_http import make_ctx, run_item
from turnstone_tui.executors.watch import PREPARERS, parse_duration
from turnstone_tui.executors.watch_expr import WatchExprError, compile_condition, poll_variables
from turnstone_tui.executors.watch_runner import OUTPUT_CAP, WatchRunner
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Storage]:
    db = await Storage.open(tmp_path / "t.db")
    try:
        yield db
    finally:
        await db.close()


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []
        self.arrived = asyncio.Event()

    async def __call__(self, session_id: str, text: str) -> None:
        self.messages.append((session_id, text))
        self.arrived.set()


async def watch(ctx, **args):
    item = await PREPARERS["watch"](ctx, "w1", args)
    return item, (None if item.error else await run_item(item))


# --- stop_on sandbox ------------------------------------------------------------------------------

ESCAPES = [
    "().__class__.__mro__",
    "__import__('os')",
    "open('/etc/passwd')",
    "[c for c in ().__class__.__bases__]",
    "output.__class__",
    "getattr(output, 'x')",
    "(lambda: 1)()",
    "exec('import os')",
    "eval('1')",
    "globals()",
    "output.format()",  # format strings can reach attributes
    "'{0.__class__}'.format(output)",
    "str.lower(output)",  # a method taken from a type
    "type(output)",
    "f'{output}'",
    "(x := 1)",
    "__builtins__",
    "_ts_pow(2, 2)",  # the guards' own names are off limits
    "sorted(output, key=str.lower)",
    "len(**{'x': 1})",
    "output.join(output)",  # memory blow-up
    "[x for x in output]",
    "{x: 1 for x in output}",
    "any(any(1 for a in output) for b in output)",  # nested loops
    "any(1 for a in output for b in output)",
    "1 << 100000",
    "str.lower and 1",
    "data.get.__self__",
    "dict(__class__=1)",
    "output\x00",
    "not " * 600 + "True",
    "(" * 300 + "1" + ")" * 300,
]


@pytest.mark.parametrize("expr", ESCAPES)
def test_escape_attempts_are_refused_at_compile(expr: str) -> None:
    with pytest.raises(WatchExprError):
        compile_condition(expr)


@pytest.mark.parametrize(
    "expr", ["9**9**9", "'x' * 10**9", "10**100000 > 1", "'%999999999d' % 1", "[0] * 10**8"]
)
def test_resource_bombs_are_stopped(expr: str) -> None:
    with pytest.raises(WatchExprError):
        compile_condition(expr).evaluate(poll_variables("", 0, None))


@pytest.mark.parametrize(
    ("expr", "output", "expected"),
    [
        ('data["state"] == "MERGED"', '{"state": "MERGED"}', True),
        ('"error" in output', "all good", False),
        ("exit_code != 0", "", False),
        ('changed and "ready" in output.lower()', "Service READY", True),
        ('data.get("mergedAt") is not None', '{"mergedAt": null}', False),
        (
            'any(j["status"] == "failed" for j in data["jobs"])',
            '{"jobs": [{"status": "ok"}, {"status": "failed"}]}',
            True,
        ),
        ("len(output.splitlines()) >= 2 and max(1, 2) == 2", "a\nb", True),
        ("isinstance(data, dict) and sorted(data.keys()) == ['a', 'b']", '{"b": 1, "a": 2}', True),
        ("2 ** 10 == 1024 and 'ab' * 2 == 'abab'", "", True),
    ],
)
def test_useful_conditions_work(expr: str, output: str, expected: bool) -> None:
    assert compile_condition(expr).evaluate(poll_variables(output, 0, "before")) is expected


def test_runtime_errors_are_values() -> None:
    cond = compile_condition('data["state"] == "x"')
    with pytest.raises(WatchExprError, match="TypeError"):
        cond.evaluate(poll_variables("not json", 0, None))  # data is None
    with pytest.raises(WatchExprError, match="not allowed on a int"):
        compile_condition("exit_code.count(1)").evaluate(poll_variables("", 3, None))


def test_durations() -> None:
    assert parse_duration("30s") == 30
    assert parse_duration("5m") == 300
    assert parse_duration("1h30m") == 5400
    assert parse_duration("1d") == 86400
    assert parse_duration("45") == 45
    for bad in ("", "soon", "5 parsecs", "-5m"):
        with pytest.raises(ValueError):
            parse_duration(bad)


# --- the tool ----------------------------------------------------------------------------------


async def test_create_list_cancel(tmp_path: Path, storage: Storage) -> None:
    ctx = make_ctx(tmp_path, storage=storage)
    item, result = await watch(
        ctx,
        action="create",
        name="ci",
        command="cat status.txt",
        poll_every="30s",
        stop_on='"done" in output',
        max_polls=10,
    )
    assert item.needs_approval and item.preview_kind == "bash" and "cat status.txt" in item.preview
    assert result is not None and not result.is_error and "'ci'" in result.text
    [row] = await storage.list_watches("sess1")
    assert row["poll_every"] == 30 and row["max_polls"] == 10 and row["stop_on"] == '"done" in output'
    listed_item, listed = await watch(ctx, action="list")
    assert not listed_item.needs_approval
    assert listed is not None and "ci (id" in listed.text and "every 30s" in listed.text
    cancel_item, cancelled = await watch(ctx, action="cancel", name=row["id"][:4])  # id prefix works
    assert not cancel_item.needs_approval
    assert cancelled is not None and "cancelled" in cancelled.text
    assert await storage.list_watches("sess1") == []
    _, again = await watch(ctx, action="cancel", name="ci")
    assert again is not None and again.is_error


async def test_limits(tmp_path: Path, storage: Storage) -> None:
    ctx = make_ctx(tmp_path, storage=storage)
    for i in range(5):
        _, ok = await watch(ctx, action="create", name=f"w{i}", command="true", poll_every="10s")
        assert ok is not None and not ok.is_error
    sixth, _ = await watch(ctx, action="create", name="w5", command="true")
    assert sixth.error and "at most 5" in sixth.error
    # Another session has its own budget.
    other = make_ctx(tmp_path, storage=storage, session_id="other")
    _, ok = await watch(other, action="create", name="w0", command="true")
    assert ok is not None and not ok.is_error
    dup, _ = await watch(other, action="create", name="w0", command="true")
    assert dup.error and "already active" in dup.error
    for args, message in [
        ({"poll_every": "5s"}, "between 10s and 24h"),
        ({"poll_every": "25h"}, "between 10s and 24h"),
        ({"poll_every": "often"}, "cannot read duration"),
        ({"max_polls": 0}, "max_polls"),
        ({"stop_on": "().__class__"}, "stop_on refused"),
        ({"stop_on": "output ==="}, "not a valid Python expression"),
        ({"command": ""}, "needs a 'command'"),
        ({"name": None}, "needs a 'name'"),
    ]:
        full = {"action": "create", "name": "new", "command": "true", **args}
        item, _ = await watch(other, **{k: v for k, v in full.items() if v is not None})
        assert item.error and message in item.error, (args, item.error)


async def test_bad_action_and_no_storage(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert (await PREPARERS["watch"](ctx, "w", {"action": "pause"})).error
    assert "no database" in (await PREPARERS["watch"](ctx, "w", {"action": "list"})).error


# --- the runner --------------------------------------------------------------------------------


async def test_runner_fires_when_the_condition_is_met(tmp_path: Path, storage: Storage) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    await storage.create_session("sess1", cwd=str(project))
    (project / "status.txt").write_text("pending\n")
    ctx = make_ctx(tmp_path, storage=storage)
    await watch(
        ctx,
        action="create",
        name="ci",
        command="cat status.txt",
        poll_every="10s",
        stop_on='"done" in output',
    )
    clock, inbox = Clock(), Inbox()
    runner = WatchRunner(storage, inbox, clock=clock)
    assert await runner.run_once() == []
    assert await runner.run_once() == []  # not due again before 10 s
    [row] = await storage.list_watches("sess1")
    assert row["polls"] == 1 and row["prev_output"] == "pending\n"
    clock.now += 10
    (project / "status.txt").write_text("done\n")
    fired = await runner.run_once()
    assert fired == [row["id"]]
    [(session, text)] = inbox.messages
    assert session == "sess1"
    assert text.startswith('[watch ci] condition met (`"done" in output`) after 2 poll(s)')
    assert "done" in text
    assert await storage.list_watches("sess1") == []
    [done] = await storage.list_watches("sess1", active_only=False)
    assert done["active"] == 0 and "condition met" in done["result"]


async def test_change_detection_without_stop_on(tmp_path: Path, storage: Storage) -> None:
    await storage.create_session("sess1", cwd=str(tmp_path))
    (tmp_path / "f").write_text("v1")
    await watch(
        make_ctx(tmp_path, storage=storage), action="create", name="file", command="cat f", poll_every="10s"
    )
    clock, inbox = Clock(), Inbox()
    runner = WatchRunner(storage, inbox, clock=clock)
    for _ in range(2):  # baseline, then unchanged
        assert await runner.run_once() == []
        clock.now += 10
    (tmp_path / "f").write_text("v2")
    assert len(await runner.run_once()) == 1
    assert "output changed after 3 poll(s)" in inbox.messages[0][1] and "v2" in inbox.messages[0][1]


async def test_max_polls_gives_up(tmp_path: Path, storage: Storage) -> None:
    await watch(
        make_ctx(tmp_path, storage=storage),
        action="create",
        name="never",
        command="echo same",
        poll_every="10s",
        stop_on="exit_code == 1",
        max_polls=2,
    )
    clock, inbox = Clock(), Inbox()
    runner = WatchRunner(storage, inbox, clock=clock)
    assert await runner.run_once() == []
    clock.now += 10
    assert len(await runner.run_once()) == 1
    assert inbox.messages[0][1].startswith("[watch never] gave up after max_polls (2)")


async def test_overdue_watch_polls_once_after_restart(tmp_path: Path) -> None:
    db_path = tmp_path / "t.db"
    first = await Storage.open(db_path)
    await watch(
        make_ctx(tmp_path, storage=first),
        action="create",
        name="slow",
        command="date +%N",
        poll_every="1h",
        stop_on="exit_code == 7",
    )
    await first.close()
    # The app was closed for a day: the watch is 24 polls overdue.
    storage = await Storage.open(db_path)
    try:
        clock, inbox = Clock(), Inbox()
        clock.now += 86400
        runner = WatchRunner(storage, inbox, clock=clock)
        assert await runner.run_once() == []
        [row] = await storage.list_watches()
        assert row["polls"] == 1 and row["next_run"] == clock.now + 3600
        assert await runner.run_once() == []  # no burst of catch-up polls
        assert (await storage.list_watches())[0]["polls"] == 1
    finally:
        await storage.close()


async def test_overdue_condition_fires_once_after_restart(tmp_path: Path, storage: Storage) -> None:
    await watch(
        make_ctx(tmp_path, storage=storage),
        action="create",
        name="ready",
        command="echo ready",
        poll_every="1h",
        stop_on='"ready" in output',
    )
    clock, inbox = Clock(), Inbox()
    clock.now += 7200
    runner = WatchRunner(storage, inbox, clock=clock)
    assert len(await runner.run_once()) == 1
    assert await runner.run_once() == []
    assert len(inbox.messages) == 1


async def test_background_loop_fires_and_closes(tmp_path: Path, storage: Storage) -> None:
    inbox = Inbox()
    runner = WatchRunner(storage, inbox, check_interval=0.05)
    runner.start()
    try:
        ctx = make_ctx(tmp_path, storage=storage, watches=runner)
        await watch(ctx, action="create", name="quick", command="echo hi", stop_on='output.strip() == "hi"')
        await asyncio.wait_for(inbox.arrived.wait(), 10)
    finally:
        await runner.aclose()
    assert inbox.messages[0][1].startswith("[watch quick] condition met")


async def test_commands_get_a_scrubbed_env_capped_output_and_a_time_limit(
    tmp_path: Path, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "s3cret")
    runner = WatchRunner(storage, Inbox(), command_timeout=0.5)
    output, code, problem = await runner.run_command('echo "token=${DEPLOY_TOKEN:-unset}"', tmp_path)
    assert output == "token=unset\n" and code == 0 and problem is None
    output, _, _ = await runner.run_command("head -c 300000 /dev/zero | tr '\\0' x", tmp_path)
    assert len(output) <= OUTPUT_CAP and "truncated" in output
    started = time.monotonic()
    _, _, problem = await runner.run_command("sleep 30", tmp_path)
    assert problem and "timed out" in problem
    assert time.monotonic() - started < 10
    output, code, _ = await runner.run_command("echo oops >&2; exit 3", tmp_path)
    assert "oops" in output and code == 3


async def test_a_condition_that_keeps_failing_reports_after_three_polls(
    tmp_path: Path, storage: Storage
) -> None:
    await watch(
        make_ctx(tmp_path, storage=storage),
        action="create",
        name="json",
        command="echo not-json",
        poll_every="10s",
        stop_on='data["state"] == "ok"',
    )
    clock, inbox = Clock(), Inbox()
    runner = WatchRunner(storage, inbox, clock=clock)
    for _ in range(2):
        assert await runner.run_once() == []
        clock.now += 10
    assert len(await runner.run_once()) == 1
    assert "failed 3 polls in a row" in inbox.messages[0][1] and "TypeError" in inbox.messages[0][1]


async def test_a_watch_result_arrives_in_the_session_as_a_user_message(
    tmp_path: Path, storage: Storage, model_server
) -> None:
    from tests.helpers.model_server import Reply
    from tests.helpers.recording_ui import RecordingUI
    from turnstone_tui.config import Config
    from turnstone_tui.providers.openai_provider import OpenAIProvider
    from turnstone_tui.runtime import build_session

    (tmp_path / "status").write_text("running\n")
    model_server.script(
        [
            Reply.tools(
                [
                    (
                        "watch",
                        {
                            "action": "create",
                            "name": "job",
                            "command": "cat status",
                            "poll_every": "10s",
                            "stop_on": '"finished" in output',
                        },
                    )
                ]
            ),
            Reply.text("Watching the job."),
            Reply.text("The job finished."),
        ]
    )
    provider = OpenAIProvider(base_url=model_server.openai_base_url, api_key="x", model="scripted")
    ui = RecordingUI()
    session = build_session(Config(), provider, ui, storage=storage, cwd=tmp_path)
    try:
        await session.start()
        await session.send("tell me when the job finishes")
        assert [i.func_name for batch in ui.approval_requests for i in batch] == ["watch"]
        clock = Clock()
        runner = WatchRunner(storage, lambda sid, text: session.deliver_watch_results(), clock=clock)
        assert await runner.run_once() == []
        (tmp_path / "status").write_text("finished\n")
        clock.now += 10
        assert len(await runner.run_once()) == 1
    finally:
        await provider.aclose()
    last_user = model_server.model_requests()[-1].body["messages"][-1]
    assert last_user["role"] == "user" and last_user["content"].startswith("[watch job] condition met")
    assert "finished" in last_user["content"]
    assert ui.text.endswith("The job finished.")
