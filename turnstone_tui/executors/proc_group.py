"""Run a subprocess in its own process group, stream its output, and always clean up the whole group.

Used by the bash, search, math, man and watch tools. The child gets its own session (process group),
so a timeout or a cancellation can signal every process it started, grandchildren included; and it
carries a marker in its environment (sandbox/guardian.py), so descendants that called ``setsid`` are
found and killed too, and everything dies with the agent even when the agent is killed with SIGKILL.

Output is read in large chunks and split at the last newline: a ``LineSink`` receives text made of
complete lines (each ending in ``"\\n"``), and at end of stream the unterminated remainder (without
``"\\n"``). Splitting into single lines, if needed, is the sink's business — this keeps the hot path
to one call per 64 KiB chunk. A line longer than ``LINE_CAP`` characters is kept only up to the cap
and ends in a note saying how much was cut: one 400 MB line costs no more memory than 64 KiB.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..core.input_gate import GATE
from ..core.truncate import HeadTailBuffer
from ..sandbox.lifetime import child_marker, ensure_guardian_async, kill_marked
from ..sandbox.seccomp import without_launcher
from . import child_watch

log = logging.getLogger(__name__)

READ_CHUNK = 65536
LINE_CAP = 65536  # characters of one output line that are kept; the rest of the line is counted, not held
TERM_GRACE = 2.0  # seconds between SIGTERM and SIGKILL on timeout / cancellation
EXIT_POLL = 0.1  # seconds between return-code checks while pipes are still open
PIPE_GRACE = 2.0  # seconds to keep reading after the main process exited (background children)


class OutputPacer:
    """Shares the event loop between command output and everything else on it (keys, frames).

    Every pump of every running command reports the CPU time it spent on a chunk (CPU time: on a
    busy machine the wall time of a chunk is mostly other processes' turns); once they together
    used ``allowance`` seconds of the current ``window``, each pump that reports more sleeps until
    the next window. Output is then read no faster than that share of the loop can
    handle: the pipe fills, the command blocks on its writes (using no CPU meanwhile), and a flood
    of output never keeps a key press waiting for more than about one window. Output that fits in
    the allowance (most commands) is not slowed at all.

    The allowance is 2 ms of each 1/60 s: a chunk of 64 KiB costs the pump ~0.5 ms, so that is
    still ~15 MB/s (``seq 1 200000``, 1.3 MB, is read in ~60 ms instead of ~30 ms), and an endless
    flood takes an eighth of the loop, not a third: on a busy machine, where the app gets a share
    of a core, a third of the wall clock was most of the app's CPU, and the frames and keys had
    the rest."""

    def __init__(self, window: float = 1 / 60, allowance: float = 0.002) -> None:
        self.window = window
        self.allowance = allowance
        self._window_start = 0.0
        self._used = 0.0

    async def spent(self, seconds: float) -> None:
        now = time.monotonic()
        if now - self._window_start >= self.window:
            self._window_start, self._used = now, 0.0
        self._used += seconds
        if self._used >= self.allowance:
            await asyncio.sleep(max(0.0, self._window_start + self.window - now))


PACER = OutputPacer()


class LineSink(Protocol):
    def feed(self, text: str) -> None:
        """Complete lines ending in "\\n"; at end of stream possibly one final line without it."""


class BufferSink:
    """Collects output into a bounded head+tail buffer, optionally prefixing each line."""

    def __init__(self, buffer: HeadTailBuffer, prefix: str = "") -> None:
        self.buffer = buffer
        self.prefix = prefix

    def feed(self, text: str) -> None:
        if self.prefix:
            lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
            prefix = self.prefix
            text = "".join([f"{prefix}{line}\n" for line in lines])
        self.buffer.write(text if text.endswith("\n") else text + "\n")


class EmittingSink:
    """Emits the lines of each chunk through ``emit`` in one call (the live pane) and keeps the
    text in a bounded buffer."""

    def __init__(
        self,
        emit: Callable[[list[str]], None],
        buffer: HeadTailBuffer,
        prefix: str = "",
    ) -> None:
        self._emit = emit
        self.buffer = buffer
        self.prefix = prefix

    def feed(self, text: str) -> None:
        lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
        if self.prefix:
            prefix = self.prefix
            self.buffer.write("".join([f"{prefix}{line}\n" for line in lines]))
        else:
            # the final unterminated line gets its newline so the other stream can't glue onto it
            self.buffer.write(text if text.endswith("\n") else text + "\n")
        self._emit(lines)  # (last: the list is the receiver's from here on)


@dataclass(slots=True)
class RunOutcome:
    returncode: int | None
    timed_out: bool = False
    # The main process exited but background children kept its output pipes open: we stopped reading.
    detached: bool = False
    pid: int = 0

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def kill_group(pgid: int, sig: int) -> None:
    """Signal a whole process group; a group that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def cut_note(dropped: int) -> str:
    """What replaces the end of a line longer than ``LINE_CAP`` characters."""
    return f" [line cut: {dropped:,} more characters not kept]"


class _LongLine:
    """The line being read: at most ``LINE_CAP`` characters kept, the rest only counted."""

    __slots__ = ("dropped", "kept")

    def __init__(self) -> None:
        self.kept = ""
        self.dropped = 0

    def add(self, text: str) -> None:
        if self.dropped:
            self.dropped += len(text)
            return
        room = LINE_CAP - len(self.kept)
        if len(text) <= room:
            self.kept += text
        else:
            self.kept += text[:room]
            self.dropped = len(text) - room

    def take(self, rest: str = "") -> str:
        """The line so far plus ``rest`` (its end), cut and marked when it is too long; reset."""
        self.add(rest)
        line = self.kept + cut_note(self.dropped) if self.dropped else self.kept
        self.kept, self.dropped = "", 0
        return line

    def __bool__(self) -> bool:
        return bool(self.kept or self.dropped)


async def _pump(stream: asyncio.StreamReader | None, sink: LineSink | None) -> None:
    """Read ``stream`` in chunks and feed whole lines to ``sink``; a line longer than ``LINE_CAP``
    characters is cut there and marked (memory stays bounded whatever one line holds)."""
    if stream is None:
        return
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    pending = _LongLine()
    read = stream.read
    clock = time.thread_time
    gate = GATE
    while True:
        data = await read(READ_CHUNK)
        if not data:
            break
        if gate.held:  # a key is on its way to the screen: its turns of the loop go first
            await gate.wait_open()
        started = clock()
        text = decode(data)
        cut = text.rfind("\n")
        if cut < 0:
            pending.add(text)
            continue
        if pending:
            # the line that started in earlier chunks ends here; the others fit in this chunk (< LINE_CAP)
            first = text.find("\n")
            complete = pending.take(text[:first]) + text[first : cut + 1]
        else:
            complete = text[: cut + 1]
        pending.add(text[cut + 1 :])
        if sink is not None:
            sink.feed(complete)
        await PACER.spent(clock() - started)
    tail = decode(b"", True)
    if (pending or tail) and sink is not None:
        sink.feed(pending.take(tail))


async def _terminate(proc: asyncio.subprocess.Process, grace: float, marker: dict[str, str]) -> None:
    """SIGTERM the group and the marked processes (``setsid`` descendants), give them ``grace``
    seconds, then SIGKILL whatever is left of either."""
    pgid = proc.pid
    try:
        kill_group(pgid, signal.SIGTERM)
        await asyncio.to_thread(kill_marked, marker, signal.SIGTERM)
        if proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_exited(proc), grace)
    finally:
        # Always: stragglers that ignore SIGTERM, or children that outlived the shell.
        kill_group(pgid, signal.SIGKILL)
        await asyncio.shield(asyncio.to_thread(kill_marked, marker, signal.SIGKILL))


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close our ends of the pipes (asyncio has no public API for this on a finished process)."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def _finish_readers(readers: asyncio.Future[list[None]], wait: float) -> bool:
    """Wait up to ``wait`` s for both readers to hit EOF; cancel them otherwise. True if they finished."""
    try:
        await asyncio.wait_for(asyncio.shield(readers), wait)
        return True
    except TimeoutError:
        readers.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await readers
        return False


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: dict[str, str],
    time_limit: float,
    stdout_sink: LineSink | None,
    stderr_sink: LineSink | None,
    stdin_data: bytes | None = None,
    pipe_grace: float = PIPE_GRACE,
    term_grace: float = TERM_GRACE,
    standby: Standby | None = None,
) -> RunOutcome:
    """Run ``argv`` in a new session; after ``time_limit`` seconds or cancellation kill the whole process group.

    ``standby``: the same ``argv`` started ahead (:class:`Standby`); told to go on if it waits.

    Raises OSError if the program cannot be started (callers turn it into a ToolResult).
    CancelledError is re-raised after the group was terminated.
    """
    for text in (*argv, str(cwd), *env.keys(), *env.values()):
        if "\x00" in text:
            raise OSError(errno.EINVAL, "an argument, the directory or the environment contains a NUL byte")
    waiting = await standby.take() if standby is not None and stdin_data is None else None
    if waiting is not None:  # its sandbox started while the user was asked: told to run it now
        proc, marker = waiting
    else:
        # A sandboxed command: bwrap itself, given its seccomp filter on a descriptor, not the shell
        # launcher in front of it (see sandbox.seccomp.without_launcher).
        direct = without_launcher(argv)
        proc, marker = await _start_group(
            argv if direct is None else direct[0],
            () if direct is None else (direct[1],),
            stdin=asyncio.subprocess.PIPE if stdin_data is not None else asyncio.subprocess.DEVNULL,
            cwd=str(cwd),
            env=env,
        )
    outcome = RunOutcome(returncode=None, pid=proc.pid)
    readers = asyncio.gather(_pump(proc.stdout, stdout_sink), _pump(proc.stderr, stderr_sink))
    feeder: asyncio.Task[None] | None = None
    if stdin_data is not None and proc.stdin is not None:
        feeder = asyncio.create_task(_feed_stdin(proc.stdin, stdin_data))
    try:
        try:
            async with asyncio.timeout(time_limit):
                await _exited(proc, readers)
        except TimeoutError:
            outcome.timed_out = True
            await _terminate(proc, term_grace, marker)
        if not await _finish_readers(readers, pipe_grace):
            outcome.detached = not outcome.timed_out
            _close_pipes(proc)
    except BaseException:  # cancelled (or a sink raised): never leave the group running
        try:
            await _terminate(proc, min(term_grace, 0.5), marker)
        finally:
            readers.cancel()
            _close_pipes(proc)
        raise
    finally:
        if feeder is not None and not feeder.done():
            feeder.cancel()
    outcome.returncode = proc.returncode
    return outcome


async def _start_group(
    argv: Sequence[str], fds: tuple[int, ...], *, stdin: int, cwd: str, env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, dict[str, str]]:
    """Start ``argv`` in a new session, marked for the guardian (its marker returned with it), its
    stdout and stderr piped, ``fds`` passed to it and closed here once it started (or failed to)."""
    try:
        await ensure_guardian_async()
        child_watch.install()  # (its end seen through a pidfd, not a thread started per command)
        marker = child_marker()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env={**env, **marker},
            start_new_session=True,
            pass_fds=fds,
        )
    finally:
        for fd in fds:
            os.close(fd)
    return proc, marker


STANDBY_WAITER = (
    "/bin/sh",
    "-c",
    'read -r go && [ "$go" = go ] && exec "$@" </dev/null',
    "turnstone-standby",
)
"""What a standby sandbox runs until it is told to go: a shell that reads one line from its stdin (a
pipe from the agent) and execs the command only if that line is ``go``. End of file (the agent
closed the pipe, or died) or anything else ends it without running the command."""


def standby_argv(argv: Sequence[str]) -> tuple[list[str], tuple[int, ...]] | None:
    """For a sandboxed argv (bwrap's, with or without the seccomp launcher in front): bwrap's argv
    with :data:`STANDBY_WAITER` between bwrap's ``--`` and the command, and the descriptors to pass
    (the filter's, see ``sandbox.seccomp.without_launcher``; the caller closes them once the
    child started). None for any other argv (nothing to start ahead)."""
    direct = without_launcher(argv)
    if direct is not None:
        rest, fds = direct[0], (direct[1],)
    elif argv and os.path.basename(argv[0]) == "bwrap":
        rest, fds = list(argv), ()
    else:
        return None
    if "--" not in rest:
        for fd in fds:
            os.close(fd)
        return None
    end = rest.index("--")
    return [*rest[: end + 1], *STANDBY_WAITER, *rest[end + 1 :]], fds


class Standby:
    """A sandboxed command's sandbox started ahead, while the user reads the approval, running
    nothing of the command until :meth:`take` tells it to (issue 13 row 7: bubblewrap's namespaces
    and mounts took 15-30 ms for four commands started together, after the user said yes).

    The sandbox runs :data:`STANDBY_WAITER`, which execs the command only after reading ``go``
    from its stdin, a pipe only the agent writes to, and only :meth:`take` writes it, called by
    the call's execute, i.e. after the approval. A call that will not run is closed (:meth:`close`):
    its process group is killed while it still waits. Fail closed: if the agent dies the pipe reaches
    end of file and the waiter exits without running anything (the guardian kills the marked
    process too). Same argv, environment, directory and session as a command started the usual
    way; its stdin is /dev/null once it runs, as for the usual way."""

    def __init__(self, argv: Sequence[str], *, cwd: Path | str, env: dict[str, str]) -> None:
        self._argv = list(argv)
        self._cwd = str(cwd)
        self._env = env
        self._task: asyncio.Task[tuple[asyncio.subprocess.Process, dict[str, str]] | None] | None = None
        self._closed = False
        self._taken = False

    def start(self) -> None:
        """Start the sandbox in the background (no-op if started or closed)."""
        if self._task is None and not self._closed:
            self._task = asyncio.ensure_future(self._spawn())

    async def _spawn(self) -> tuple[asyncio.subprocess.Process, dict[str, str]] | None:
        try:
            planned = standby_argv(self._argv)
            if planned is None:
                return None
            proc, marker = await _start_group(
                *planned, stdin=asyncio.subprocess.PIPE, cwd=self._cwd, env=self._env
            )
        except Exception:  # the command then starts the usual way when it runs
            log.warning("could not start a sandbox ahead", exc_info=True)
            return None
        if self._closed:  # closed while it started: it never runs
            _discard(proc)
            return None
        return proc, marker

    async def take(self) -> tuple[asyncio.subprocess.Process, dict[str, str]] | None:
        """The waiting process and its marker, told to run its command now; None when there is
        none (not started, closed, taken, or it ended): start the command the usual way."""
        if self._task is None or self._taken or self._closed:
            return None
        self._taken = True
        try:
            started = await self._task
        except BaseException:  # (cancelled while it started: it must not stay waiting)
            if self._task.done() and not self._task.cancelled() and self._task.exception() is None:
                waiting = self._task.result()
                if waiting is not None:
                    _discard(waiting[0])
            raise
        if started is None:
            return None
        proc = started[0]
        if proc.returncode is not None or proc.stdin is None:
            _discard(proc)
            return None
        try:
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):  # it ended meanwhile: start it anew
            _discard(proc)
            return None
        return started

    def close(self) -> None:
        """The command will not run (or ran): a sandbox still waiting is killed."""
        if self._closed:
            return
        self._closed = True
        task = self._task
        if self._taken or task is None or not task.done():
            return  # (taken: the run owns it; still starting: _spawn sees closed and kills it)
        if not task.cancelled() and task.exception() is None:
            started = task.result()
            if started is not None:
                _discard(started[0])


def _discard(proc: asyncio.subprocess.Process) -> None:
    """Kill a standby that never ran its command (its whole group); our ends of its pipes are
    closed once it has ended (closed before, asyncio would reap it itself, beside the watcher)."""
    kill_group(proc.pid, signal.SIGKILL)
    _REAPING.add(asyncio.ensure_future(_close_when_ended(proc)))


_REAPING: set[asyncio.Future[None]] = set()


async def _close_when_ended(proc: asyncio.subprocess.Process) -> None:
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), PIPE_GRACE)
    finally:
        _close_pipes(proc)
        _REAPING.discard(asyncio.current_task())  # type: ignore[arg-type]


async def _exited(proc: asyncio.subprocess.Process, readers: asyncio.Future[Any] | None = None) -> None:
    """Return once the main process exited; raise at once if a reader (a sink) failed.

    ``Process.wait()`` (3.11) also waits for the pipes to close, which never happens while a
    background child holds them; so also poll the return code the child watcher records.
    """
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None:
            watch: set[asyncio.Future[Any]] = {waiter}
            if readers is not None and not readers.done():
                watch.add(readers)
            await asyncio.wait(watch, timeout=EXIT_POLL, return_when=asyncio.FIRST_COMPLETED)
            if waiter.done():
                return
            if readers is not None and readers.done() and not readers.cancelled():
                failure = readers.exception()
                if failure is not None:
                    raise failure
    finally:
        waiter.cancel()


async def _feed_stdin(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        with contextlib.suppress(Exception):
            stdin.close()
