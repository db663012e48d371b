"""Permission rules and modes through the real app: an "always" answer with a prefix rule saved to
the project file, /permissions adding, editing and deleting rules with the keyboard, shift+tab modes."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.app.helpers import answers, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.screens.approval import ApprovalRow, ApprovalScreen
from turnstone_tui.app.screens.permissions import PermissionsScreen
from turnstone_tui.app.screens.rule_edit import RuleEditScreen
from turnstone_tui.core.permission_store import PermissionStore
from turnstone_tui.core.permissions import parse_rule
from turnstone_tui.widgets.status_bar import StatusBar

SIZE = (110, 34)


def tool_results(server: ScriptedModelServer) -> list[str]:
    return [m["content"] for m in server.model_requests()[-1].body["messages"] if m["role"] == "tool"]


def project_file(app: TurnstoneApp) -> Path:
    assert app.runtime is not None
    return app.runtime.permissions.project.path


async def test_always_with_a_prefix_rule_saves_it_and_the_next_matching_call_runs_unasked(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script(
        [
            Reply.tools([("bash", {"command": "echo test one"}, "c1")]),
            Reply.text("one"),
            Reply.tools([("bash", {"command": "echo test two --more"}, "c2")]),
            Reply.text("two"),
            Reply.tools([("bash", {"command": "echo test three; echo other"}, "c3")]),
            Reply.text("three"),
        ]
    )
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "first", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the modal")
        row = app.screen.query_one(ApprovalRow)
        assert [r.text for r in row.rules] == ["bash(echo test:*)"]
        await pilot.press("space", "space")  # this session -> saved: project
        assert row.scope == "project"
        await pilot.press("y")
        await wait_until(pilot, lambda: app.turns_finished == 1)
        saved = project_file(app)
        assert 'allow = [\n    "bash(echo test:*)",\n]' in saved.read_text()
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        # the next matching call runs without a modal
        await send(pilot, "second")
        assert answers(app)[-1] == "two"
        assert "test two --more" in tool_results(model_server)[-1]
        # a compound command of which only one part matches asks
        await send(pilot, "third", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="asked for the compound")
        await pilot.press("n")
        await wait_until(pilot, lambda: app.turns_finished == 3)
    # a new process (another session of this project) has the rule too
    assert app.runtime is not None
    again = PermissionStore(app.runtime.permissions.user.path, app.runtime.permissions.workspace)
    assert [(r.text, r.scope) for r in again.rules()] == [("bash(echo test:*)", "project")]


async def test_permissions_screen_adds_edits_and_deletes_rules_with_the_keyboard(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "/permissions", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionsScreen), what="/permissions")
        screen = app.screen
        assert isinstance(screen, PermissionsScreen)
        # add: a, type the rule, enter (scope: project by default)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, RuleEditScreen), what="the rule editor")
        await pilot.press(*"bash(git status", "enter")  # not closed: refused with the reason
        assert isinstance(app.screen, RuleEditScreen)
        assert "ends with ')'" in str(app.screen.query_one("#rule-error").render())
        await pilot.press(")", "enter")
        await wait_until(
            pilot, lambda: app.screen is screen and len(screen.shown) == 1, what="the rule added"
        )
        assert [(e.rule.effect, e.rule.text, e.source) for e in screen.shown] == [
            ("allow", "bash(git status)", "project")
        ]
        assert '"bash(git status)"' in project_file(app).read_text()
        # edit: enter on the row, change the text, tab to the effect, pick "deny", tab to scope, pick "user"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RuleEditScreen), what="the editor")
        await pilot.press(
            "end", "backspace", *":*)", "tab", "down", "down", "enter", "tab", "down", "down", "enter"
        )
        await pilot.press("ctrl+s")
        await wait_until(
            pilot,
            lambda: app.screen is screen and screen.shown[0].rule.effect == "deny",
            what="the rule changed",
        )
        assert [(e.rule.effect, e.rule.text, e.source) for e in screen.shown] == [
            ("deny", "bash(git status:*)", "user")
        ]
        assert app.runtime is not None
        assert 'deny = [\n    "bash(git status:*)",\n]' in app.runtime.permissions.user.path.read_text()
        assert '"bash(git status)"' not in project_file(app).read_text()
        # delete
        await pilot.press("d")
        await wait_until(pilot, lambda: not screen.shown, what="the rule deleted")
        assert "git status" not in app.runtime.permissions.user.path.read_text()
        await pilot.press("escape")


async def test_a_deny_rule_refuses_the_call_and_tells_the_model(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    assert app.runtime is not None
    app.runtime.permissions.add(parse_rule("bash(rm:*)", "deny", "user"))
    model_server.script([Reply.tools([("bash", {"command": "sudo rm -r build"}, "c1")]), Reply.text("ok")])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "clean up")  # no modal: refused at once
        assert app.turns_finished == 1
        result = tool_results(model_server)[-1]
        assert "denied by the rule bash(rm:*) (user scope)" in result
        assert app.chat.tool_card("c1").status == "denied"


async def test_shift_tab_cycles_the_mode_shown_in_the_status_bar_and_plan_mode_refuses_edits(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    model_server.script(
        [Reply.tools([("write_file", {"path": "a.txt", "content": "x"}, "c1")]), Reply.text("ok")]
    )
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        bar = app.query_one(StatusBar)

        def shown() -> str:
            return str(bar.query_one("#status-mode").render())

        assert shown() in ("sandbox", "no sandbox", "sandbox unavailable")  # the default mode is not named
        seen = []
        for _ in range(4):
            await pilot.press("shift+tab")
            assert app.session is not None
            mode = app.session.policy.mode.value
            await wait_until(
                pilot, lambda m=mode: shown().startswith(f"{m} · ") or m == "default" and " · " not in shown()
            )
            seen.append(mode)
        assert seen == ["accept-edits", "plan", "full-auto", "default"]
        await pilot.press("shift+tab", "shift+tab")
        await wait_until(pilot, lambda: shown().startswith("plan"))
        assert app.session is not None and app.session.policy.mode.value == "plan"
        await send(pilot, "write it")  # no modal: refused with a message to the model
        result = tool_results(model_server)[-1]
        assert "plan mode allows read-only tools only" in result
        assert app.runtime is not None and not (app.runtime.options.cwd / "a.txt").exists()
        # the model was told the mode with the message (not only by the refusal), once
        first = model_server.model_requests()[0].body["messages"]
        assert [m["content"][:23] for m in first[-2:]] == ["write it", "[permission mode: plan]"]
        notes = [
            m
            for m in model_server.model_requests()[-1].body["messages"]
            if "[permission mode" in (m["content"] or "")
        ]
        assert len(notes) == 1


async def test_an_untrusted_project_file_is_shown_and_t_trusts_it(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    assert app.runtime is not None
    path = project_file(app)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('allow = ["bash(make:*)"]\ndeny = ["bash(curl:*)"]\n')  # as a cloned repository has it
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await send(pilot, "/permissions", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionsScreen), what="/permissions")
        screen = app.screen
        assert isinstance(screen, PermissionsScreen)
        notes = {e.rule.text: e.note for e in screen.shown}
        assert "not trusted" in notes["bash(make:*)"] and notes["bash(curl:*)"] == ""
        assert [r.text for r in app.runtime.permissions.rules()] == ["bash(curl:*)"]
        await pilot.press("t")
        await wait_until(pilot, lambda: not any(e.note for e in screen.shown), what="trusted")
        assert [r.text for r in app.runtime.permissions.rules()] == ["bash(make:*)", "bash(curl:*)"]
        await pilot.press("escape")
