"""Database faults: every unusable database file gets one clear line naming it and what to do, the
file is left untouched, and a new database is created readable by its owner only."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.test_headless import base_args, cli_env
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.storage.db import Storage, StorageError, _open_problem

pytestmark = pytest.mark.timeout(120)


def _real_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [(f"row {i} " * 20,) for i in range(2000)])
    conn.commit()
    conn.close()
    return path


def _damaged(tmp_path: Path) -> Path:
    path = _real_db(tmp_path / "damaged.db")
    data = bytearray(path.read_bytes())
    data[100:8192] = b"\xde\xad\xbe\xef" * ((8192 - 100) // 4)
    path.write_bytes(bytes(data))
    return path


def _truncated(tmp_path: Path) -> Path:
    path = _real_db(tmp_path / "truncated.db")
    path.write_bytes(path.read_bytes()[:1500])
    return path


def _not_sqlite(tmp_path: Path) -> Path:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 50)
    return path


def _directory(tmp_path: Path) -> Path:
    path = tmp_path / "a-directory.db"
    path.mkdir()
    (path / "keep").write_text("x")
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_directory, "is a directory, not a file"),
        (_not_sqlite, "damaged or not a turnstone database"),
        (_damaged, "damaged or not a turnstone database"),
        (_truncated, "damaged or not a turnstone database"),
    ],
)
def test_unusable_database_is_one_clear_line_and_left_untouched(make, expected: str, tmp_path: Path) -> None:
    db = make(tmp_path)
    before = sorted(p.name for p in db.iterdir()) if db.is_dir() else db.read_bytes()
    with ScriptedModelServer([Reply.text("should not be asked")]) as server:
        args = [a if a != str(tmp_path / "t.db") else str(db) for a in base_args(server, tmp_path, "openai")]
        proc = subprocess.run(
            [sys.executable, "-m", "turnstone_tui.cli", *args, "-p", "hi"],
            cwd=tmp_path,
            env=cli_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=90,
        )
        asked = server.model_requests()
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"turnstone-tui: error: database {db} ") and expected in lines[0]
    assert "--db" in lines[0] or "move it away" in lines[0]
    assert not asked
    after = sorted(p.name for p in db.iterdir()) if db.is_dir() else db.read_bytes()
    assert after == before
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-journal").exists()


def test_read_only_database_message() -> None:
    problem = _open_problem(Path("/x/t.db"), sqlite3.OperationalError("attempt to write a readonly database"))
    assert str(problem) == (
        "database /x/t.db is read-only: make it writable (chmod u+w) or pass --db with another file"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write a read-only file")
async def test_read_only_database_file_is_refused(tmp_path: Path) -> None:
    db = _real_db(tmp_path / "ro.db")
    db.chmod(0o400)
    with pytest.raises(StorageError, match="is read-only"):
        await Storage.open(db)


async def test_new_database_files_are_private(tmp_path: Path) -> None:
    db = tmp_path / "data" / "new.db"
    storage = await Storage.open(db)
    try:
        await storage.create_session(model="m")  # a write: the WAL file exists now
        for path in (db, Path(f"{db}-wal")):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    finally:
        await storage.close()
