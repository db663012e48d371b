"""Property: every tool_call the model sends gets exactly one result, whatever the stream holds.

Hypothesis builds hostile model turns (duplicate, missing and over-long ids; unknown and empty
names; arguments that are cut, repaired, too deep, too large, full of surrogates; garbage chunks;
streams without a finish) and the scripted model server sends them as real SSE to the real
OpenAI and Anthropic SDKs. The provider parsers, the session's boundary, the pipeline (with a
preparer and an executor that raise, and a front end that raises) and SQLite all run for real.
After each turn, the history in memory, in the database and on the wire answers every call once.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_model_output import DEEP, HUGE_INT, SURROGATE_PATH, check_wire_history, session_config
from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.core.session import ChatSession
from turnstone_tui.core.types import ApprovalDecision, PreparedItem, ToolResult
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(900)

NAMES = ["read_file", "read_file", "write_file", "bash", "no_such_tool", "", "mcp__ghost__tool"]
IDS = st.one_of(
    st.sampled_from(["dup", "dup", "", "call_1", "x" * 300]),
    st.none(),
    st.text(max_size=8),
)
HOSTILE_ARGUMENTS = [
    '{"path": "a.txt"}',
    '{"path": "a.txt",}',
    '{"path": "a.txt"',
    '{"path": "boom.txt"}',  # the wrapped preparer raises
    '{"path": "kaboom.txt"}',  # the wrapped executor raises, and the front end too
    "{not json",
    "[1, 2]",
    "",
    HUGE_INT,
    DEEP[:2000] + DEEP[-2000:],
    SURROGATE_PATH,
    '{"path": "\\udfff"}',
]
WEIRD_TEXT = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\x1b", "\x00"])), max_size=12
)
ARGUMENTS = st.one_of(st.sampled_from(HOSTILE_ARGUMENTS), WEIRD_TEXT)


@st.composite
def model_turns(draw: st.DrawFn) -> dict[str, Any]:
    calls = draw(st.lists(st.tuples(IDS, st.sampled_from(NAMES), ARGUMENTS, st.integers(1, 5)), max_size=5))
    return {
        "text": draw(WEIRD_TEXT),
        "calls": calls,
        "finish": draw(st.sampled_from(["tool_calls", "stop", "length", None])),
        "garbage": draw(
            st.lists(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5)), max_size=2)
        ),
        "index_shift": draw(st.sampled_from([0, 0, 1, -1])),
    }


def _pieces(text: str, n: int) -> list[str]:
    size = max(1, -(-len(text) // n)) if text else 1
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def openai_frames(turn: dict[str, Any]) -> list[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        return json.dumps({**body, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    frames = [chunk({"role": "assistant", "content": turn["text"]})]
    frames += [json.dumps(g) for g in turn["garbage"]]
    for i, (call_id, name, arguments, parts) in enumerate(turn["calls"]):
        index = i + turn["index_shift"]
        first: dict[str, Any] = {
            "index": index,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        if call_id is not None:
            first["id"] = call_id
        frames.append(chunk({"tool_calls": [first]}))
        for piece in _pieces(arguments, parts):
            frames.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    if turn["finish"] is not None:
        frames.append(chunk({}, turn["finish"]))
        frames.append("[DONE]")
    return [f"data: {frame}\n\n" for frame in frames]


def anthropic_frames(turn: dict[str, Any]) -> list[str]:
    events: list[dict[str, Any]] = []
    message = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": []}
    message |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    events.append({"type": "message_start", "message": message})
    events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    events.append(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": turn["text"]}}
    )
    events.append({"type": "content_block_stop", "index": 0})
    events += [{"type": "mystery", **{k: v for k, v in g.items() if k != "type"}} for g in turn["garbage"]]
    for i, (call_id, name, arguments, parts) in enumerate(turn["calls"], start=1):
        block = {"type": "tool_use", "id": call_id if call_id is not None else "", "name": name, "input": {}}
        events.append({"type": "content_block_start", "index": i, "content_block": block})
        for piece in _pieces(arguments, parts):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append({"type": "content_block_delta", "index": i, "delta": delta})
        events.append({"type": "content_block_stop", "index": i})
    if turn["finish"] is not None:
        stop = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}[turn["finish"]]
        delta = {"stop_reason": stop, "stop_sequence": None}
        events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 5}})
        events.append({"type": "message_stop"})
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]


class FaultyUI(RecordingUI):
    """Denies every approval; its result display raises for one file (a front-end bug)."""

    def on_tool_result(self, call_id: str, name: str, result: ToolResult) -> None:
        super().on_tool_result(call_id, name, result)
        if "kaboom" in result.text:
            raise RuntimeError("the front end failed to draw this result")


def with_faults(session: ChatSession) -> None:
    """read_file's preparer raises for boom.txt; its execute raises for kaboom.txt."""
    real = session.pipeline.preparers["read_file"]

    async def preparer(ctx: Any, call_id: str, args: dict[str, Any]) -> PreparedItem:
        path = str(args.get("path", ""))
        if path.startswith("boom"):
            raise ValueError("the preparer blew up")
        item = await real(ctx, call_id, args)
        if path.startswith("kaboom"):

            async def explode(_ctx: Any) -> ToolResult:
                raise OSError("kaboom: the executor blew up")

            item.execute = explode
            item.error = None
        return item

    session.pipeline.preparers = {**session.pipeline.preparers, "read_file": preparer}


def assert_each_call_answered_once(messages: list[dict[str, Any]]) -> None:
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(calls) == len(set(calls)), calls
    assert sorted(calls) == sorted(answers), (calls, answers)
    # each result follows its own assistant message, before the next one
    open_calls: set[str] = set()
    for m in messages:
        if m["role"] == "assistant":
            assert not open_calls, f"calls left unanswered: {open_calls}"
            open_calls = {c["id"] for c in m.get("tool_calls") or ()}
        elif m["role"] == "tool":
            open_calls.discard(m["tool_call_id"])


async def run_turns(server: ScriptedModelServer, provider: str, turn: dict[str, Any]) -> None:
    frames = openai_frames(turn) if provider == "openai" else anthropic_frames(turn)
    server.script([Reply.raw(frames), Reply.text("second answer")])
    before = len(server.model_requests())
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "a.txt").write_text("contents of a\n")
        (cwd / "kaboom.txt").write_text("kaboom\n")
        cfg = session_config(server, cwd, provider)
        storage = await Storage.open(cfg.db_path)
        ui = FaultyUI(default_approval=ApprovalDecision(approved=False))
        provider_client = create_provider(cfg)
        session = build_session(cfg, provider_client, ui, storage=storage, cwd=cwd)
        try:
            await session.start()
            with_faults(session)
            await session.send("go")
            await session.send("again")
            stored = await storage.load_messages(session.session_id)
        finally:
            await session.aclose()
            await provider_client.aclose()
            await storage.close()
    assert not [e for e in ui.errors if not e.startswith("Model error")], ui.errors
    assert_each_call_answered_once(session.messages)
    assert stored == session.messages
    requests = server.model_requests()[before:]
    assert requests, "no request reached the server"
    check_wire_history(requests[-1].body, provider)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_tool_call_gets_exactly_one_result(provider: str) -> None:
    with ScriptedModelServer() as server:

        @settings(
            max_examples=25,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(turn=model_turns())
        def check(turn: dict[str, Any]) -> None:
            asyncio.run(run_turns(server, provider, turn))

        check()
