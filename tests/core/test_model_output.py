"""The model-output boundary: hostile arguments, lone surrogates and duplicate ids through a real
session (OpenAI and Anthropic SDKs against the scripted model server, real tools, real SQLite) and
through the real headless CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.core.test_headless import base_args, cli_env
from tests.helpers.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.core.arguments import check_arguments, parse_arguments
from turnstone_tui.core.model_output import clean_text, unique_call_ids
from turnstone_tui.core.types import ToolCall
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(120)

HUGE_INT = '{"path": "a.txt", "limit": ' + "7" * 5000 + "}"
DEEP = '{"path": ' + "[" * 100_000 + "]" * 100_000 + "}"
SURROGATE_PATH = '{"path": "a\\ud800.txt"}'  # a JSON escape that decodes to a lone surrogate


# --- the parser on its own ------------------------------------------------------------------------


def test_limits_refuse_huge_integers_deep_nesting_and_oversized_text() -> None:
    huge = check_arguments(HUGE_INT, "path")
    assert huge.args is None and huge.rejected and "5000 digits" in (huge.error or "")
    deep = check_arguments(DEEP, "path")
    assert deep.args is None and deep.rejected and "nested 100001 deep" in (deep.error or "")
    big = check_arguments('{"path": "' + "x" * (4 * 1024 * 1024) + '"}', "path")
    assert big.args is None and big.rejected and "too large" in (big.error or "")
    # within the limits all is well
    assert parse_arguments('{"a": [[[1]]], "n": ' + "9" * 100 + "}", None)[0] == {
        "a": [[[1]]],
        "n": int("9" * 100),
    }


def test_near_json_is_repaired_and_cut_off_json_is_not() -> None:
    assert parse_arguments('{"path": "a.txt",}', "path") == ({"path": "a.txt"}, None)
    assert parse_arguments('{"path": "a.txt"', "path") == ({"path": "a.txt"}, None)
    assert parse_arguments("{'path': 'a.txt'}", "path") == ({"path": "a.txt"}, None)
    repaired = check_arguments('{"content": "x", "path": "b",}', None)
    assert repaired.repaired == '{"content": "x", "path": "b"}'
    refused = check_arguments('{"command": "rm -r build/out', "command", repair=False)
    assert refused.args is None and "not valid JSON" in (refused.error or "")


def test_lone_surrogates_are_replaced_and_pairs_kept() -> None:
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\ud83d\ude00") == "😀"  # a valid pair, as a JSON decoder may leave it
    assert check_arguments(SURROGATE_PATH, "path").args == {"path": "a\ufffd.txt"}


def test_duplicate_and_missing_ids_get_fresh_unique_ids() -> None:
    calls = [ToolCall("same", "a", "{}"), ToolCall("same", "b", "{}"), ToolCall("", "c", "{}")]
    fixed = unique_call_ids(calls, taken={"old"})
    ids = [c.id for c in fixed]
    assert ids[0] == "same" and len(set(ids)) == 3 and all(ids)
    again = unique_call_ids([ToolCall("old", "a", "{}")], taken={"old"})
    assert again[0].id != "old"


# --- through a real session -------------------------------------------------------------------------


def session_config(server: ScriptedModelServer, tmp_path: Path, provider: str) -> Config:
    cfg = Config()
    cfg.model.provider = provider
    cfg.api.base_url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    cfg.api.api_key = "test-key"
    cfg.model.name = "test-model"
    cfg.model.retries = 0
    cfg.db_path = str(tmp_path / "t.db")
    return cfg


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def check_wire_history(body: dict[str, Any], provider: str) -> None:
    """What a real API checks: unique call ids, each answered exactly once, sane JSON, valid text."""
    assert not any(0xD800 <= ord(ch) <= 0xDFFF for s in _strings(body) for ch in s)
    assert _depth(body["messages"]) < 40
    calls: list[str] = []
    answers: list[str] = []
    for message in body["messages"]:
        if provider == "openai":
            calls += [c["id"] for c in message.get("tool_calls") or ()]
            for c in message.get("tool_calls") or ():
                assert isinstance(json.loads(c["function"]["arguments"]), dict)
            if message["role"] == "tool":
                answers.append(message["tool_call_id"])
        elif isinstance(message.get("content"), list):
            calls += [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
            answers += [b["tool_use_id"] for b in message["content"] if b.get("type") == "tool_result"]
    assert len(calls) == len(set(calls)), f"duplicate call ids: {calls}"
    assert sorted(calls) == sorted(answers), (calls, answers)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_hostile_tool_calls_each_get_one_result_and_the_session_goes_on(
    provider: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("contents of a\n")
    (tmp_path / "b.txt").write_text("contents of b\n")
    hostile = Reply.tools(
        [
            ToolCallSpec("read_file", HUGE_INT, "c_huge"),
            ToolCallSpec("read_file", DEEP, "c_deep"),
            ToolCallSpec("read_file", SURROGATE_PATH, "c_sur"),
            ToolCallSpec("read_file", '{"path": "a.txt",}', "twin"),  # trailing comma: repaired
            ToolCallSpec("read_file", {"path": "b.txt"}, "twin"),  # the same id again
        ],
        text="Looking \ud800 at files",  # a lone surrogate in the assistant's text
    )
    with ScriptedModelServer([hostile, Reply.text("done \udfff"), Reply.text("still here")]) as server:
        cfg = session_config(server, tmp_path, provider)
        storage = await Storage.open(cfg.db_path)
        ui = RecordingUI()
        session = build_session(cfg, create_provider(cfg), ui, storage=storage, cwd=tmp_path)
        await session.start()
        await session.send("look at the files")
        await session.send("and now?")
        requests = server.model_requests()
        stored = await storage.load_messages(session.session_id)
        await session.aclose()
        await storage.close()
    assert not ui.errors, ui.errors
    assert len(requests) == 3
    for request in requests[1:]:
        check_wire_history(request.body, provider)
    results = {call_id: result for call_id, (_name, result) in ui.results.items()}
    assert len(results) == 5  # five calls, five distinct results
    texts = [r.text for r in results.values()]
    assert any("5000 digits" in t for t in texts) and any("nested 100001 deep" in t for t in texts)
    assert any("contents of a" in t for t in texts) and any("contents of b" in t for t in texts)
    assert "Looking \ufffd at files" in ui.text and "done \ufffd" in ui.text
    # the stored history is the one sent: every call answered once, reloadable
    assert [m["role"] for m in stored].count("tool") == 5
    assert session.messages == stored


async def test_cut_off_arguments_are_refused_not_repaired(model_server, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    cut = Reply.tools(
        [ToolCallSpec("write_file", '{"path": "out.txt", "content": "half of it', "w1")],
        finish_reason="length",
    )
    model_server.script([cut, Reply.text("ok")])
    cfg = session_config(model_server, tmp_path, "openai")
    ui = RecordingUI()
    session = build_session(cfg, create_provider(cfg), ui, cwd=tmp_path, skip_permissions=True)
    await session.start()
    await session.send("write it")
    assert not target.exists()
    (_name, result) = ui.results["w1"]
    assert result.is_error and "cut off (max_tokens)" in result.text


def test_headless_cli_survives_hostile_output_and_escapes_control_characters(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("plain\n")
    script = [
        Reply.tools(
            [
                ToolCallSpec("read_file", DEEP, "c1"),
                ToolCallSpec("read_file", SURROGATE_PATH, "c2"),
                # a tool whose output carries a title escape, OSC 52 and a bell
                ToolCallSpec(
                    "bash", {"command": "printf 'x\\033]0;pwned\\007y\\033]52;c;aGk=\\007z\\n'"}, "c3"
                ),
            ],
            text="see \ud800",
        ),
        Reply.text("finished \x1b[2J cleanly"),
    ]
    with ScriptedModelServer(script) as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "turnstone_tui.cli",
                *base_args(server, tmp_path, "openai"),
                "--allow",
                "bash",
                "-p",
                "go",
            ],
            cwd=tmp_path,
            env=cli_env(tmp_path),
            capture_output=True,
            timeout=90,
        )
        second = server.model_requests()[1].body
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "nested 100001 deep" in err
    assert b"\x1b]" not in proc.stderr and b"\x07" not in proc.stderr and b"\x1b[2J" not in proc.stdout
    assert "x\\x1b]0;pwned\\x07y" in err
    assert "finished \\x1b[2J cleanly" in out and "see \ufffd" in out
    check_wire_history(second, "openai")
