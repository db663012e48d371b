"""A rewritten history (/compact's ``replace_messages``) is one transaction: a failure, a
cancellation or a dead process half-way leaves the old history (and its search index), never a
mix; another task's write meanwhile does not commit the half-done rewrite."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(60)

OLD = [
    {"role": "user", "content": "explain the flux capacitor"},
    {"role": "assistant", "content": "It needs 1.21 gigawatts."},
    {"role": "user", "content": "and the plutonium?"},
    {"role": "assistant", "content": "Libyan, sadly."},
]
NEW = [
    {"role": "user", "content": "[summary of the earlier conversation]\ntime machine notes"},
    {"role": "assistant", "content": "Understood, I have the summary of our earlier conversation."},
]


async def _storage_with_history(path: Path) -> tuple[Storage, str]:
    storage = await Storage.open(path)
    session_id = await storage.create_session(model="m")
    await storage.append_messages(session_id, OLD)
    return storage, session_id


def _fail_on_second_insert(storage: Storage, monkeypatch: pytest.MonkeyPatch, during: Any = None) -> None:
    real = storage._insert_message
    calls = 0

    async def insert(session_id: str, message: dict[str, Any]) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            if during is not None:
                await during()
            raise OSError("disk full (injected)")
        return await real(session_id, message)

    monkeypatch.setattr(storage, "_insert_message", insert)


async def _assert_old_history(storage: Storage, session_id: str) -> None:
    assert await storage.load_messages(session_id) == OLD
    hits = await storage.search_messages("gigawatts")
    assert [(h["session_id"], h["role"]) for h in hits] == [(session_id, "assistant")]
    assert await storage.search_messages("summary") == []


async def test_a_failure_half_way_through_replace_messages_keeps_the_old_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, session_id = await _storage_with_history(tmp_path / "t.db")
    try:
        _fail_on_second_insert(storage, monkeypatch)
        with pytest.raises(OSError, match="injected"):
            await storage.replace_messages(session_id, NEW)
        await _assert_old_history(storage, session_id)
        monkeypatch.undo()
        await storage.replace_messages(session_id, NEW)  # the storage is still usable
        assert await storage.load_messages(session_id) == NEW
    finally:
        await storage.close()
    reopened = await Storage.open(tmp_path / "t.db")
    try:
        assert await reopened.load_messages(session_id) == NEW
    finally:
        await reopened.close()


async def test_another_write_meanwhile_does_not_commit_a_half_done_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A usage counter or a watch result stored while /compact rewrites the history (the tasks share
    one connection) waits for the rewrite; it used to commit the DELETE without the INSERTs."""
    storage, session_id = await _storage_with_history(tmp_path / "t.db")
    other: list[asyncio.Task[None]] = []

    async def write_meanwhile() -> None:
        task = asyncio.create_task(storage.set_setting("usage:x", {"prompt_tokens": 1}))
        other.append(task)
        await asyncio.wait({task}, timeout=2)  # long enough for it to commit, if it may

    try:
        _fail_on_second_insert(storage, monkeypatch, during=write_meanwhile)
        with pytest.raises(OSError, match="injected"):
            await storage.replace_messages(session_id, NEW)
        await other[0]
        assert await storage.get_setting("usage:x") == {"prompt_tokens": 1}
        await _assert_old_history(storage, session_id)
    finally:
        await storage.close()


def test_a_process_that_dies_half_way_through_replace_messages_leaves_the_old_history(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"

    async def setup() -> str:
        storage, session_id = await _storage_with_history(db)
        await storage.close()
        return session_id

    session_id = asyncio.run(setup())
    child = textwrap.dedent(
        f"""
        import asyncio, os
        from turnstone_tui.storage.db import Storage

        async def main():
            storage = await Storage.open({str(db)!r})
            real = storage._insert_message
            calls = 0

            async def insert(session_id, message):
                nonlocal calls
                calls += 1
                if calls == 2:
                    os._exit(17)  # the process dies with one new message written
                return await real(session_id, message)

            storage._insert_message = insert
            await storage.replace_messages({session_id!r}, {NEW!r})

        asyncio.run(main())
        """
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", child], cwd=root, capture_output=True, text=True, timeout=50)
    assert proc.returncode == 17, proc.stderr

    async def check() -> None:
        reopened = await Storage.open(db)
        try:
            await _assert_old_history(reopened, session_id)
        finally:
            await reopened.close()

    asyncio.run(check())


async def test_a_compact_whose_storage_write_fails_keeps_the_history_in_memory_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/compact through a real session: the stored rewrite fails half-way, and the history the
    model is sent next is the old one as well (memory and database agree)."""
    from tests.helpers.model_server import Reply, ScriptedModelServer
    from tests.helpers.recording_ui import RecordingUI
    from turnstone_tui.providers.factory import create_provider
    from turnstone_tui.runtime import build_session

    with ScriptedModelServer([Reply.text("It needs 1.21 gigawatts."), Reply.text("summary text")]) as server:
        cfg = server.config("openai")
        storage = await Storage.open(tmp_path / "t.db")
        try:
            session = build_session(cfg, create_provider(cfg), RecordingUI(), storage=storage, cwd=tmp_path)
            await session.start()
            await session.send("explain the flux capacitor")
            before = list(session.messages)
            _fail_on_second_insert(storage, monkeypatch)
            with pytest.raises(OSError, match="injected"):
                await session.compact()
            assert session.messages == before
            assert await storage.load_messages(session.session_id) == before
            await session.aclose()
        finally:
            await storage.close()
