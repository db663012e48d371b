"""The agent process protects itself: non-dumpable (a same-user child cannot read its environ) and 0600 files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from turnstone_tui.sandbox import process
from turnstone_tui.storage.db import Storage

# A stand-in agent: (maybe) marks itself undumpable, then a child of the same user reads its environ.
AGENT = """
import subprocess, sys
protect = sys.argv[1] == "protect"
if protect:
    assert make_undumpable(), "prctl failed"
child = subprocess.run(["cat", f"/proc/{__import__('os').getpid()}/environ"], capture_output=True)
sys.stdout.write(child.stdout.decode(errors="replace") + "|" + child.stderr.decode(errors="replace"))
"""


def _base_python() -> str:
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def _run_agent(mode: str) -> str:
    source = Path(process.__file__).read_text(encoding="utf-8") + AGENT
    python = _base_python()
    extra: dict[str, int] = {}
    if os.geteuid() == 0:  # root reads anything: run agent and child as a plain user (nobody)
        extra = {"user": 65534, "group": 65534}
        python = "/usr/bin/python3"
        if not os.path.exists(python):
            pytest.skip("running as root and no /usr/bin/python3 that an unprivileged user can run")
    try:
        done = subprocess.run(
            [python, "-I", "-c", source, mode],
            env={"PATH": "/usr/bin:/bin", "AGENT_SECRET": "sk-only-in-the-agent"},
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
            **extra,
        )
    except PermissionError as exc:  # e.g. a container that forbids setuid, or a python nobody cannot run
        pytest.skip(f"cannot run the stand-in agent as an unprivileged user here: {exc}")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux-only")
def test_a_same_user_child_cannot_read_the_environ_of_a_non_dumpable_agent() -> None:
    assert "sk-only-in-the-agent" in _run_agent("plain")  # the control: without it, the child reads the key
    out = _run_agent("protect")
    assert "sk-only-in-the-agent" not in out and "Permission denied" in out


async def test_the_database_is_created_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "data" / "t.db"
    storage = await Storage.open(path)
    try:
        await storage.set_setting("x", 1)
    finally:
        await storage.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # noqa: ASYNC240


def test_private_file_tightens_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "token.json"
    path.write_text("{}")
    path.chmod(0o644)
    process.private_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "{}"
