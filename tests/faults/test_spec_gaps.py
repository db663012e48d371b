"""Spec gaps that lost work (issue 15 item 10), each through the real `turnstone-tui` console script
against the scripted model server: what the model is told is read off the next request it receives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.faults.harness import model_args, run, session_ids
from tests.helpers.model_server import Reply, ScriptedModelServer

pytestmark = pytest.mark.timeout(180)


def tool_results(server: ScriptedModelServer) -> dict[str, str]:
    """call id -> the tool result text the last request carried (OpenAI protocol)."""
    body = server.model_requests()[-1].body
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def system_prompt(server: ScriptedModelServer) -> str:
    body = server.model_requests()[-1].body
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def test_a_loaded_skill_survives_resume(tmp_path: Path) -> None:
    skills = tmp_path / "home" / ".config" / "turnstone" / "skills"
    skills.mkdir(parents=True)
    (skills / "haiku.md").write_text("Write every answer as a haiku about PINECONES-7.\n")
    db = tmp_path / "t.db"
    script = [Reply.tools([("skill", {"action": "load", "name": "haiku"}, "load_it")]), Reply.text("loaded")]
    with ScriptedModelServer(script) as server:
        first = run([*model_args(server, db), "--skip-permissions", "-p", "use the haiku skill"], tmp_path)
        assert first.returncode == 0, first.stderr
        assert "PINECONES-7" in system_prompt(server)  # active in the same run
        (session_id,) = session_ids(db)
        server.script([Reply.text("still a haiku")])
        resumed = run([*model_args(server, db), "--resume", session_id, "-p", "and now?"], tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        # the resumed session's system prompt still carries the skill (it was gone before)
        assert "PINECONES-7" in system_prompt(server)


def test_plan_agent_takes_prompt_as_the_spec_names_it(tmp_path: Path) -> None:
    script = [
        Reply.tools([("plan_agent", {"prompt": "add a cache to the API"}, "plan_it")]),
        Reply.text("# Plan\n1. Add the cache layer.\n"),  # the read-only planning agent's answer
        Reply.text("planned"),
    ]
    with ScriptedModelServer(script) as server:
        done = run([*model_args(server, tmp_path / "t.db"), "-p", "plan it"], tmp_path)
        assert done.returncode == 0, done.stderr
        result = tool_results(server)["plan_it"]
    assert "invalid arguments" not in result and "required" not in result, result
    assert "Add the cache layer" in result


def test_feedback_goes_only_to_the_calls_it_was_written_for(tmp_path: Path) -> None:
    # headless: bash is --allow'ed and runs; write_file needs approval and is refused with the reason
    script = [
        Reply.tools(
            [
                ("bash", {"command": "echo allowed-ran"}, "allowed"),
                ("write_file", {"path": "x.txt", "content": "hi"}, "needs_ok"),
            ]
        ),
        Reply.text("done"),
    ]
    with ScriptedModelServer(script) as server:
        done = run([*model_args(server, tmp_path / "t.db"), "--allow", "bash", "-p", "go"], tmp_path)
        assert done.returncode == 0, done.stderr
        results = tool_results(server)
    assert "allowed-ran" in results["allowed"]
    assert "no user can approve" not in results["allowed"], results["allowed"]
    assert "no user can approve" in results["needs_ok"]


def test_a_nul_byte_in_a_command_is_a_clear_error(tmp_path: Path) -> None:
    script = [Reply.tools([("bash", {"command": "echo a\x00b"}, "nul")]), Reply.text("ok")]
    with ScriptedModelServer(script) as server:
        done = run([*model_args(server, tmp_path / "t.db"), "--skip-permissions", "-p", "go"], tmp_path)
        assert done.returncode == 0, done.stderr
        result = tool_results(server)["nul"]
    assert "contains a NUL byte" in result and "nothing was run" in result
    assert "ValueError" not in result and "embedded null byte" not in result


def test_read_then_edit_in_one_batch(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("colour: red\n")
    script = [
        Reply.tools(
            [
                ("read_file", {"path": "notes.txt"}, "read"),
                ("edit_file", {"path": "notes.txt", "old_string": "red", "new_string": "blue"}, "edit"),
            ]
        ),
        Reply.text("edited"),
    ]
    with ScriptedModelServer(script) as server:
        done = run([*model_args(server, tmp_path / "t.db"), "--skip-permissions", "-p", "go"], tmp_path)
        assert done.returncode == 0, done.stderr
        results = tool_results(server)
    assert "Edited notes.txt" in results["edit"], results["edit"]
    assert (tmp_path / "notes.txt").read_text() == "colour: blue\n"


def test_tool_json_with_a_trailing_comma_is_repaired(tmp_path: Path) -> None:
    raw = '{"command": "echo repaired-ok",}'
    script = [Reply.tools([("bash", raw, "sloppy")]), Reply.text("ok")]
    with ScriptedModelServer(script) as server:
        done = run([*model_args(server, tmp_path / "t.db"), "--skip-permissions", "-p", "go"], tmp_path)
        assert done.returncode == 0, done.stderr
        result = tool_results(server)["sloppy"]
    assert "repaired-ok" in result, json.dumps(result)
