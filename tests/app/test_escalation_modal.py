"""The "run it again OUTSIDE the sandbox?" question in the app: asked through the real UI bridge (a
message carrying a Future, the question broker, a modal), answered with y / n / esc; and end to end
with real bubblewrap: an approved `git commit` the sandbox refused runs outside it after a `y`."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.app.conftest import make_config
from tests.app.helpers import answers, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.approval import ApprovalScreen
from turnstone_tui.app.screens.escalation import WARNING, EscalationScreen
from turnstone_tui.core.types import EscalationRequest
from turnstone_tui.runtime import Runtime, RuntimeOptions
from turnstone_tui.sandbox import support

pytestmark = pytest.mark.timeout(120)
SIZE = (100, 30)
SUPPORT = support()
needs_bwrap = pytest.mark.skipif(not SUPPORT.available, reason=f"sandbox unavailable: {SUPPORT.reason}")

REQUEST = EscalationRequest(
    call_id="call_1",
    func_name="bash",
    command="git add a.txt && git commit -m x # \x1b[2K\x1b[1Gls -la",
    failure="fatal: Unable to create '/work/p/.git/index.lock': Read-only file system",
    cause="a read-only file system",
)


def shown_text(screen: EscalationScreen) -> str:
    return "\n".join(str(widget.render()) for widget in screen.query(Static))


@pytest.mark.parametrize(("key", "expected"), [("y", True), ("n", False), ("escape", False)])
async def test_the_question_shows_the_written_out_command_and_answers_with_one_key(
    app: TurnstoneApp, key: str, expected: bool
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        answer = asyncio.create_task(app.bridge.confirm_unsandboxed(REQUEST))
        await wait_until(pilot, lambda: isinstance(app.screen, EscalationScreen), 20, "the question")
        screen = app.screen
        assert isinstance(screen, EscalationScreen)
        text = shown_text(screen)
        # the escape sequences that would erase the line in a terminal are written out, not sent
        assert "git commit -m x # \\x1b[2K\\x1b[1Gls -la" in text and "\x1b" not in text
        assert REQUEST.failure in text and WARNING in text
        assert "full access to your files and network" in WARNING and "OUTSIDE the sandbox" in WARNING
        assert app.status_bar.pending == 1
        await pilot.press(key)
        assert await asyncio.wait_for(answer, 20) is expected
        await wait_until(pilot, lambda: not isinstance(app.screen, EscalationScreen), 20, "the close")
        assert app.status_bar.pending == 0


async def test_a_withdrawn_question_closes_and_answers_nothing(app: TurnstoneApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        answer = asyncio.create_task(app.bridge.confirm_unsandboxed(REQUEST))
        await wait_until(pilot, lambda: isinstance(app.screen, EscalationScreen), 20, "the question")
        answer.cancel()
        await wait_until(pilot, lambda: not isinstance(app.screen, EscalationScreen), 20, "the close")
        assert answer.cancelled()


@needs_bwrap
async def test_an_approved_git_commit_the_sandbox_refused_runs_outside_it_after_y(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    await asyncio.to_thread(subprocess.run, ["git", "-C", str(repo), "init", "-q"], check=True)
    command = "echo x > a.txt && git add a.txt && git -c user.name=t -c user.email=t@x commit -qm agent"
    model_server.script([Reply.tools([("bash", {"command": command})]), Reply.text("Committed.")])
    config = make_config(model_server, tmp_path)
    config.sandbox.mode = "auto"
    config.sandbox.network = "off"
    runtime = await Runtime.create(
        config, options=RuntimeOptions(cwd=repo, start_mcp=False, start_watches=False)
    )
    app = TurnstoneApp(runtime, cwd=repo)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await start(pilot)
            await send(pilot, "commit it", wait=False)
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), 30, "the approval")
            await pilot.press("y")
            await wait_until(pilot, lambda: isinstance(app.screen, EscalationScreen), 60, "the question")
            screen = app.screen
            assert isinstance(screen, EscalationScreen)
            assert (
                "index.lock" in screen.request.failure and "Read-only file system" in screen.request.failure
            )
            await pilot.press("y")
            await wait_until(pilot, lambda: "Committed." in answers(app), 60, "the answer")
    finally:
        await runtime.aclose()
    git_log = ["git", "-C", str(repo), "log", "--oneline"]
    log = await asyncio.to_thread(subprocess.run, git_log, capture_output=True, text=True)
    assert "agent" in log.stdout
    results = [m for m in model_server.model_requests()[1].body["messages"] if m["role"] == "tool"]
    assert "OUTSIDE the sandbox" in results[0]["content"], results[0]["content"]
