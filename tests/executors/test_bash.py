"""bash: real processes through prepare -> execute; streaming, stderr, exit codes, timeouts, cleanup."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.executors.exec_helpers import Recorder, execute, make_ctx, prepare, run, wait_gone
from turnstone_tui.core import input_gate
from turnstone_tui.core.input_gate import GATE
from turnstone_tui.core.types import ExecContext
from turnstone_tui.executors import proc_group
from turnstone_tui.executors.bash import PREPARERS

pytestmark = pytest.mark.timeout(60)


async def bash(tmp_path: Path, **args):
    return await prepare(PREPARERS, make_ctx(tmp_path), "bash", **args)


async def test_stdout_streams_line_by_line_and_stderr_is_marked(tmp_path: Path) -> None:
    item = await bash(tmp_path, command="echo one; echo oops >&2; printf 'two\\nthree'")
    assert item.needs_approval is True
    assert item.preview_kind == "bash"
    assert item.header == "bash: echo one; echo oops >&2; printf 'two\\nthree'"
    assert item.preview == "echo one; echo oops >&2; printf 'two\\nthree'"
    rec = Recorder()
    result = await execute(item, rec)
    assert rec.of("stdout") == ["one", "two", "three"]
    assert rec.of("stderr") == ["oops"]
    # interleaved in arrival order, each line whole (also the unterminated last one)
    lines = result.text.splitlines()
    assert sorted(lines[:4]) == ["[stderr] oops", "one", "three", "two"]
    assert [x for x in lines if not x.startswith("[")] == ["one", "two", "three"]
    assert result.text.endswith("[exit code: 0]")
    assert result.is_error is False


async def test_stderr_redirected_to_stdout_is_not_marked(tmp_path: Path) -> None:
    rec = Recorder()
    result = await execute(await bash(tmp_path, command="echo warn >&2 2>&1; ls /nonexistent-xyz 2>&1"), rec)
    assert "[stderr] ls" not in result.text
    assert any("nonexistent-xyz" in line for line in rec.of("stdout"))


async def test_lines_are_emitted_while_the_command_runs(tmp_path: Path) -> None:
    seen: list[tuple[float, str]] = []
    start = time.monotonic()

    def emit(lines: list[str], stream: str) -> None:
        seen.extend((time.monotonic() - start, line) for line in lines)

    item = await bash(tmp_path, command="echo first; sleep 1; echo second")
    assert item.execute is not None
    await item.execute(ExecContext(item.call_id, emit))
    assert [line for _, line in seen] == ["first", "second"]
    assert seen[0][0] < 0.8 <= seen[1][0], seen  # "first" arrived before the sleep ended


@pytest.mark.parametrize(
    ("command", "code", "is_error"),
    [("true", 0, False), ("exit 1", 1, False), ("grep -q nothing /dev/null", 1, False), ("exit 2", 2, True),
     ("exit 127", 127, True), ("no-such-command-xyz", 127, True)],
)  # fmt: skip
async def test_exit_code_rules(tmp_path: Path, command: str, code: int, is_error: bool) -> None:
    result = await run(PREPARERS, make_ctx(tmp_path), "bash", command=command)
    assert result.text.endswith(f"[exit code: {code}]")
    assert result.is_error is is_error


async def test_killed_by_signal_is_an_error(tmp_path: Path) -> None:
    result = await run(PREPARERS, make_ctx(tmp_path), "bash", command="echo before; kill -9 $$")
    assert result.is_error
    assert "[killed by SIGKILL]" in result.text
    assert "before" in result.text


async def test_stop_on_error_sets_e(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    plain = await run(PREPARERS, ctx, "bash", command="false; echo after")
    assert "after" in plain.text and plain.text.endswith("[exit code: 0]")
    item = await prepare(PREPARERS, ctx, "bash", command="false; echo after", stop_on_error=True)
    assert "set -e" in item.preview
    stopped = await execute(item)
    assert "after" not in stopped.text
    assert stopped.text.endswith("[exit code: 1]")


async def test_stdin_is_closed_so_reads_end_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await run(PREPARERS, make_ctx(tmp_path), "bash", command="read x; echo got:$x; cat; echo done")
    assert time.monotonic() - started < 30  # not the tool's timeout
    assert "got:\n" in result.text and "done" in result.text


async def test_runs_in_the_session_cwd(tmp_path: Path) -> None:
    result = await run(PREPARERS, make_ctx(tmp_path), "bash", command="pwd")
    assert result.text.splitlines()[0] == str(tmp_path)


async def test_secrets_are_invisible_to_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO_API_KEY", "sk-secret-1")
    monkeypatch.setenv("FOO_TOKEN", "tok-secret-2")
    monkeypatch.setenv("DB_PASSWORD", "pw-secret-3")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-4")
    monkeypatch.setenv("TURNSTONE_TEST_VISIBLE", "plain-value")
    monkeypatch.setenv("TURNSTONE_TEST_UNLISTED", "unlisted-value")
    ctx = make_ctx(tmp_path)
    ctx.config.env.passthrough = ["TURNSTONE_TEST_VISIBLE"]  # [env] pass: the allowlist's only extension
    result = await run(PREPARERS, ctx, "bash", command="env")
    assert "TURNSTONE_TEST_VISIBLE=plain-value" in result.text
    assert "unlisted-value" not in result.text
    for leaked in ("sk-secret-1", "tok-secret-2", "pw-secret-3", "sk-secret-4", "FOO_API_KEY", "FOO_TOKEN"):
        assert leaked not in result.text


def _pids(rec: Recorder) -> list[int]:
    return [int(line) for line in rec.of("stdout") if line.strip().isdigit()]


async def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path: Path) -> None:
    command = "echo $$; sleep 100 & echo $!; sh -c 'sleep 101 & echo $!; wait' & sleep 102"
    item = await bash(tmp_path, command=command, timeout=1)
    rec = Recorder()
    started = time.monotonic()
    result = await execute(item, rec)
    assert time.monotonic() - started < 30  # the 1 s timeout, not the 100 s sleeps
    assert result.is_error
    assert "[timed out after 1 s" in result.text
    pids = _pids(rec)
    assert len(pids) == 3, rec.lines
    assert wait_gone(pids) == []


async def test_sigterm_ignoring_command_is_killed_after_grace(tmp_path: Path) -> None:
    item = await bash(tmp_path, command="trap '' TERM; echo $$; while true; do sleep 0.1; done", timeout=1)
    rec = Recorder()
    result = await execute(item, rec)
    assert result.is_error and "timed out" in result.text
    assert wait_gone(_pids(rec)) == []


async def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    item = await bash(tmp_path, command="echo $$; sleep 100 & echo $!; wait")
    rec = Recorder()
    assert item.execute is not None
    task = asyncio.create_task(item.execute(ExecContext(item.call_id, rec)))
    for _ in range(100):
        if len(_pids(rec)) == 2:
            break
        await asyncio.sleep(0.05)
    pids = _pids(rec)
    assert len(pids) == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_gone(pids) == []


async def test_timeout_kills_descendants_that_called_setsid(tmp_path: Path) -> None:
    # setsid leaves the tool's process group: a group kill alone missed it (it outlived the timeout)
    command = "setsid sleep 103 > /dev/null 2>&1 & echo $!; sleep 100"
    rec = Recorder()
    try:
        result = await execute(await bash(tmp_path, command=command, timeout=1), rec)
        assert "[timed out after 1 s" in result.text
        pids = _pids(rec)
        assert len(pids) == 1
        assert wait_gone(pids) == []
    finally:
        for pid in _pids(rec):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_cancellation_kills_descendants_that_called_setsid(tmp_path: Path) -> None:
    item = await bash(tmp_path, command="setsid sleep 104 > /dev/null 2>&1 & echo $!; sleep 100")
    rec = Recorder()
    assert item.execute is not None
    task = asyncio.create_task(item.execute(ExecContext(item.call_id, rec)))
    try:
        for _ in range(200):
            if _pids(rec):
                break
            await asyncio.sleep(0.05)
        (pid,) = _pids(rec)
        for _ in range(100):  # setsid has run once the session id is the pid itself
            if psutil.Process(pid).name() == "sleep":
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert wait_gone([pid]) == []
    finally:
        for pid in _pids(rec):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_background_process_holding_the_pipe_does_not_block(tmp_path: Path) -> None:
    started = time.monotonic()
    rec = Recorder()
    result = await execute(await bash(tmp_path, command="sleep 30 & echo $!; echo started"), rec)
    try:
        assert time.monotonic() - started < 20  # not the 30 s sleep
        assert "started" in result.text
        assert "background processes kept the output open" in result.text
        assert result.text.endswith("[exit code: 0]")
    finally:
        for pid in _pids(rec):
            os.kill(pid, signal.SIGKILL)


async def test_daemon_with_redirected_output_returns_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    rec = Recorder()
    result = await execute(await bash(tmp_path, command="sleep 30 > /dev/null 2>&1 & echo $!"), rec)
    try:
        assert time.monotonic() - started < 20  # not the 30 s sleep
        assert "background" not in result.text
    finally:
        for pid in _pids(rec):
            os.kill(pid, signal.SIGKILL)


async def test_endless_output_keeps_head_and_tail_with_bounded_memory(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    limit = ctx.config.tools.truncation
    item = await prepare(PREPARERS, ctx, "bash", command="echo FIRST; yes | head -c 50000000; echo LAST")
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = base
    count = 0

    def emit(lines: list[str], stream: str) -> None:
        nonlocal count
        count += len(lines)

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, proc.memory_info().rss)
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    try:
        assert item.execute is not None
        result = await item.execute(ExecContext(item.call_id, emit))
    finally:
        sampler.cancel()
    assert count == 25_000_002  # every line was streamed
    assert result.text.startswith("FIRST\ny\ny\n")
    assert result.text.endswith("y\ny\nLAST\n[exit code: 0]")
    assert "[... truncated:" in result.text
    assert len(result.text) <= limit  # the pipeline's final truncation will not cut the exit code off
    assert peak - base < 64 * 1024 * 1024, f"RSS grew by {(peak - base) / 1e6:.0f} MB"


async def test_multibyte_characters_survive_chunk_boundaries(tmp_path: Path) -> None:
    command = "for i in $(seq 1 30000); do printf 'é漢'; done; echo"
    rec = Recorder()
    result = await execute(await bash(tmp_path, command=command), rec)
    assert "\ufffd" not in result.text
    assert rec.of("stdout") == ["é漢" * 30000]


@pytest.mark.parametrize(
    ("args", "message"),
    [({}, "'command' must be a non-empty string"), ({"command": "  "}, "non-empty"),
     ({"command": "ls", "timeout": 0}, "between 1 and 600"), ({"command": "ls", "timeout": 601}, "between 1 and 600"),
     ({"command": "ls", "timeout": "abc"}, "whole number"), ({"command": "ls", "stop_on_error": "yes"}, "true or false")],
)  # fmt: skip
async def test_bad_arguments_are_clear_errors(tmp_path: Path, args: dict, message: str) -> None:
    item = await prepare(PREPARERS, make_ctx(tmp_path), "bash", **args)
    assert item.error is not None and message in item.error
    assert item.execute is None and item.needs_approval is False


async def test_default_timeout_comes_from_config(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    ctx.config.tools.timeout = 1
    result = await run(PREPARERS, ctx, "bash", command="sleep 5")
    assert result.is_error and "[timed out after 1 s" in result.text


async def test_missing_cwd_is_a_clear_error(tmp_path: Path) -> None:
    result = await run(PREPARERS, make_ctx(tmp_path / "gone"), "bash", command="echo hi")
    assert result.is_error and "could not start" in result.text


async def test_a_failing_emit_does_not_leave_the_process_running(tmp_path: Path) -> None:
    pids: list[int] = []

    def emit(lines: list[str], stream: str) -> None:
        pids.extend(int(line) for line in lines)
        raise RuntimeError("ui exploded")

    item = await bash(tmp_path, command="echo $$; sleep 100")
    assert item.execute is not None
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="ui exploded"):
        await item.execute(ExecContext(item.call_id, emit))
    assert time.monotonic() - started < 30  # not the 100 s sleep
    assert wait_gone(pids) == []


async def test_output_beyond_its_share_of_the_loop_waits_for_the_next_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pumps together use at most ``allowance`` of each window; past it a pump sleeps out the
    window (the command meanwhile blocks on a full pipe), below it nothing waits."""
    slept: list[float] = []

    async def record(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(proc_group.asyncio, "sleep", record)
    pacer = proc_group.OutputPacer(window=100.0, allowance=0.01)
    await pacer.spent(0.004)
    await pacer.spent(0.004)
    assert slept == []
    await pacer.spent(0.004)  # 12 ms of this window's 10
    assert len(slept) == 1 and 99.0 < slept[0] <= 100.0


async def test_output_read_while_a_key_is_on_its_way_waits_until_the_key_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key the terminal just sent holds the output pumps (core.input_gate): a chunk read
    meanwhile is handed on once the key's frame is reported shown, not before."""
    monkeypatch.setattr(input_gate, "MAX_HOLD", 600.0)  # (no slow machine outlasts these)
    monkeypatch.setattr(input_gate, "MAX_HELD_IN_A_ROW", 600.0)
    seen: list[str] = []
    item = await bash(tmp_path, command="echo held; touch written")
    assert item.execute is not None
    GATE.key_read()
    try:
        run = asyncio.ensure_future(
            item.execute(ExecContext(item.call_id, lambda lines, _: seen.extend(lines)))
        )
        for _ in range(1500):  # up to 30 s
            if (tmp_path / "written").exists():
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # the line is in the pipe (or read): it still waits for the key
        assert seen == []
        assert not run.done()
    finally:
        GATE.shown(time.monotonic())
    result = await asyncio.wait_for(run, 30)
    assert seen == ["held"]
    assert "held" in result.text


def test_preparing_a_command_starts_the_guardian_before_it_is_approved(tmp_path: Path) -> None:
    """The guardian (the process that kills the agent's tool processes if the agent dies) starts
    when a bash call is prepared, while the user reads the approval, not in front of the first
    approved command; nothing runs until the call is executed. In a fresh interpreter: a guardian
    an earlier test started would hide the difference."""
    marker = tmp_path / "ran"
    script = f"""
import asyncio, sys, time
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from tests.executors.exec_helpers import make_ctx, prepare
from turnstone_tui.executors.bash import PREPARERS
from turnstone_tui.sandbox import lifetime

async def main():
    assert not lifetime.guardian_running()
    item = await prepare(PREPARERS, make_ctx(Path({str(tmp_path)!r})), "bash", command="touch ran")
    assert item.error is None, item.error
    deadline = time.monotonic() + 30
    while not lifetime.guardian_running() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    print("guardian running" if lifetime.guardian_running() else "no guardian")

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "guardian running"
    assert not marker.exists()  # prepared, never executed: nothing ran
