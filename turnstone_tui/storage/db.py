"""SQLite persistence (aiosqlite, WAL): sessions, messages with an FTS5 index, memories, watches.

Every write commits at once, so a killed process loses nothing that was stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sqlite3
import time
import unicodedata
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    cwd TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT,
    tool_calls TEXT,
    tool_call_id TEXT,
    name TEXT,
    is_error INTEGER NOT NULL DEFAULT 0,
    extra TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    body, content='messages_search', content_rowid='id', tokenize='porter unicode61'
);
CREATE TABLE IF NOT EXISTS messages_search (
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS messages_search_ai AFTER INSERT ON messages_search BEGIN
    INSERT INTO messages_fts(rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER IF NOT EXISTS messages_search_ad AFTER DELETE ON messages_search BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    content TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    type TEXT NOT NULL DEFAULT 'project',
    scope TEXT NOT NULL DEFAULT 'global',
    scope_id TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    UNIQUE(name, scope, scope_id)
);
CREATE TABLE IF NOT EXISTS watches (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    name TEXT NOT NULL,
    command TEXT NOT NULL,
    poll_every REAL NOT NULL,
    stop_on TEXT,
    max_polls INTEGER NOT NULL,
    polls INTEGER NOT NULL DEFAULT 0,
    next_run REAL NOT NULL,
    prev_output TEXT,
    active INTEGER NOT NULL DEFAULT 1,
    result TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS watches_due ON watches(active, next_run);
CREATE TABLE IF NOT EXISTS watch_results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    watch_id TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    created REAL NOT NULL,
    delivered REAL
);
CREATE INDEX IF NOT EXISTS watch_results_pending ON watch_results(delivered, session_id, id);
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


def _search_body(message: dict[str, Any]) -> str:
    """The text of a message that recall / /history search over."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


class StorageError(Exception):
    """The database cannot be used: one line naming the file, what is wrong and what to do."""


def _open_problem(path: Path, exc: BaseException) -> StorageError:
    text = str(exc).lower()
    other = "or pass --db with another file"
    if isinstance(exc, IsADirectoryError) or path.is_dir():
        return StorageError(f"database {path} is a directory, not a file: remove it {other}")
    if "readonly" in text or "read-only" in text or isinstance(exc, PermissionError):
        return StorageError(f"database {path} is read-only: make it writable (chmod u+w) {other}")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StorageError(
            f"database {path} is damaged or not a turnstone database ({exc}): move it away to start a "
            f"new one {other}"
        )
    if "unable to open" in text:
        return StorageError(
            f"database {path} cannot be opened ({exc}): check the folder exists and is writable"
        )
    return StorageError(f"database {path} cannot be used: {exc}")


def _create_private(path: Path) -> None:
    """Create the database file (and its folder) readable by its owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)


class Storage:
    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        # One write transaction at a time: the connection is shared by the app's tasks, and one
        # task's commit would otherwise commit another's half-done transaction (a /compact's
        # DELETE without its INSERTs).
        self._writing = asyncio.Lock()
        self._appends: list[_PendingAppend] = []  # waiting for the next group commit
        self._drainer: asyncio.Future[None] | None = None  # the task storing them

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        """Everything written inside commits together, or (on any exception, cancellation
        included) not at all."""
        async with self._writing:
            await self._store_pending()  # appends queued before this transaction go first
            try:
                yield
            except BaseException:
                await asyncio.shield(self._conn.rollback())
                raise
            await self._conn.commit()

    @classmethod
    async def open(cls, path: Path | str) -> Storage:
        """Open (or create, 0600) the database; raises StorageError with a one-line reason.

        A database that cannot be opened safely (a directory, read-only, damaged, not SQLite) is
        refused before anything is written into it.
        """
        path = Path(path)
        if str(path) == ":memory:":
            return await cls._connect(path)
        try:
            if path.is_dir():
                raise IsADirectoryError(str(path))
            if path.exists() and not os.access(path, os.W_OK):
                raise PermissionError(f"{path} is read-only")
            _create_private(path)
            return await cls._connect(path)
        except (OSError, sqlite3.Error) as exc:
            raise _open_problem(path, exc) from None

    @classmethod
    async def _connect(cls, path: Path) -> Storage:
        pending = aiosqlite.connect(str(path))
        # Every write commits at once, so a connection someone forgot to close must not keep the
        # interpreter from exiting: its worker thread is a daemon.
        worker = getattr(pending, "_thread", None)
        if worker is not None and not worker.is_alive():
            worker.daemon = True
        conn = await pending
        try:
            conn.row_factory = aiosqlite.Row
            # reading the schema first: a damaged or foreign file fails here, before any write
            await (await conn.execute("SELECT count(*) FROM sqlite_master")).fetchone()
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
            await conn.execute("PRAGMA foreign_keys=ON")
            await conn.execute("PRAGMA busy_timeout=5000")
            await conn.executescript(SCHEMA)
            await conn.commit()
        except BaseException:
            await conn.close()
            raise
        return cls(conn, path)

    async def close(self) -> None:
        while self._drainer is not None:  # appends still being stored
            await asyncio.shield(self._drainer)
        await self._conn.close()

    def lock_session(self, session_id: str) -> Any:
        """Own ``session_id`` for this process (a SessionLock, ``release()`` it); raises
        SessionInUseError (a ValueError) saying which process holds it."""
        from .session_lock import SessionLock, acquire_session_lock

        if str(self.path) == ":memory:":
            return SessionLock("", released=True)
        return acquire_session_lock(self.path, session_id)

    def held_elsewhere(self, session_id: str) -> bool:
        """Is ``session_id`` open in another process?"""
        from .session_lock import held_elsewhere

        return str(self.path) != ":memory:" and held_elsewhere(self.path, session_id)

    def watch_host_lock(self) -> Any:
        """The lock that makes one process per database the poller of unowned sessions' watches."""
        from .session_lock import WatchHostLock

        return WatchHostLock(None if str(self.path) == ":memory:" else self.path)

    @property
    def conn(self) -> aiosqlite.Connection:
        return self._conn

    # --- sessions -----------------------------------------------------------------------
    async def create_session(
        self, session_id: str | None = None, *, name: str = "", model: str = "", cwd: str = ""
    ) -> str:
        sid = session_id or uuid.uuid4().hex[:12]
        now = time.time()
        async with self._transaction():
            await self._conn.execute(
                "INSERT INTO sessions(id, name, model, cwd, created, updated) VALUES (?,?,?,?,?,?)",
                (sid, name, model, cwd, now, now),
            )
        return sid

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        async with self._conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)) as cur:
            row = await cur.fetchone()
        return dict(row) if row else None

    async def find_session(self, prefix: str) -> dict[str, Any] | None:
        """A session by exact id, or by a unique id prefix."""
        exact = await self.get_session(prefix)
        if exact:
            return exact
        async with self._conn.execute(
            "SELECT * FROM sessions WHERE id LIKE ? ORDER BY updated DESC LIMIT 2", (prefix + "%",)
        ) as cur:
            rows = await cur.fetchall()
        return dict(rows[0]) if len(rows) == 1 else None

    async def list_sessions(self, limit: int = 50) -> list[dict[str, Any]]:
        sql = """
            SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
                   (SELECT content FROM messages m WHERE m.session_id = s.id AND m.role = 'user'
                    ORDER BY m.id LIMIT 1) AS first_prompt
            FROM sessions s ORDER BY s.updated DESC LIMIT ?
        """
        async with self._conn.execute(sql, (limit,)) as cur:
            return [dict(r) for r in await cur.fetchall()]

    async def update_session(self, session_id: str, **fields: Any) -> None:
        allowed = {k: v for k, v in fields.items() if k in ("name", "model", "cwd")}
        allowed["updated"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in allowed)
        async with self._transaction():
            await self._conn.execute(
                f"UPDATE sessions SET {cols} WHERE id = ?", (*allowed.values(), session_id)
            )

    # --- messages -----------------------------------------------------------------------
    async def append_message(
        self, session_id: str, message: dict[str, Any], *, delivers: int | None = None
    ) -> int:
        """Store ``message``; ``delivers`` marks that watch result delivered in the same commit
        (the result is in the history exactly when it is no longer pending)."""
        entry = self._enqueue(session_id, message, delivers)
        try:
            return await entry.done
        except asyncio.CancelledError:
            if entry in self._appends:  # never taken into a batch: not stored
                self._appends.remove(entry)
            raise

    def append_message_soon(
        self, session_id: str, message: dict[str, Any], *, delivers: int | None = None
    ) -> asyncio.Future[int]:
        """Store ``message`` without waiting: the write starts on the next loop turn, after every
        append before it and before any append or rewrite after it; the future gets the row id
        or the error."""
        return self._enqueue(session_id, message, delivers).done

    def _enqueue(self, session_id: str, message: dict[str, Any], delivers: int | None) -> _PendingAppend:
        # Group commit: appends that arrive while another write holds the connection (four tool
        # results finishing together) are stored together, in one transaction.
        entry = _PendingAppend(session_id, message, delivers, asyncio.get_running_loop().create_future())
        self._appends.append(entry)
        if self._drainer is None:
            self._drainer = asyncio.ensure_future(self._drain())
        return entry

    async def _drain(self) -> None:
        try:
            async with self._writing:
                await self._store_pending()
        finally:
            self._drainer = None
            if self._appends:  # (cancelled on the way: whoever is left still gets stored)
                self._drainer = asyncio.ensure_future(self._drain())

    async def _store_pending(self) -> None:
        """Store the queued appends (the caller holds ``_writing``)."""
        while self._appends:
            batch, self._appends = self._appends, []
            await self._store_appends(batch)

    async def _store_appends(self, batch: list[_PendingAppend]) -> None:
        """Store ``batch`` in one trip to the worker thread and settle every entry's future.

        The write runs to its end even if this task is cancelled meanwhile (the thread cannot be
        stopped): the other entries still get their answers."""
        rows = [(e.session_id, e.message, e.delivers) for e in batch]
        write = asyncio.ensure_future(self._in_worker(_append_messages, rows))

        def settle(done: asyncio.Future[list[int | Exception]]) -> None:
            failure = None if done.cancelled() else done.exception()
            outcomes: list[int | BaseException] = (
                [failure or asyncio.CancelledError()] * len(batch)
                if failure or done.cancelled()
                else done.result()
            )
            for e, outcome in zip(batch, outcomes, strict=True):
                if e.done.done():
                    continue
                if isinstance(outcome, BaseException):
                    e.done.set_exception(outcome)
                else:
                    e.done.set_result(outcome)

        write.add_done_callback(settle)
        await asyncio.shield(write)

    async def append_messages(self, session_id: str, messages: list[dict[str, Any]]) -> list[int]:
        """Append several messages in one transaction (an import, a rewritten history)."""
        async with self._transaction():
            return [await self._insert_message(session_id, message) for message in messages]

    async def _insert_message(self, session_id: str, message: dict[str, Any]) -> int:
        """Insert one message inside the caller's transaction (one trip to the worker thread)."""
        return await self._in_worker(_insert_message, session_id, message)

    async def _in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(sqlite3_connection, *args)`` in one call on aiosqlite's worker thread.

        Each awaited statement is a round trip between the event loop and that thread, and on a
        busy loop each trip waits for the frame being drawn: a tool result stored statement by
        statement (3 statements and a commit) took 4 trips, and four results finishing together
        16 in a row before the next request could go. aiosqlite has no public call for this; its
        ``_execute`` (queue a function on the worker thread) and ``_conn`` (the sqlite3
        connection) are the ones its own methods use.
        """
        conn = self._conn
        return await conn._execute(fn, conn._conn, *args)

    async def load_messages(self, session_id: str) -> list[dict[str, Any]]:
        async with self._conn.execute(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,)
        ) as cur:
            rows = await cur.fetchall()
        return [_row_to_message(r) for r in rows]

    async def replace_messages(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Rewrite a session's history (used by /compact) in one transaction: whatever fails or
        stops on the way (the process included) leaves the old history, never a mix."""
        async with self._transaction():
            await self._conn.execute(
                "DELETE FROM messages_search WHERE id IN (SELECT id FROM messages WHERE session_id = ?)",
                (session_id,),
            )
            await self._conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            for message in messages:
                await self._insert_message(session_id, message)

    async def search_messages(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        """FTS5 search over every session: the best ``limit`` matches by bm25, newest first among
        equals, each with a snippet marking the matched words in ``[...]``.

        Ranked within a bounded candidate set: the newest ``SEARCH_CANDIDATES`` matches (FTS5
        walks its index in rowid order and stops there), scored by FTS5's own ``bm25()`` (with
        the whole table's statistics). Ranking every match of a common word costs ~4 us per
        match, 100-250 ms for 40k matches; a query with fewer matches than the bound is ranked
        exactly. Snippets are cut from the stored text of the hits only.
        """
        fts_query = _fts_query(query)
        if not fts_query:
            return []
        sql = f"""
            WITH top AS (
                SELECT id, rank FROM (
                    SELECT rowid AS id, bm25(messages_fts) AS rank FROM messages_fts
                    WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT {SEARCH_CANDIDATES}
                ) ORDER BY rank, id DESC LIMIT ?
            )
            SELECT m.id, m.session_id, m.role, m.name, m.created, s.name AS session_name,
                   ms.body AS body, top.rank AS rank
            FROM top
            JOIN messages m ON m.id = top.id
            JOIN sessions s ON s.id = m.session_id
            JOIN messages_search ms ON ms.id = top.id
            ORDER BY top.rank, m.id DESC
        """
        async with self._conn.execute(sql, (fts_query, limit)) as cur:
            rows = [dict(r) for r in await cur.fetchall()]
        words = _query_words(query)
        for row in rows:
            row["snippet"] = snippet(row.pop("body"), words)
        return rows

    # --- memories -----------------------------------------------------------------------
    async def save_memory(
        self,
        name: str,
        content: str,
        *,
        description: str = "",
        type: str = "project",  # noqa: A002 - the spec's field name
        scope: str = "global",
        scope_id: str = "",
    ) -> bool:
        """Insert or update; returns True when it replaced an existing memory."""
        now = time.time()
        async with self._transaction():
            existing = await self.get_memory(name, scope=scope, scope_id=scope_id)
            await self._conn.execute(
                "INSERT INTO memories(name, content, description, type, scope, scope_id, created, updated)"
                " VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(name, scope, scope_id) DO UPDATE SET"
                " content=excluded.content, description=excluded.description, type=excluded.type,"
                " updated=excluded.updated",
                (name, content, description, type, scope, scope_id, now, now),
            )
        return existing is not None

    async def get_memory(self, name: str, *, scope: str | None = None, scope_id: str = "") -> dict | None:
        if scope is None:
            sql, params = "SELECT * FROM memories WHERE name = ? ORDER BY updated DESC LIMIT 1", (name,)
        else:
            sql = "SELECT * FROM memories WHERE name = ? AND scope = ? AND scope_id = ?"
            params = (name, scope, scope_id)
        async with self._conn.execute(sql, params) as cur:
            row = await cur.fetchone()
        return dict(row) if row else None

    async def list_memories(
        self,
        *,
        visible_to: str = "",
        type: str | None = None,
        limit: int = 1000,  # noqa: A002
    ) -> list[dict[str, Any]]:
        """Global and user memories plus the workstream memories of session ``visible_to``."""
        sql = "SELECT * FROM memories WHERE (scope != 'workstream' OR scope_id = ?)"
        params: list[Any] = [visible_to]
        if type:
            sql += " AND type = ?"
            params.append(type)
        sql += " ORDER BY updated DESC LIMIT ?"
        params.append(limit)
        async with self._conn.execute(sql, params) as cur:
            return [dict(r) for r in await cur.fetchall()]

    async def delete_memory(self, name: str, *, scope: str | None = None, scope_id: str = "") -> int:
        async with self._transaction():
            if scope is None:
                cur = await self._conn.execute("DELETE FROM memories WHERE name = ?", (name,))
            else:
                cur = await self._conn.execute(
                    "DELETE FROM memories WHERE name = ? AND scope = ? AND scope_id = ?",
                    (name, scope, scope_id),
                )
        return cur.rowcount

    # --- watches ------------------------------------------------------------------------
    async def add_watch(self, watch: dict[str, Any]) -> None:
        cols = ", ".join(watch)
        marks = ", ".join("?" for _ in watch)
        async with self._transaction():
            await self._conn.execute(f"INSERT INTO watches({cols}) VALUES ({marks})", tuple(watch.values()))

    async def list_watches(
        self, session_id: str | None = None, *, active_only: bool = True
    ) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM watches WHERE 1=1", []
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if active_only:
            sql += " AND active = 1"
        sql += " ORDER BY created"
        async with self._conn.execute(sql, params) as cur:
            return [dict(r) for r in await cur.fetchall()]

    async def update_watch(self, watch_id: str, **fields: Any) -> None:
        cols = ", ".join(f"{k} = ?" for k in fields)
        async with self._transaction():
            await self._conn.execute(f"UPDATE watches SET {cols} WHERE id = ?", (*fields.values(), watch_id))

    async def fire_watch(self, watch: dict[str, Any], text: str, **fields: Any) -> int:
        """In one commit: the watch stops (``active = 0`` plus ``fields``) and its result joins the
        session's queue of undelivered results. Returns the result's id."""
        now = time.time()
        cols = ", ".join(f"{k} = ?" for k in ("active", "result", *fields))
        async with self._transaction():
            await self._conn.execute(
                f"UPDATE watches SET {cols} WHERE id = ?", (0, text[:4000], *fields.values(), watch["id"])
            )
            cur = await self._conn.execute(
                "INSERT INTO watch_results(session_id, watch_id, name, text, created) VALUES (?,?,?,?,?)",
                (watch["session_id"], watch["id"], watch["name"], text, now),
            )
        return cur.lastrowid or 0

    async def queue_watch_result(
        self, session_id: str, text: str, *, watch_id: str = "", name: str = ""
    ) -> int:
        async with self._transaction():
            cur = await self._conn.execute(
                "INSERT INTO watch_results(session_id, watch_id, name, text, created) VALUES (?,?,?,?,?)",
                (session_id, watch_id, name, text, time.time()),
            )
        return cur.lastrowid or 0

    async def pending_watch_results(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Undelivered watch results, oldest first (of one session, or of all with the session's
        name and first prompt)."""
        if session_id is not None:
            sql = "SELECT * FROM watch_results WHERE delivered IS NULL AND session_id = ? ORDER BY id"
            params: tuple[Any, ...] = (session_id,)
        else:
            sql = """
                SELECT r.*, s.name AS session_name, (SELECT content FROM messages m
                    WHERE m.session_id = r.session_id AND m.role = 'user' ORDER BY m.id LIMIT 1) AS first_prompt
                FROM watch_results r LEFT JOIN sessions s ON s.id = r.session_id
                WHERE r.delivered IS NULL ORDER BY r.id
            """
            params = ()
        async with self._conn.execute(sql, params) as cur:
            return [dict(r) for r in await cur.fetchall()]

    # --- settings -----------------------------------------------------------------------
    async def get_setting(self, key: str, default: Any = None) -> Any:
        async with self._conn.execute("SELECT value FROM settings WHERE key = ?", (key,)) as cur:
            row = await cur.fetchone()
        return json.loads(row[0]) if row else default

    async def set_setting(self, key: str, value: Any) -> None:
        async with self._transaction():
            await self._conn.execute(
                "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, json.dumps(value)),
            )


def latest_session_id(path: Path | str, cwd: Path) -> str | None:
    """The id of the most recently updated session started in ``cwd`` that holds a message (what
    ``--continue`` resumes); None when there is none. Read-only and blocking (it runs before the app)."""
    path = Path(path)
    if str(path) == ":memory:" or not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute(
            "SELECT s.id FROM sessions s WHERE s.cwd = ? AND EXISTS "
            "(SELECT 1 FROM messages m WHERE m.session_id = s.id) ORDER BY s.updated DESC, s.rowid DESC LIMIT 1",
            (str(cwd),),
        ).fetchone()
        return str(row[0]) if row else None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def read_session_messages(path: Path | str, session: str) -> list[dict[str, Any]]:
    """A stored session's messages (by id or unique id prefix), read without opening the database
    for writing: what a resumed app draws while its engine still loads. [] when the file, the
    session or the schema is not there. Blocking: run it in a thread."""
    path = Path(path)
    if str(path) == ":memory:" or not path.is_file() or not session:
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return []
    try:
        conn.row_factory = sqlite3.Row
        rows = (
            conn.execute("SELECT id FROM sessions WHERE id = ?", (session,)).fetchall()
            or conn.execute(
                "SELECT id FROM sessions WHERE id LIKE ? ORDER BY updated DESC LIMIT 2", (session + "%",)
            ).fetchall()
        )
        if len(rows) != 1:
            return []
        found = conn.execute(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (rows[0]["id"],)
        ).fetchall()
        return [_row_to_message(row) for row in found]
    except (sqlite3.Error, ValueError):
        return []
    finally:
        conn.close()


_MESSAGE_COLUMNS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "is_error"})


def _insert_message(db: sqlite3.Connection, session_id: str, message: dict[str, Any]) -> int:
    """Insert ``message`` (its row, its search text, the session's time); on the worker thread."""
    content = message.get("content")
    stored_content = content if isinstance(content, str) or content is None else json.dumps(content)
    extra = {k: v for k, v in message.items() if k not in _MESSAGE_COLUMNS}
    now = time.time()
    cur = db.execute(
        "INSERT INTO messages(session_id, role, content, tool_calls, tool_call_id, name, is_error, extra,"
        " created) VALUES (?,?,?,?,?,?,?,?,?)",
        (
            session_id,
            message["role"],
            stored_content,
            json.dumps(message["tool_calls"]) if message.get("tool_calls") else None,
            message.get("tool_call_id"),
            message.get("name"),
            1 if message.get("is_error") else 0,
            json.dumps({**extra, "_content_json": not isinstance(content, str) and content is not None})
            if extra or (content is not None and not isinstance(content, str))
            else None,
            now,
        ),
    )
    row_id = cur.lastrowid or 0
    body = _search_body(message)
    if body and message["role"] != "system":
        db.execute("INSERT INTO messages_search(id, body) VALUES (?, ?)", (row_id, body))
    db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
    return row_id


def _append_messages(
    db: sqlite3.Connection, rows: list[tuple[str, dict[str, Any], int | None]]
) -> list[int | Exception]:
    """Messages (each with the watch result it delivers) in one transaction; on the worker thread.

    If the transaction fails, each message is tried in a transaction of its own, so only one that
    cannot be stored fails: its place in the answer holds the exception, the others' their ids."""
    try:
        ids: list[int | Exception] = [_append_one(db, *row) for row in rows]
        db.commit()
        return ids
    except Exception as exc:
        db.rollback()
        if len(rows) == 1:
            return [exc]
    outcomes: list[int | Exception] = []
    for row in rows:
        try:
            outcomes.append(_append_one(db, *row))
            db.commit()
        except Exception as exc:
            db.rollback()
            outcomes.append(exc)
    return outcomes


def _append_one(
    db: sqlite3.Connection, session_id: str, message: dict[str, Any], delivers: int | None
) -> int:
    row_id = _insert_message(db, session_id, message)
    if delivers is not None:
        db.execute(
            "UPDATE watch_results SET delivered = ? WHERE id = ? AND delivered IS NULL",
            (time.time(), delivers),
        )
    return row_id


@dataclass(slots=True)
class _PendingAppend:
    session_id: str
    message: dict[str, Any]
    delivers: int | None
    done: asyncio.Future[int]


def _row_to_message(row: aiosqlite.Row | sqlite3.Row) -> dict[str, Any]:
    message: dict[str, Any] = {"role": row["role"], "content": row["content"]}
    extra = json.loads(row["extra"]) if row["extra"] else {}
    if extra.pop("_content_json", False) and row["content"] is not None:
        message["content"] = json.loads(row["content"])
    if row["tool_calls"]:
        message["tool_calls"] = json.loads(row["tool_calls"])
    if row["tool_call_id"]:
        message["tool_call_id"] = row["tool_call_id"]
    if row["name"]:
        message["name"] = row["name"]
    if row["is_error"]:
        message["is_error"] = True
    message.update(extra)
    return message


def _fts_query(query: str) -> str:
    """Turn free text into a safe FTS5 query: each word quoted, all must match."""
    words = [w.replace('"', '""') for w in query.split() if w.strip()]
    return " ".join(f'"{w}"' for w in words)


SEARCH_CANDIDATES = 500
"""How many of the newest matches a search ranks (see ``Storage.search_messages``)."""

SNIPPET_TOKENS = 16
SNIPPET_REACH = 1000  # characters before the first match a snippet may start
_TOKEN = re.compile(r"[^\W_]+")
_SUFFIXES = ("ingly", "edly", "ing", "ed", "ly", "es", "s")


def _fold(word: str) -> str:
    """A word as the index compares it, roughly: lower case, no diacritics, a crude stem (the
    index's porter stemmer decides what matches; this only decides what a snippet marks)."""
    text = unicodedata.normalize("NFKD", word.lower())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and len(text) - len(suffix) >= 3:
            return text[: -len(suffix)]
    return text


def _query_words(query: str) -> set[str]:
    return {_fold(token) for token in _TOKEN.findall(query)}


def snippet(body: str, words: set[str], size: int = SNIPPET_TOKENS) -> str:
    """Up to ``size`` tokens of ``body`` around the most query words, those marked ``[word]``,
    `` … `` where text was left out (as FTS5's ``snippet()``, made from one row's text instead of
    a second index lookup per hit). Only the text around the first match is looked at: a stored
    tool result can be 256 KB."""
    stems = tuple(sorted(words))
    first = re.search("|".join(re.escape(stem) for stem in stems), body, re.IGNORECASE) if stems else None
    offset = max(0, first.start() - SNIPPET_REACH) if first else 0
    region = body[offset : offset + 4 * SNIPPET_REACH]
    tokens = list(_TOKEN.finditer(region))
    if not tokens:
        return body[:200]
    hits = [_matches(token.group(), stems, words) for token in tokens]
    score = best_score = sum(hits[:size])  # a sliding window: linear in the length of the text
    best = 0
    for start in range(1, len(tokens) - size + 1):
        score += hits[start + size - 1] - hits[start - 1]
        if score > best_score:
            best, best_score = start, score
    if best_score:  # a little context before the first marked word, as FTS5 gives
        first_hit = hits.index(True, best)
        best = max(0, min(first_hit - size // 4, len(tokens) - size))
    window = range(best, min(len(tokens), best + size))
    out: list[str] = [" … "] if best or offset else []
    cursor = tokens[best].start() if best or offset else 0
    for index in window:
        token = tokens[index]
        out.append(region[cursor : token.start()])
        out.append(f"[{token.group()}]" if hits[index] else token.group())
        cursor = token.end()
    if window.stop < len(tokens) or offset + len(region) < len(body):
        out.append(" … ")
    else:
        out.append(region[cursor:])
    return "".join(out)


def _matches(token: str, stems: tuple[str, ...], words: set[str]) -> bool:
    lowered = token.lower()
    if lowered.isascii() and not lowered.startswith(stems):
        return False  # the cheap test first: most tokens are not query words
    return _fold(token) in words
