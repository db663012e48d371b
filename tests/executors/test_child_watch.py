"""A command's end is seen through a pidfd on the event loop, not a thread per command
(executors/child_watch.py): four commands run together start no waiting thread, and each still gets
its own exit status, in every event loop that starts one, with a thread as the fallback."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import pytest

from turnstone_tui.core.truncate import HeadTailBuffer
from turnstone_tui.executors import child_watch
from turnstone_tui.executors.proc_group import BufferSink, run_process

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"),
        reason="Python 3.12 waits on pidfds itself; 3.11 on Linux is what this changes",
    ),
]


def _waiting_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("asyncio-waitpid-")]  # asyncio's names


async def _run(script: str, cwd: Path) -> tuple[int | None, str]:
    buffer = HeadTailBuffer(10_000)
    outcome = await run_process(
        ["sh", "-c", script],
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        time_limit=60,
        stdout_sink=BufferSink(buffer),
        stderr_sink=BufferSink(buffer),
    )
    return outcome.returncode, buffer.text()


async def _four_together(cwd: Path) -> tuple[list[tuple[int | None, str]], list[str]]:
    """Four commands started together; the asyncio waiting threads seen while they run."""
    seen: list[str] = []
    release = cwd / "go"

    async def look() -> None:
        for _ in range(600):  # (until all four are past their start, each waiting for `go`)
            seen.extend(_waiting_threads())
            if all(os.path.exists(cwd / f"started-{i}") for i in range(4)):  # noqa: ASYNC240
                seen.extend(_waiting_threads())
                release.touch()  # noqa: ASYNC240
                return
            await asyncio.sleep(0.05)

    scripts = [
        f"touch started-{i}; while [ ! -e go ]; do sleep 0.01; done; echo out-{i}; exit {i}" for i in range(3)
    ] + ["touch started-3; while [ ! -e go ]; do sleep 0.01; done; kill -9 $$"]
    results = await asyncio.gather(*(_run(script, cwd) for script in scripts), look())
    return list(results[:4]), seen


def _check(results: list[tuple[int | None, str]]) -> None:
    assert [code for code, _ in results] == [0, 1, 2, -9]
    assert [text.strip() for _, text in results[:3]] == ["out-0", "out-1", "out-2"]


def test_four_commands_together_start_no_waiting_thread_and_each_gets_its_status(tmp_path: Path) -> None:
    results, seen = asyncio.run(_four_together(tmp_path))
    _check(results)
    assert seen == []  # (before: one asyncio-waitpid-N thread per running command)
    assert isinstance(asyncio.get_child_watcher(), child_watch.PidfdWatcher)


def test_each_event_loop_sees_its_own_commands_end(tmp_path: Path) -> None:
    for round_ in range(3):  # a new loop each time (the watcher is not tied to the first)
        folder = tmp_path / str(round_)
        folder.mkdir()
        results, seen = asyncio.run(_four_together(folder))
        _check(results)
        assert seen == []


def test_without_a_pidfd_a_thread_waits_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int, flags: int = 0) -> int:
        raise OSError(38, "Function not implemented")

    asyncio.run(_run("true", tmp_path))  # (installed by the first command)
    monkeypatch.setattr(os, "pidfd_open", refused)
    results, seen = asyncio.run(_four_together(tmp_path))
    _check(results)
    assert seen  # the fallback: asyncio's thread per command
