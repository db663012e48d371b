"""recall: FTS5 search over stored conversations."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.local_http import make_ctx, run_item
from turnstone_tui.executors.recall import PREPARERS
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(30)


async def test_finds_messages_across_sessions_with_names_and_times(tmp_path: Path) -> None:
    storage = await Storage.open(tmp_path / "t.db")
    try:
        await storage.create_session("alpha1", name="deploy work")
        await storage.create_session("beta22", name="")
        await storage.append_message(
            "alpha1", {"role": "user", "content": "the staging database password rotates"}
        )
        await storage.append_message(
            "alpha1",
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "kubectl rollout"}'},
                    }
                ],
            },
        )
        await storage.append_message(
            "beta22",
            {"role": "tool", "tool_call_id": "c9", "name": "bash", "content": "rollout finished on staging"},
        )
        await storage.append_message("beta22", {"role": "user", "content": "unrelated chatter"})
        ctx = make_ctx(tmp_path, storage=storage, session_id="beta22")
        item = await PREPARERS["recall"](ctx, "r1", {"query": "staging"})
        assert not item.needs_approval
        result = await run_item(item)
        assert not result.is_error
        lines = result.text.splitlines()
        assert lines[0].startswith("2 matches for 'staging'")
        joined = "\n".join(lines)
        assert "session 'deploy work' (alpha1)" in joined
        assert "beta22, this session" in joined and "tool bash" in joined
        assert "[staging]" in joined  # the snippet marks the hit
        assert "unrelated" not in joined
        tool_calls = await run_item(await PREPARERS["recall"](ctx, "r2", {"query": "kubectl rollout"}))
        assert "alpha1" in tool_calls.text and "assistant" in tool_calls.text
        none = await run_item(await PREPARERS["recall"](ctx, "r3", {"query": "zebra"}))
        assert "No past messages" in none.text
        # FTS syntax in the query is treated as words, not as an injection into the MATCH expression.
        odd = await run_item(await PREPARERS["recall"](ctx, "r4", {"query": 'staging" OR "x* NEAR('}))
        assert not odd.is_error
        limited = await run_item(await PREPARERS["recall"](ctx, "r5", {"query": "staging", "limit": 1}))
        assert limited.text.startswith("1 match for")
    finally:
        await storage.close()


async def test_bad_arguments(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert (await PREPARERS["recall"](ctx, "r", {"query": "x"})).error  # no storage
    storage = await Storage.open(tmp_path / "t.db")
    try:
        ctx = make_ctx(tmp_path, storage=storage)
        assert (await PREPARERS["recall"](ctx, "r", {"query": " "})).error
        assert (await PREPARERS["recall"](ctx, "r", {"query": "x", "limit": 0})).error
    finally:
        await storage.close()
