"""A command the sandbox refused (EROFS from its read-only binds) may run again OUTSIDE the sandbox,
but only when the user says so: the real session and pipeline, a real model SDK against the scripted
model server, real bubblewrap, a scratch git repository under tmp_path (whose .git the sandbox binds
read-only, so `git add && git commit` fails there). SAFETY: commands only touch that scratch repository.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
from pathlib import Path

import pytest

from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.core.permissions import Mode
from turnstone_tui.core.session import ChatSession
from turnstone_tui.headless import HeadlessUI
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session
from turnstone_tui.sandbox import support

pytestmark = pytest.mark.timeout(120)
SUPPORT = support()
needs_bwrap = pytest.mark.skipif(not SUPPORT.available, reason=f"sandbox unavailable: {SUPPORT.reason}")

COMMIT = "echo x > a.txt && git add a.txt && git -c user.name=t -c user.email=t@x commit -qm 'from the agent' && echo COMMITTED"


def make_config(server: ScriptedModelServer, tmp_path: Path, *, sandbox: str = "auto") -> Config:
    cfg = Config()
    cfg.model.provider = "openai"
    cfg.api.base_url = server.openai_base_url
    cfg.api.api_key = "test-key"
    cfg.model.name = "test-model"
    cfg.model.retries = 0
    cfg.db_path = str(tmp_path / "t.db")
    cfg.sandbox.mode = sandbox
    cfg.sandbox.network = "off"
    return cfg


def scratch_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    return repo


def commits(repo: Path) -> str:
    done = subprocess.run(["git", "-C", str(repo), "log", "--oneline"], capture_output=True, text=True)
    return done.stdout


async def run_turn(
    server: ScriptedModelServer, tmp_path: Path, repo: Path, ui: object, command: str, **kw: object
) -> tuple[ChatSession, str]:
    server.script([Reply.tools([("bash", {"command": command})]), Reply.text("Done.")])
    cfg = make_config(server, tmp_path, sandbox=str(kw.pop("sandbox", "auto")))
    mode = kw.pop("mode", None)
    session = build_session(cfg, create_provider(cfg), ui, cwd=repo, **kw)  # type: ignore[arg-type]
    await session.start()
    if isinstance(mode, Mode):
        session.policy.mode = mode
    await session.send("commit it")
    second = server.model_requests()[1].body
    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert len(results) == 1
    return session, results[0]


@needs_bwrap
async def test_git_commit_refused_by_the_sandbox_runs_outside_it_when_the_user_approves(
    model_server, tmp_path
) -> None:
    repo = scratch_repo(tmp_path)
    ui = RecordingUI(escalations=[True])
    _, result = await run_turn(model_server, tmp_path, repo, ui, COMMIT)
    [request] = ui.escalation_requests
    assert request.command == COMMIT
    assert "Read-only file system" in request.failure and "index.lock" in request.failure
    # asked after the approval and after the sandboxed run, before the result
    kinds = [kind for kind, _ in ui.events]
    assert (
        kinds.index("approve")
        < kinds.index("tool_start")
        < kinds.index("escalate")
        < kinds.index("tool_result")
    )
    assert "from the agent" in commits(repo)
    assert "OUTSIDE the sandbox" in result and "user approved" in result, result
    assert "COMMITTED" in result and "[exit code: 0]" in result, result
    assert result.count("[exit code:") == 1  # the second run's output, not both
    call_id = request.call_id
    assert any("OUTSIDE the sandbox" in line for line, _ in ui.chunks[call_id])


@needs_bwrap
async def test_declined_the_command_stays_undone_and_the_model_is_told_why(model_server, tmp_path) -> None:
    repo = scratch_repo(tmp_path)
    ui = RecordingUI(escalations=[False])
    _, result = await run_turn(model_server, tmp_path, repo, ui, "touch .git/escalated && echo TOUCHED")
    assert len(ui.escalation_requests) == 1
    assert not (repo / ".git" / "escalated").exists()
    assert "TOUCHED" not in result
    assert "Read-only file system" in result and "failed inside the sandbox" in result, result
    assert "the user declined" in result and "ask the user to run it themselves" in result, result


@needs_bwrap
@pytest.mark.parametrize("how", ["full-auto", "skip-permissions"])
async def test_full_auto_and_skip_permissions_still_ask_before_leaving_the_sandbox(
    model_server, tmp_path, how
) -> None:
    """No mode escapes the sandbox unasked: full-auto runs the sandboxed command without asking, then
    asks before the run outside it (--skip-permissions too)."""
    repo = scratch_repo(tmp_path)
    ui = RecordingUI(escalations=[False])
    kw: dict[str, object] = {"mode": Mode.FULL_AUTO} if how == "full-auto" else {"skip_permissions": True}
    await run_turn(model_server, tmp_path, repo, ui, COMMIT, **kw)
    assert ui.approval_requests == []  # the sandboxed run was not asked about
    assert len(ui.escalation_requests) == 1 and commits(repo) == ""


@needs_bwrap
async def test_headless_never_runs_outside_the_sandbox(model_server, tmp_path) -> None:
    repo = scratch_repo(tmp_path)
    err = io.StringIO()
    ui = HeadlessUI(io.StringIO(), err, color=False)
    _, result = await run_turn(model_server, tmp_path, repo, ui, COMMIT, skip_permissions=True)
    assert commits(repo) == ""
    assert "no interactive user" in result and "Read-only file system" in result, result
    assert "not run outside the sandbox (no user to ask)" in err.getvalue()


async def test_an_unsandboxed_failure_that_prints_the_words_is_not_offered(model_server, tmp_path) -> None:
    """Only a run the sandbox confined is offered a run outside it (runs without bwrap too)."""
    repo = scratch_repo(tmp_path)
    ui = RecordingUI(escalations=[True])
    command = "echo 'cp: cannot create regular file: Read-only file system' >&2; exit 1"
    _, result = await run_turn(model_server, tmp_path, repo, ui, command, sandbox="off")
    assert ui.escalation_requests == [] and "OUTSIDE" not in result


@needs_bwrap
async def test_a_sandboxed_failure_without_the_sandbox_s_refusal_is_not_offered(
    model_server, tmp_path
) -> None:
    repo = scratch_repo(tmp_path)
    ui = RecordingUI(escalations=[True])
    _, result = await run_turn(model_server, tmp_path, repo, ui, "ls /nonexistent-path-xyz")
    assert ui.escalation_requests == [] and "[exit code: 2]" in result


@needs_bwrap
async def test_a_cancelled_question_runs_nothing_outside(model_server, tmp_path) -> None:
    """The turn is cancelled while the question is open: nothing runs outside the sandbox."""
    repo = scratch_repo(tmp_path)
    asked = asyncio.Event()

    class Hanging(RecordingUI):
        async def confirm_unsandboxed(self, request):  # type: ignore[no-untyped-def]
            asked.set()
            await asyncio.Event().wait()
            return True

    ui = Hanging()
    model_server.script([Reply.tools([("bash", {"command": COMMIT})]), Reply.text("Done.")])
    cfg = make_config(model_server, tmp_path)
    session = build_session(cfg, create_provider(cfg), ui, cwd=repo)
    await session.start()
    turn = asyncio.create_task(session.send("commit it"))
    await asyncio.wait_for(asked.wait(), 60)
    session.cancel()
    await asyncio.wait_for(turn, 60)
    assert commits(repo) == ""
    [(_, result)] = ui.results.values()
    assert "cancel" in result.text.lower()


async def test_a_sub_agent_s_question_goes_to_the_user_of_its_parent() -> None:
    """A sub-agent never decides: its UI forwards the question to the parent's (the user answers);
    with no user (NullUI, as in benchmarks) the answer is None and nothing runs."""
    from turnstone_tui.core.protocol import NullUI
    from turnstone_tui.core.subagent import SubagentUI
    from turnstone_tui.core.types import EscalationRequest

    request = EscalationRequest("c1", "bash", "touch .git/x", "touch: .git/x: Read-only file system", "ro")
    parent = RecordingUI(escalations=[True])
    assert await SubagentUI(parent, "task").confirm_unsandboxed(request) is True
    assert parent.escalation_requests == [request]
    assert await SubagentUI(NullUI(), "task").confirm_unsandboxed(request) is None
