"""A watch's stop_on can never freeze the event loop: static limits refuse the obvious cases, the
evaluation runs in a child process with a CPU budget, and a watch over budget fails clearly."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from tests.executors.test_watch import Clock, Inbox, storage  # noqa: F401 - the fixture
from turnstone_tui.executors.watch_eval import WatchBudgetError, evaluate_in_child
from turnstone_tui.executors.watch_expr import WatchExprError, compile_condition, poll_variables
from turnstone_tui.executors.watch_runner import WatchRunner
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(180)

ISSUE_EXPRESSION = "any(sorted('a'*999999) == x for x in 'a'*999999)"
# Passes the static checks, but is quadratic in the output: 60 KB of output is ~10^9 steps.
QUADRATIC = "any(output.count(x + 'zz') > 1 for x in output)"


@pytest.mark.parametrize(
    "source",
    [
        ISSUE_EXPRESSION,
        "any(x == 'a' for x in 'a' * 99999)",
        "any(sorted(output) == x for x in output)",
        "all(max(output) for x in output)",
        "any(x * 100 for x in output)",
        "'" + "a" * 1001 + "' in output",
        "len('ab' * 100001) > 0",
    ],
)
def test_static_limits_refuse_expensive_expressions(source: str) -> None:
    with pytest.raises(WatchExprError):
        compile_condition(source)
        compile_condition(source).evaluate(poll_variables("x", 0, None))


def test_ordinary_expressions_still_work() -> None:
    for source, expected in [
        ("'done' in output", True),
        ('any("fail" in j for j in data["jobs"])', False),
        ("exit_code == 0 and len(output.splitlines()) == 1", True),
    ]:
        variables = poll_variables('{"jobs": ["ok", "done"]}', 0, None)
        assert compile_condition(source).evaluate(variables) is expected


async def test_child_evaluation_answers_and_reports_errors() -> None:
    variables = poll_variables('{"state": "done"}', 0, None)
    assert await evaluate_in_child('data["state"] == "done"', variables) is True
    assert await evaluate_in_child('data["state"] == "running"', variables) is False
    with pytest.raises(WatchExprError, match="KeyError"):
        await evaluate_in_child('data["missing"]', variables)


async def test_over_budget_is_stopped_while_the_loop_keeps_running() -> None:
    variables = poll_variables("ab" * 30_000, 0, None)
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    try:
        with pytest.raises(WatchBudgetError, match="evaluation budget"):
            await evaluate_in_child(QUADRATIC, variables, budget=0.3)
    finally:
        stop.set()
        await tick
    assert gaps and max(gaps) < 1.0  # the loop never stalled while the child burnt its budget


async def _add_watch(db: Storage, tmp_path: Path, stop_on: str, command: str) -> str:
    await db.create_session("sess1", cwd=str(tmp_path))
    wid = uuid.uuid4().hex[:8]
    now = time.time()
    await db.add_watch(
        {
            "id": wid,
            "session_id": "sess1",
            "name": "hostile",
            "command": command,
            "poll_every": 10.0,
            "stop_on": stop_on,  # stored directly: an expression from before the static limits
            "max_polls": 100,
            "next_run": now - 1,
            "created": now,
        }
    )
    return wid


async def test_a_stored_refused_expression_fails_the_watch_at_its_first_poll(
    tmp_path: Path,
    storage: Storage,  # noqa: F811
) -> None:
    await _add_watch(storage, tmp_path, ISSUE_EXPRESSION, "echo hi")
    inbox = Inbox()
    runner = WatchRunner(storage, inbox, clock=Clock())
    assert len(await asyncio.wait_for(runner.run_once(), 60)) == 1
    text = inbox.messages[0][1]
    assert "stopped" in text and "is refused" in text and "generator must loop over a value" in text
    assert await storage.list_watches("sess1") == []  # not polled again


async def test_a_watch_over_its_budget_fails_clearly(tmp_path: Path, storage: Storage) -> None:  # noqa: F811
    await _add_watch(storage, tmp_path, QUADRATIC, "yes ab | head -c 60000")
    inbox = Inbox()
    runner = WatchRunner(storage, inbox, clock=Clock(), eval_budget=0.3)
    assert len(await asyncio.wait_for(runner.run_once(), 90)) == 1
    text = inbox.messages[0][1]
    assert "used up its evaluation budget (0.3 s of CPU)" in text and "cheaper condition" in text
    [done] = await storage.list_watches("sess1", active_only=False)
    assert done["active"] == 0
