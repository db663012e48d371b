"""A resumed chat's tool cards end as the live ones did: the outcome is stored as fields, not re-read from text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnstone_tui.app.replay import stored_result
from turnstone_tui.core.outcomes import cancelled_result, denied_result
from turnstone_tui.core.session import repair_history, tool_message
from turnstone_tui.core.types import ExecContext, PreparedItem, ToolResult
from turnstone_tui.executors.bash import run_bash
from turnstone_tui.widgets.tool_card import classify_result

pytestmark = pytest.mark.timeout(60)


async def bash_result(command: str, tmp_path: Path) -> ToolResult:
    return await run_bash(
        command, ExecContext("x", lambda *_: None), cwd=tmp_path, time_limit=1, limit=10_000
    )


def through_storage(result: ToolResult) -> ToolResult:
    stored = json.loads(json.dumps(tool_message("c1", "bash", result)))
    return stored_result(stored)


async def test_bash_outcomes_survive_storage(tmp_path: Path) -> None:
    item = PreparedItem("c1", "bash", {}, header="bash")
    results = [
        await bash_result("echo fine", tmp_path),
        await bash_result("exit 1", tmp_path),
        await bash_result("exit 3", tmp_path),
        await bash_result("sleep 5", tmp_path),
        await bash_result("kill -9 $$", tmp_path),
        denied_result("bash"),
        cancelled_result(),
    ]
    live = [classify_result(item, r) for r in results]
    assert live == [
        ("ok", "exit 0"),
        ("warning", "exit 1"),
        ("error", "exit 3"),
        ("error", "timed out"),
        ("error", "killed (SIGKILL)"),
        ("denied", "denied"),
        ("cancelled", "cancelled"),
    ]
    assert [classify_result(item, through_storage(r)) for r in results] == live


def test_a_call_repaired_on_resume_shows_as_cancelled() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "bash"}}]},
    ]
    repaired = repair_history(messages)[-1]
    item = PreparedItem("c1", "bash", {}, header="bash")
    assert classify_result(item, stored_result(repaired)) == ("cancelled", "cancelled")


def test_an_unknown_stored_status_is_ignored() -> None:
    result = stored_result({"role": "tool", "content": "x", "status": "exploded", "process": {"bogus": 1}})
    assert result.status == "ok" and result.process is None


def test_a_permission_mode_note_is_not_shown_as_a_user_message() -> None:
    """The note told the model the mode; live, the user saw it in the status bar, not in the chat."""
    from turnstone_tui.app.replay import replay_entries
    from turnstone_tui.core.permissions import Mode, mode_note

    messages = [
        {"role": "user", "content": "plan it"},
        mode_note(Mode.PLAN),
        {"role": "assistant", "content": "ok"},
    ]
    shown = [(entry.func.__name__, entry.args) for entry in replay_entries(messages)]  # type: ignore[attr-defined]
    assert shown == [("UserMessage", ("plan it",)), ("AssistantMessage", ("ok",))]


def test_engine_notes_are_shown_as_one_line_notices_not_as_the_users_words() -> None:
    """A resumed chat shows the changed-resources note and the plan review as short notices (the
    model got their full text; the user never typed it)."""
    from turnstone_tui.app.replay import replay_entries
    from turnstone_tui.core.mcp_bridge import ResourceUpdate
    from turnstone_tui.core.session import PLAN_REVIEW_KIND, resource_updates_message

    changed = resource_updates_message(
        [
            ResourceUpdate("docs://readme", "demo", "new text\n" * 500),
            ResourceUpdate("file:///a", "demo", "x"),
        ]
    )
    review = {
        "role": "user",
        "content": "[plan review] The user reviewed and ACCEPTED this plan. Proceed with it.\n\nPlan file: /p.md",
        "kind": PLAN_REVIEW_KIND,
    }
    messages = [changed, {"role": "user", "content": "go on"}, review]
    shown = [(entry.func.__name__, entry.args) for entry in replay_entries(messages)]  # type: ignore[attr-defined]
    assert shown == [
        (
            "InfoMessage",
            (
                "MCP resources changed since the model read them: docs://readme, file:///a "
                "(their new contents went to the model)",
            ),
        ),
        ("UserMessage", ("go on",)),
        ("InfoMessage", ("Plan review: The user reviewed and ACCEPTED this plan. Proceed with it.",)),
    ]
