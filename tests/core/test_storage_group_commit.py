"""Appends that arrive together are stored together: tool results finishing at once (four
parallel calls) reach the database in one transaction, one trip to the worker thread, in the order
they were appended; one that cannot be stored fails alone, and a cancelled append that never got
the connection is not stored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(60)


def _count_trips(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    trips: list[str] = []
    real = storage._in_worker

    async def counted(fn: Any, *args: Any) -> Any:
        trips.append(fn.__name__)
        return await real(fn, *args)

    monkeypatch.setattr(storage, "_in_worker", counted)
    return trips


def _tool_result(n: int) -> dict[str, Any]:
    return {
        "role": "tool",
        "tool_call_id": f"call_{n}",
        "name": "bash",
        "content": f"slept{n}\n[exit code: 0]",
    }


async def test_results_appended_together_are_one_transaction_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session_id = await storage.create_session(model="m")
        await storage.append_message(session_id, {"role": "user", "content": "sleep four times"})
        trips = _count_trips(storage, monkeypatch)
        ids = await asyncio.gather(*(storage.append_message(session_id, _tool_result(n)) for n in range(4)))
        assert len(set(ids)) == 4 and ids == sorted(ids), ids
        # Stored together (at most the first alone, the three that waited meanwhile in one trip)
        # (it was one trip per statement: 4 each, 16 for the four).
        assert 1 <= len(trips) <= 2 and set(trips) == {"_append_messages"}, trips
        stored = await storage.load_messages(session_id)
        assert [m.get("tool_call_id") for m in stored[1:]] == [f"call_{n}" for n in range(4)]
        assert len(await storage.search_messages("slept2")) == 1  # the search index has it too
    finally:
        await storage.close()


async def test_one_append_that_cannot_be_stored_fails_alone(tmp_path: Path) -> None:
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session_id = await storage.create_session(model="m")
        bad = {"role": "tool", "tool_call_id": "call_x", "content": "for a session that does not exist"}
        outcomes = await asyncio.gather(
            storage.append_message(session_id, _tool_result(0)),
            storage.append_message(session_id, _tool_result(1)),
            storage.append_message("no-such-session", bad),  # the foreign key refuses it
            storage.append_message(session_id, _tool_result(3)),
            return_exceptions=True,
        )
        assert [type(o).__name__ for o in outcomes] == ["int", "int", "IntegrityError", "int"], outcomes
        stored = await storage.load_messages(session_id)
        assert [m.get("tool_call_id") for m in stored] == ["call_0", "call_1", "call_3"]
    finally:
        await storage.close()


async def test_a_cancelled_append_still_waiting_is_not_stored(tmp_path: Path) -> None:
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session_id = await storage.create_session(model="m")
        async with storage._writing:  # another write holds the connection
            waiting = asyncio.ensure_future(storage.append_message(session_id, _tool_result(7)))
            await asyncio.sleep(0.05)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
        await storage.append_message(session_id, _tool_result(8))
        stored = await storage.load_messages(session_id)
        assert [m.get("tool_call_id") for m in stored] == ["call_8"]
    finally:
        await storage.close()


async def test_an_append_not_waited_for_is_stored_before_a_later_rewrite(tmp_path: Path) -> None:
    """append_message_soon returns at once; the write keeps its place: a history rewrite started
    right after it (a /compact) replaces it rather than being followed by it."""
    storage = await Storage.open(tmp_path / "t.db")
    try:
        session_id = await storage.create_session(model="m")
        stored = storage.append_message_soon(session_id, _tool_result(1))
        assert not stored.done()
        summary = [{"role": "user", "content": "[summary]"}]
        await storage.replace_messages(session_id, summary)
        assert stored.done() and isinstance(stored.result(), int)
        assert await storage.load_messages(session_id) == summary
        late = storage.append_message_soon(session_id, _tool_result(2))
        await storage.close()  # waits for the write
        assert late.done() and isinstance(late.result(), int)
    finally:
        if storage._conn._running:
            await storage.close()
