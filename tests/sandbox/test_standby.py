"""A sandboxed bash call's sandbox starts while the user is asked, and runs nothing of the command
until the call is approved and runs (executors/proc_group.Standby, issue 13 row 7): the real session
and pipeline against the scripted model server, real bubblewrap. SAFETY: the commands only write
marker files in tmp_path.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from tests.sandbox.test_escalation import make_config
from turnstone_tui.core.types import ApprovalDecision, PreparedItem, ToolStatus
from turnstone_tui.executors.proc_group import STANDBY_WAITER, Standby
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session
from turnstone_tui.sandbox import SandboxPolicy, plan, support

pytestmark = pytest.mark.timeout(120)
SUPPORT = support()
needs_bwrap = pytest.mark.skipif(not SUPPORT.available, reason=f"sandbox unavailable: {SUPPORT.reason}")


def waiting_sandboxes() -> list[psutil.Process]:
    """This process's descendants running the standby waiter (the shell in each sandbox, still
    waiting for its word; bwrap's two processes around it carry the same argv)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            argv = child.cmdline()
            if argv[:2] == list(STANDBY_WAITER[:2]) and STANDBY_WAITER[3] in argv:
                found.append(child)
        except psutil.Error:
            continue
    return found


async def wait_for(condition: object, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@needs_bwrap
async def test_the_sandboxes_wait_while_the_user_is_asked_and_only_approved_commands_run(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    model_server.script(
        [
            Reply.tools(
                [
                    ("bash", {"command": "echo ran > a.flag; echo A-ran"}, "call_a"),
                    ("bash", {"command": "echo ran > b.flag; echo B-ran"}, "call_b"),
                    ("bash", {"command": "echo ran > c.flag; exit 3"}, "call_c"),
                ]
            ),
            Reply.text("Done."),
        ]
    )
    gate = asyncio.Event()

    def answer(items: list[PreparedItem]) -> ApprovalDecision:
        return ApprovalDecision(approved=True, per_call={"call_b": False})

    ui = RecordingUI(approvals=[answer], approval_gate=gate)
    cfg = make_config(model_server, tmp_path)
    session = build_session(cfg, create_provider(cfg), ui, cwd=work)  # type: ignore[arg-type]
    await session.start()
    turn = asyncio.create_task(session.send("three"))
    try:
        # asked: the three sandboxes are up, waiting, and none of the commands ran
        await wait_for(lambda: len(waiting_sandboxes()) == 3, "three sandboxes started while asked")
        await asyncio.sleep(0.3)
        assert not list(work.glob("*.flag")) and len(waiting_sandboxes()) == 3  # noqa: ASYNC240
        gate.set()
        await asyncio.wait_for(turn, 60)
    finally:
        gate.set()
        if not turn.done():
            turn.cancel()
    assert sorted(p.name for p in work.glob("*.flag")) == ["a.flag", "c.flag"]  # the denied one never ran
    results = {call_id: result for call_id, (_, result) in ui.results.items()}
    assert "A-ran" in results["call_a"].text and "[exit code: 0]" in results["call_a"].text
    assert "[exit code: 3]" in results["call_c"].text
    assert results["call_b"].status is ToolStatus.DENIED and "B-ran" not in results["call_b"].text
    await wait_for(lambda: not waiting_sandboxes(), "the denied call's sandbox to end")


def standby_for(work: Path, command: str) -> Standby:
    planned = plan(SandboxPolicy(mode="auto", network=False), ["bash", "-c", command], cwd=work)
    assert planned.sandboxed
    return Standby(planned.argv, cwd=work, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})


@needs_bwrap
async def test_a_standby_closed_or_cut_off_before_its_word_never_runs_its_command(tmp_path: Path) -> None:
    """Closed (the call was denied, or the batch cancelled): killed while it waits. Its pipe at end
    of file (the agent gone: its end closed by the kernel): the waiter exits without the command."""
    closed = standby_for(tmp_path, "echo ran > closed.flag")
    cut = standby_for(tmp_path, "echo ran > cut.flag")
    closed.start()
    cut.start()
    await wait_for(lambda: len(waiting_sandboxes()) == 2, "two sandboxes waiting")
    closed.close()
    task = cut._task
    assert task is not None
    proc, _ = (await task) or (None, None)
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()  # (what the kernel does to the agent's end when the agent dies)
    assert await asyncio.wait_for(proc.wait(), 30) != 0
    await wait_for(lambda: not waiting_sandboxes(), "both sandboxes to end")
    await asyncio.sleep(0.3)
    assert not list(tmp_path.glob("*.flag"))  # noqa: ASYNC240
    assert await closed.take() is None  # a closed standby is never told to run
