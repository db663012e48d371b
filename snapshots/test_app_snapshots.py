"""Snapshots of the real TurnstoneApp shell (real Runtime and ChatSession, scripted model server):
the empty app, a streamed answer (dark and light themes), the slash-command completion, an error state,
the help screen and the watch inbox.

Every snapshot was looked at as a picture before it was accepted. The UI clock is frozen, the cursor
does not blink, the terminal size is fixed and token usage is scripted so the status bar is stable.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.helpers.model_server import Reply, ScriptedModelServer  # noqa: E402
from tests.helpers.scripted_config import scripted_config  # noqa: E402
from turnstone_tui.app.app import TurnstoneApp  # noqa: E402
from turnstone_tui.app.screens.help import HelpScreen  # noqa: E402
from turnstone_tui.app.screens.inbox import InboxScreen  # noqa: E402
from turnstone_tui.app.screens.permissions import PermissionsScreen  # noqa: E402
from turnstone_tui.core.permissions import Mode, parse_rule  # noqa: E402
from turnstone_tui.runtime import Runtime, RuntimeOptions  # noqa: E402
from turnstone_tui.widgets.prompt_input import CompletionMenu  # noqa: E402

pytestmark = pytest.mark.timeout(120)

SIZE = (100, 30)

ANSWER = """\
## Plan

The failing test comes from **`parse_date`**: it assumes UTC. Three steps:

1. read the timezone from the config
2. pass it to `parse_date`
3. add a regression test

```python
def parse_date(text: str, tz: str = "UTC") -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz))
```

> Nothing else depends on the old behaviour.
"""

REASONING = "The user asks why the test fails. The traceback points at parse_date and a naive datetime."


def make_app(server: ScriptedModelServer, tmp_path: Path) -> TurnstoneApp:
    workdir = tmp_path / "project"
    workdir.mkdir(exist_ok=True)
    config = scripted_config(server.openai_base_url, tmp_path / "turnstone.db", context_window=32000)
    # whether bubblewrap runs depends on the machine: the sandbox is off, so the status bar (and the
    # approval modal) read the same everywhere
    config.sandbox.mode = "off"
    options = RuntimeOptions(cwd=workdir, start_mcp=False, start_watches=False)

    async def factory() -> Runtime:
        return await Runtime.create(config, options=options)

    return TurnstoneApp(runtime_factory=factory, cwd=workdir)


async def wait_until(
    pilot: Pilot, predicate: Callable[[], object], limit: float = 20.0, what: str = ""
) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.05)
    await pilot.pause()


async def ready(pilot: Pilot) -> TurnstoneApp:
    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    await asyncio.wait_for(app.wait_ready(), 20)
    app.prompt.cursor_blink = False
    await pilot.pause()
    return app


async def send_and_wait(pilot: Pilot, text: str) -> None:
    app = await ready(pilot)
    done = app.turns_finished
    app.prompt.focus()
    app.prompt.insert(text)
    await pilot.press("enter")
    await wait_until(pilot, lambda: app.turns_finished > done and not app.busy, what="the turn")
    await pilot.pause(0.2)


def test_empty_app(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot) -> None:
        await ready(pilot)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_help_screen_at_90_columns(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    """Long descriptions wrap inside their column (issue 11 item 10: columns line up at 90x30)."""

    async def run_before(pilot: Pilot) -> None:
        app = await ready(pilot)
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=(90, 30), run_before=run_before)


def test_streamed_answer(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    model_server.script([Reply.text(ANSWER, reasoning=REASONING, chunk_size=7, usage=(5200, 140))])

    async def run_before(pilot: Pilot) -> None:
        await send_and_wait(pilot, "why does test_dates fail?")

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_streamed_answer_light_theme(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    model_server.script([Reply.text(ANSWER, reasoning=REASONING, chunk_size=7, usage=(5200, 140))])

    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-light"
        await send_and_wait(pilot, "why does test_dates fail?")

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_slash_command_completion(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot) -> None:
        app = await ready(pilot)
        app.prompt.focus()
        await pilot.press("/")
        await wait_until(pilot, lambda: app.query_one(CompletionMenu).is_open, what="the completion menu")

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_error_state(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    model_server.script([Reply.error(503, "the model is overloaded, try again later")])

    async def run_before(pilot: Pilot) -> None:
        await send_and_wait(pilot, "summarise the README")

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot) -> None:
        app = await ready(pilot)
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


INBOX_NOW = 1_800_000_000.0
WAITING = [
    (
        "a1b2c3d4e5f6",
        "deploy the 2.4 release to staging",
        "deploy",
        420.0,
        '[watch deploy] condition met (`"finished" in output`) after 3 poll(s) of `./deploy-status staging` '
        "(exit code 0):\nstaging: deploy finished, 12/12 pods ready",
    ),
    (
        "0f9e8d7c6b5a",
        "why is CI red on main?",
        "ci",
        3 * 3600.0,
        "[watch ci] output changed after 7 poll(s) of `gh run list --limit 1` (exit code 0):\n"
        "completed  success  main  CI  push  2m13s",
    ),
]


def test_inbox_screen(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    """Two watch results waiting for closed conversations: the status bar count and the inbox."""

    async def run_before(pilot: Pilot) -> None:
        app = await ready(pilot)
        storage = app.runtime.storage
        for sid, prompt, name, age, text in WAITING:
            await storage.create_session(sid)
            await storage.append_message(sid, {"role": "user", "content": prompt})
            rid = await storage.queue_watch_result(sid, text, watch_id=name, name=name)
            await storage.conn.execute(
                "UPDATE watch_results SET created = ? WHERE id = ?", (INBOX_NOW - age, rid)
            )
        await storage.conn.commit()
        app.refresh_inbox()
        await wait_until(pilot, lambda: app.status_bar.inbox == 2, what="the inbox count")
        results = await app.runtime.inbox()
        app.push_screen(InboxScreen(results, now=INBOX_NOW))
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), what="the inbox")
        await pilot.pause(0.2)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_new_output_marker(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    """Scrolled up while output arrives below: the "new output ↓" bar under the chat (issue 11 item 5)."""
    paragraphs = "\n\n".join(f"Paragraph {i}: the build log says step {i} passed." for i in range(40))
    model_server.script([Reply.text(paragraphs, chunk_size=400, usage=(5200, 140))])

    async def run_before(pilot: Pilot) -> None:
        await send_and_wait(pilot, "summarise the build log")
        app = pilot.app
        assert isinstance(app, TurnstoneApp)
        await pilot.press("pageup")
        await wait_until(pilot, lambda: not app.chat.following, what="the chat to stop following")
        await app.chat.add_info("A watch fired: the nightly build finished.")
        marker = app.screen.query_one("#new-output")
        await wait_until(pilot, lambda: marker.has_class("-shown"), what="the new output marker")
        await pilot.pause(0.2)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_permissions_screen(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/permissions with rules of every scope: deny first, the user's and the project's files, a rule
    of this session, the mode and the read-only tools underneath."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))  # the user file shows as ~/.config/turnstone/permissions.toml
    monkeypatch.setenv("TURNSTONE_PERMISSIONS", str(home / ".config" / "turnstone" / "permissions.toml"))
    app = make_app(model_server, tmp_path)

    async def run_before(pilot: Pilot) -> None:
        await ready(pilot)
        assert app.runtime is not None and app.session is not None
        store = app.runtime.permissions
        for text, effect, scope in (
            ("bash(rm:*)", "deny", "user"),
            ("web_fetch(domain:docs.python.org)", "allow", "user"),
            ("bash(npm run test:*)", "allow", "project"),
            ("bash(git push:*)", "ask", "project"),
        ):
            store.add(parse_rule(text, effect, scope))
        app.session.policy.grant_session(parse_rule("bash(git status:*)"))
        app.session.set_mode(Mode.ACCEPT_EDITS)
        app.prompt.insert("/permissions")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionsScreen), what="/permissions")
        await pilot.press("down")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(110, 32), run_before=run_before)


def test_undo_screen(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    """/undo after a turn that edited one file and created another: what each file will do, with the diff."""
    model_server.script(
        [
            Reply.tools([("read_file", {"path": "dates.py"}, "call_read")], usage=(900, 20)),
            Reply.tools(
                [
                    (
                        "edit_file",
                        {"path": "dates.py", "old_string": 'tz = "UTC"', "new_string": "tz = config.tz"},
                        "call_edit",
                    ),
                    (
                        "write_file",
                        {"path": "test_dates.py", "content": "def test_tz():\n    ...\n"},
                        "call_new",
                    ),
                ],
                usage=(1200, 40),
            ),
            Reply.text("Done: the timezone comes from the config.", usage=(1500, 12)),
        ]
    )

    async def run_before(pilot: Pilot) -> None:
        app = await ready(pilot)
        (tmp_path / "project" / "dates.py").write_text(
            'def parse(text):\n    tz = "UTC"\n    return text, tz\n'
        )
        app.prompt.focus()
        app.prompt.insert("use the configured timezone")
        await pilot.press("enter")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ApprovalScreen", what="the approval")
        await pilot.press("y")
        await wait_until(pilot, lambda: app.turns_finished >= 1 and not app.busy, what="the turn")
        app.prompt.insert("/undo")
        await pilot.press("enter")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "UndoScreen", what="the undo screen")
        await pilot.pause(0.2)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_escalation_screen(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    """An approved command the sandbox refused: run it again OUTSIDE the sandbox? (the command as the
    approval rows show it, the failure line, the warning; y / n only)."""
    from turnstone_tui.core.types import EscalationRequest

    request = EscalationRequest(
        call_id="call_commit",
        func_name="bash",
        command="git add src/dates.py tests/test_dates.py && git commit -m 'Read the timezone from the config'",
        failure="fatal: Unable to create '/home/user/project/.git/index.lock': Read-only file system",
        cause=(
            "a read-only file system: the sandbox binds every .git (and everything outside the "
            "workspace and [sandbox] writable) read-only"
        ),
    )
    asked: list[asyncio.Task[bool | None]] = []

    async def run_before(pilot: Pilot) -> None:
        app = await ready(pilot)
        asked.append(asyncio.create_task(app.bridge.confirm_unsandboxed(request)))
        await wait_until(pilot, lambda: type(app.screen).__name__ == "EscalationScreen", what="the question")
        await pilot.pause(0.2)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)
