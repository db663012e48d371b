"""memory: save / get / search / delete / list in a real SQLite database, scopes, and the prompt section."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.executors.local_http import make_ctx, run_item
from turnstone_tui.executors.memory import PREPARERS, memory_prompt_section
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Storage]:
    db = await Storage.open(tmp_path / "t.db")
    try:
        yield db
    finally:
        await db.close()


async def mem(ctx, **args):
    item = await PREPARERS["memory"](ctx, "m1", args)
    if item.error:
        return item.error
    assert not item.needs_approval
    return await run_item(item)


async def test_save_get_update_delete(tmp_path: Path, storage: Storage) -> None:
    ctx = make_ctx(tmp_path, storage=storage)
    saved = await mem(
        ctx,
        action="save",
        name="test_runner",
        content="use pytest -x -q",
        description="how to run tests",
        type="feedback",
    )
    assert not saved.is_error and "saved" in saved.text
    got = await mem(ctx, action="get", name="test_runner")
    assert "use pytest -x -q" in got.text and "[feedback, global]" in got.text
    updated = await mem(ctx, action="save", name="test_runner", content="use pytest -q -n 2")
    assert "updated" in updated.text
    assert "-n 2" in (await mem(ctx, action="get", name="test_runner")).text
    deleted = await mem(ctx, action="delete", name="test_runner")
    assert not deleted.is_error
    missing = await mem(ctx, action="get", name="test_runner")
    assert missing.is_error and "No memory" in missing.text
    # A new session (new Storage connection, same file) sees what was saved: it persisted.
    await mem(ctx, action="save", name="editor", content="vim", type="user")
    other = await Storage.open(storage.path)
    try:
        assert (
            "vim"
            in (
                await mem(make_ctx(tmp_path, storage=other, session_id="s2"), action="get", name="editor")
            ).text
        )
    finally:
        await other.close()


async def test_workstream_scope_is_private_to_the_session(tmp_path: Path, storage: Storage) -> None:
    mine = make_ctx(tmp_path, storage=storage, session_id="a")
    theirs = make_ctx(tmp_path, storage=storage, session_id="b")
    await mem(mine, action="save", name="branch", content="feature/x", scope="workstream")
    assert "feature/x" in (await mem(mine, action="get", name="branch")).text
    assert (await mem(theirs, action="get", name="branch")).is_error
    assert "feature/x" not in (await mem(theirs, action="list")).text
    # Deleting from another session cannot remove my workstream memory.
    assert (await mem(theirs, action="delete", name="branch")).is_error
    assert "feature/x" in (await mem(mine, action="get", name="branch")).text


async def test_search_ranks_by_relevance(tmp_path: Path, storage: Storage) -> None:
    ctx = make_ctx(tmp_path, storage=storage)
    await mem(
        ctx,
        action="save",
        name="db_choice",
        content="We store sessions in SQLite with WAL mode.",
        description="database decision",
    )
    await mem(
        ctx, action="save", name="style", content="Line length 110, ruff clean.", description="code style"
    )
    await mem(
        ctx,
        action="save",
        name="deploy",
        content="Deploy with docker compose on the staging host.",
        description="deployment",
    )
    result = await mem(ctx, action="search", query="sqlite database")
    assert result.text.splitlines()[1].startswith("db_choice")
    assert "style" not in result.text
    assert "No memories match" in (await mem(ctx, action="search", query="kubernetes")).text


async def test_list_filters_and_limit(tmp_path: Path, storage: Storage) -> None:
    ctx = make_ctx(tmp_path, storage=storage)
    for i in range(5):
        await mem(ctx, action="save", name=f"fact_{i}", content=f"fact number {i}", type="reference")
    await mem(ctx, action="save", name="pref", content="short answers", type="user", scope="user")
    listed = await mem(ctx, action="list", limit=3)
    assert listed.text.startswith("3 memories")
    only_user = await mem(ctx, action="list", type="user")
    assert "pref" in only_user.text and "fact_" not in only_user.text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"action": "forget"}, "action must be"),
        ({"action": "save", "content": "x"}, "needs a 'name'"),
        ({"action": "save", "name": "x"}, "needs 'content'"),
        ({"action": "save", "name": "bad name!", "content": "x"}, "identifier"),
        ({"action": "save", "name": "x", "content": "y", "type": "secret"}, "type must be"),
        ({"action": "save", "name": "x", "content": "y", "scope": "team"}, "scope must be"),
        ({"action": "search"}, "needs a 'query'"),
        ({"action": "list", "limit": 0}, "limit"),
        ({"action": "save", "name": "x", "content": "y" * 20_001}, "limit is"),
    ],
)
async def test_bad_arguments_are_refused(tmp_path: Path, storage: Storage, args: dict, message: str) -> None:
    error = await mem(make_ctx(tmp_path, storage=storage), **args)
    assert isinstance(error, str) and message in error


async def test_without_storage_is_a_clear_error(tmp_path: Path) -> None:
    error = await mem(make_ctx(tmp_path), action="list")
    assert isinstance(error, str) and "no database" in error


async def test_prompt_section_puts_feedback_and_user_first(tmp_path: Path, storage: Storage) -> None:
    assert await memory_prompt_section(storage, "s1") == ""
    ctx = make_ctx(tmp_path, storage=storage, session_id="s1")
    await mem(ctx, action="save", name="old_feedback", content="never force-push", type="feedback")
    await mem(ctx, action="save", name="proj_a", content="the API lives in api/", type="project")
    await mem(ctx, action="save", name="likes", content="prefers terse answers", type="user")
    await mem(ctx, action="save", name="ref", content="docs at example.org", type="reference")
    await mem(ctx, action="save", name="elsewhere", content="other session secret", scope="workstream")
    other = await memory_prompt_section(storage, "s2", limit=3)
    lines = other.splitlines()
    assert lines[1].startswith("- [feedback] old_feedback")
    assert lines[2].startswith("- [user] likes")
    assert lines[3].startswith("- [project] proj_a")
    assert "(1 more" in lines[4]
    assert "other session secret" not in other
    assert "other session secret" in await memory_prompt_section(storage, "s1")
