"""A real-terminal harness for the benches: a program in a pseudo-terminal, its output fed to a
pyte screen as it arrives, keys written to the terminal, and the time at which the screen first
showed something.

One thread reads every chunk the program writes and notes when it arrived; another feeds the chunks
into a ``pyte`` screen and, right after each, checks the conditions the bench is waiting for: the
time reported for a condition is the time the chunk that made it true arrived, as a user looking at
a terminal would see it. (Reading and parsing in one thread reported a frame's last chunk late by
the time pyte took to parse the chunks before it, ~1 ms per KB, 10-40 ms for a full Textual frame,
and held the program's writes meanwhile: a pty buffers only 4 KB.)

    with Terminal([python, "app.py"], cols=120, rows=36) as term:
        shown = term.wait_for(lambda screen: "Hello" in screen.text, timeout=60)
        term.send(b"x")
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import fcntl
import os
import queue
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyte

ROOT = Path(__file__).resolve().parent.parent
RAW_LOG_BYTES = 16 << 20
"""How much of a terminal's traffic (both ways) :attr:`Terminal.raw_log` keeps, the newest."""


def venv_python() -> str:
    """The interpreter of this tree's venv (the one whose ``turnstone-tui`` runs this tree's code)."""
    candidate = ROOT / ".venv" / "bin" / "python"
    return str(candidate) if candidate.exists() else sys.executable


def console_script() -> str:
    """The real ``turnstone-tui`` console script of this tree's venv (or of the running Python);
    ``TURNSTONE_BENCH_APP`` names another one (e.g. an older tree's, to compare in one run)."""
    chosen = os.environ.get("TURNSTONE_BENCH_APP")
    if chosen:
        return chosen
    for candidate in (
        ROOT / ".venv" / "bin" / "turnstone-tui",
        Path(sys.executable).parent / "turnstone-tui",
    ):
        if candidate.exists():
            return str(candidate)
    raise SystemExit("no turnstone-tui console script: install the package (pip install -e .)")


class ScreenView:
    """What a condition sees: the screen's lines (pyte's display) and their text joined."""

    def __init__(self, screen: pyte.Screen) -> None:
        self._screen = screen
        self._text: str | None = None

    @property
    def lines(self) -> list[str]:
        return list(self._screen.display)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join(self._screen.display)
        return self._text

    def has_content(self) -> bool:
        return any(line.strip() for line in self._screen.display)


Condition = Callable[[ScreenView], bool]


@dataclass
class _Waiter:
    condition: Condition
    event: threading.Event = field(default_factory=threading.Event)
    seen_at: float | None = None
    since: float = field(default_factory=time.monotonic)


class Terminal:
    """One program in a pseudo-terminal of ``cols`` × ``rows`` (TERM=xterm-256color)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cols: int = 120,
        rows: int = 36,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.cols, self.rows = cols, rows
        self._start_cols, self._start_rows = cols, rows
        self.env = {**os.environ, **(env or {}), "TERM": "xterm-256color", "COLORTERM": "truecolor"}
        self.env.pop("TMUX", None)
        self.cwd = str(cwd) if cwd else None
        self.screen = pyte.Screen(cols, rows)
        self._stream = pyte.ByteStream(self.screen)
        self._lock = threading.Lock()  # the screen and the waiters (the parser holds it while pyte parses)
        self._times_lock = threading.Lock()  # the reader's figures: never held while parsing
        self._waiters: list[_Waiter] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._master = -1
        self._reader: threading.Thread | None = None
        self._parser: threading.Thread | None = None
        self._chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
        self.started_at = 0.0
        self.bytes_read = 0
        self.last_output_at = 0.0
        self.output_times: list[float] | None = None  # arrival time of every chunk, while recording
        # while recording: at each chunk's arrival, how long the program's main thread has waited
        # for a CPU so far (run queue, /proc/PID/task/PID/schedstat), None where it cannot be read
        self.run_queue_waits: list[float | None] | None = None
        self._schedstat: int | None = None
        # Every chunk the program wrote and every key written to it, in order, with its time:
        # (monotonic, "out" | "in", bytes), the last RAW_LOG_BYTES of them (dump_raw_log).
        self.raw_log: collections.deque[tuple[float, str, bytes]] = collections.deque()
        self._raw_log_bytes = 0
        self.raw_log_complete = True  # nothing dropped yet: the log holds all the output since start
        self._raw_log_lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Terminal:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))

        def make_controlling_terminal() -> None:  # runs in the child, before exec
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.started_at = time.monotonic()
        self._process = subprocess.Popen(
            self.argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=self.env,
            cwd=self.cwd,
            preexec_fn=make_controlling_terminal,  # noqa: PLW1509 - the bench starts no threads before
            close_fds=True,
        )
        os.close(slave)
        self._master = master
        try:
            pid = self._process.pid
            self._schedstat = os.open(f"/proc/{pid}/task/{pid}/schedstat", os.O_RDONLY)
        except OSError:
            self._schedstat = None
        # the reader must get the GIL back soon after a chunk arrives, while the parser holds it
        sys.setswitchinterval(min(sys.getswitchinterval(), 0.0005))
        self._reader = threading.Thread(target=self._read_loop, name="pty-reader", daemon=True)
        self._parser = threading.Thread(target=self._parse_loop, name="pty-parser", daemon=True)
        self._reader.start()
        self._parser.start()
        return self

    def _read_loop(self) -> None:
        """Read chunks as fast as they come and note their arrival (parsing is the other thread's)."""
        chunks = self._chunks
        while True:
            try:
                data = os.read(self._master, 1 << 16)
            except OSError:
                data = b""
            now = time.monotonic()
            if not data:
                chunks.put((now, b""))
                return
            # Not the screen's lock: the parser holds that while pyte parses a chunk (10-40 ms for a
            # full Textual frame), and a reader waiting for it read the next chunk that much late.
            with self._times_lock:
                self.bytes_read += len(data)
                self.last_output_at = now
                if self.output_times is not None:
                    self.output_times.append(now)
                    if self.run_queue_waits is not None:
                        self.run_queue_waits.append(self._run_queue_wait())
            self._log_raw(now, "out", data)
            chunks.put((now, data))

    def _log_raw(self, now: float, kind: str, data: bytes) -> None:
        with self._raw_log_lock:
            log = self.raw_log
            log.append((now, kind, data))
            self._raw_log_bytes += len(data)
            while self._raw_log_bytes > RAW_LOG_BYTES and len(log) > 1:
                self._raw_log_bytes -= len(log.popleft()[2])
                self.raw_log_complete = False

    def dump_raw_log(self, path: Path) -> Path:
        """Write the raw log (the program's output chunks and the keys written, in order, as
        they crossed the pty, times relative to the first entry) to ``path``: one line per entry,
        ``time kind repr(bytes)``."""
        with self._raw_log_lock:
            entries = list(self.raw_log)
        t0 = entries[0][0] if entries else 0.0
        with path.open("w", encoding="utf-8") as out:
            for at, kind, data in entries:
                out.write(f"{at - t0:10.4f} {kind:3} {data!r}\n")
        return path

    def replay_raw_log(self) -> list[str] | None:
        """The screen a fresh pyte screen of the starting size shows after all the output logged,
        fed in one piece (other chunk boundaries than the reader's), or None if the log is not
        complete."""
        with self._raw_log_lock:
            if not self.raw_log_complete:
                return None
            data = b"".join(chunk for _, kind, chunk in self.raw_log if kind == "out")
        screen = pyte.Screen(self._start_cols, self._start_rows)
        pyte.ByteStream(screen).feed(data)
        return list(screen.display)

    def _parse_loop(self) -> None:
        """Feed each chunk to the screen and check the waiters with the time it arrived."""
        chunks = self._chunks
        while True:
            arrived, data = chunks.get()
            with self._lock:
                if not data:
                    for waiter in self._waiters:
                        waiter.event.set()
                    self._waiters.clear()
                    return
                self._stream.feed(data)
                self._check_waiters(arrived)

    def _check_waiters(self, now: float) -> None:
        if not self._waiters:
            return
        view = ScreenView(self.screen)
        for waiter in list(self._waiters):
            try:
                met = waiter.condition(view)
            except Exception:  # a condition's bug must not kill the reader
                met = False
            if met:
                # a chunk that arrived before the wait began (parsed late) counts from the wait
                waiter.seen_at = max(now, waiter.since)
                waiter.event.set()
                self._waiters.remove(waiter)

    def close(self, quit_keys: bytes = b"\x11", grace: float = 10.0) -> int | None:
        """Ask the program to quit (ctrl+q), then end its process group if it has not."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None and quit_keys:
            with contextlib.suppress(OSError):
                self.send(quit_keys)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(grace)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        with contextlib.suppress(OSError):
            os.close(self._master)
        for thread in (self._reader, self._parser):
            if thread is not None:
                thread.join(5)
        if self._schedstat is not None:
            with contextlib.suppress(OSError):
                os.close(self._schedstat)
            self._schedstat = None
        self._process = None
        return process.returncode

    def __enter__(self) -> Terminal:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- use ---------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def send(self, keys: bytes | str) -> float:
        """Write keys to the terminal; the time they were written."""
        data = keys.encode() if isinstance(keys, str) else keys
        now = time.monotonic()
        self._log_raw(now, "in", data)
        os.write(self._master, data)
        return now

    def text(self) -> str:
        with self._lock:
            return ScreenView(self.screen).text

    def resize(self, cols: int, rows: int) -> None:
        """Give the terminal a new size (the program gets SIGWINCH from the kernel and redraws)."""
        with self._lock:
            self.screen.resize(rows, cols)
            self.cols, self.rows = cols, rows
        fcntl.ioctl(self._master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def wait_for(self, condition: Condition, timeout: float) -> float | None:
        """The time the screen first met ``condition`` (checked on every chunk of output, and now),
        or None if it did not within ``timeout`` seconds or the program ended."""
        waiter = _Waiter(condition)
        with self._lock:
            if condition(ScreenView(self.screen)):
                return time.monotonic()
            self._waiters.append(waiter)
        waiter.event.wait(timeout)
        with self._lock:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        return waiter.seen_at

    def record_output_times(self) -> list[float]:
        """From now on, note the arrival time of every chunk of output (into the list returned),
        and with each the program's main thread's run-queue wait so far (``run_queue_waits``)."""
        with self._times_lock:
            self.output_times = []
            self.run_queue_waits = []
            return self.output_times

    def _run_queue_wait(self) -> float | None:
        """Seconds the program's main thread has spent runnable but not running, so far."""
        if self._schedstat is None:
            return None
        try:
            return int(os.pread(self._schedstat, 128, 0).split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return None

    def wait_quiet(self, quiet: float, timeout: float) -> bool:
        """Wait until no output arrived for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if time.monotonic() - max(self.last_output_at, self.started_at) >= quiet:
                return True
            time.sleep(min(quiet / 4, 0.05))
        return False


PYCACHE = Path(tempfile.gettempdir()) / "turnstone-bench-pycache"
"""Where benched programs keep their bytecode: one place for every run and every bench, as an
installed package has its .pyc files from its second start on. (A cache under each run's own home
made every run compile every module it imported, Textual's and the SDKs' too, since a prefix
hides the __pycache__ dirs beside the sources: the first of anything imported mid-stream, a
lexer for a code block, was compiled in the middle of the measured stream. The source's full
path is part of each cached file's path, so two trees never share a file.)"""


def hermetic_env(home: Path) -> dict[str, str]:
    """Environment for a benched program: none of the machine user's config, data or cache dirs;
    bytecode cached in :data:`PYCACHE` (a tree run with PYTHONDONTWRITEBYTECODE would recompile
    every module of the app on every start)."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
        "PYTHONDONTWRITEBYTECODE": "",
        "PYTHONPYCACHEPREFIX": str(PYCACHE),
    }


# -- figures ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(values: Sequence[float]) -> str:
    """``p50 / p95 / max`` of seconds, in milliseconds."""
    if not values:
        return "no samples"
    return (
        f"p50 {percentile(values, 50) * 1000:7.1f} ms  p95 {percentile(values, 95) * 1000:7.1f} ms"
        f"  max {max(values) * 1000:7.1f} ms  (n={len(values)})"
    )


def longest_gap(times: Sequence[float], start: float, end: float) -> float:
    """The longest time between ``start`` and ``end`` in which no output arrived (a frozen screen)."""
    inside = [t for t in times if start <= t <= end]
    points = [start, *inside, end]
    return max((b - a for a, b in zip(points, points[1:], strict=False)), default=0.0)


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (all its threads, ended ones included): what a shared
    machine inflates far less than wall time.

    Read from the kernel's CPU-time clock of the process (``clock_gettime`` on the clock id
    Linux gives any process: ``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``), in nanoseconds. It
    is the same count as /proc/PID/stat's user + system time (the scheduler's run time of every
    thread), which /proc reports only in clock ticks of 10 ms: a turn of ~100 ms then reads as
    90, 100 or 110 ms at random, enough to move a median of ten turns by 10%. /proc is the
    fallback where the clock cannot be read."""
    try:
        return time.clock_gettime_ns(_process_cpu_clock(pid)) / 1e9
    except (OSError, OverflowError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _process_cpu_clock(pid: int) -> int:
    # linux/posix-timers.h: ((~pid) << 3) | CPUCLOCK_SCHED, CPUCLOCK_PERTHREAD_MASK clear.
    return ((~pid) << 3) | 2


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def verdict(ok: bool) -> str:
    return "MEETS GOAL" if ok else "MISSES GOAL"


class CpuHog:
    """A CPU-heavy job on the same machine (``--busy``): one spinning process per ``workers``."""

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self._processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuHog:
        for _ in range(self.workers):
            self._processes.append(
                subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
        self._processes.clear()


def add_busy_argument(parser: argparse.ArgumentParser) -> None:
    """``--busy [N]``: N CPU-spinning processes alongside (``--busy`` alone: two, one per core of a
    2-core machine, both cores busy; ``--busy 1``: "another CPU-heavy job running")."""
    parser.add_argument(
        "--busy",
        nargs="?",
        const=2,
        default=0,
        type=int,
        metavar="N",
        help="run N CPU-spinning processes alongside (N defaults to 2)",
    )


def add_compare_argument(parser: argparse.ArgumentParser) -> None:
    """``--compare PATH`` (repeatable): another turnstone-tui console script measured in the same
    rotation (an A/B under the same load)."""
    parser.add_argument(
        "--compare",
        metavar="PATH",
        action="append",
        default=[],
        help="another turnstone-tui console script to measure in the same rotation (an A/B; may be repeated)",
    )


def busy_context(workers: int) -> contextlib.AbstractContextManager[object]:
    return CpuHog(workers) if workers > 0 else contextlib.nullcontext()


def spinners_label(workers: int) -> str:
    return "one CPU spinner" if workers == 1 else f"{workers} CPU spinners"


def machine_label(workers: int) -> str:
    """How loaded the machine was, for a report's heading: "busy" means this bench's own CPU
    spinners; without them the load average says what else ran (a shared machine is not quiet
    just because the bench added nothing)."""
    if workers > 0:
        return f"busy machine ({spinners_label(workers)} alongside)"
    return "no spinners added (load average {:.1f} / {:.1f} over 1 / 5 min)".format(*os.getloadavg()[:2])


# -- the real app against the scripted model server -------------------------------------------


def write_app_config(path: Path, base_url: str, db: Path) -> Path:
    """A config.toml for the scripted model server (OpenAI protocol), the database in ``db``."""
    path.write_text(
        f'db_path = "{db}"\n\n[api]\nbase_url = "{base_url}"\napi_key = "bench-key"\n\n'
        '[model]\nname = "scripted-model"\nprovider = "openai"\nretries = 0\ncontext_window = 200000\n',
        encoding="utf-8",
    )
    return path


READY_MARK = "shift+enter"
"""On the welcome line the app shows once the session can take prompts."""


def key_latencies(term: Terminal, count: int, timeout: float = 30.0) -> list[float]:
    """Type ``count`` letters one at a time; for each, the time from writing it to the terminal
    until the text typed so far (after an unmeasured "ZQ" prefix, so it is unique on the screen)
    is on the screen. Erases what it typed (backspaces) at the end."""
    alphabet = "qwertyuiopasdfghjklzxcvbnm"
    prefix = "ZQ"
    typed = ""
    latencies: list[float] = []

    def restart() -> None:
        term.send(prefix)
        term.wait_for(lambda screen: prefix in screen.text, timeout)

    restart()
    for i in range(count):
        if len(typed) >= 20:  # keep the line short: erase and start again
            term.send(b"\x7f" * (len(typed) + len(prefix)))
            term.wait_for(lambda screen, old=prefix + typed: old not in screen.text, timeout)
            typed = ""
            restart()
        typed += alphabet[(i * 7) % len(alphabet)]
        sent = term.send(typed[-1])
        shown = term.wait_for(lambda screen, text=prefix + typed: text in screen.text, timeout)
        latencies.append((shown if shown is not None else time.monotonic()) - sent)
        if shown is None:
            # Counted as the timeout. Every later key of this line would wait out the timeout
            # too (the text typed so far never matches): erase the line and start again.
            seen = [line.strip() for line in term.text().splitlines() if prefix in line]
            print(
                f"key {i + 1} of {count} ({prefix + typed!r}) not on the screen after {timeout:.0f} s; "
                f"lines with {prefix!r}: {seen}",
                file=sys.stderr,
            )
            term.send(b"\x7f" * (len(typed) + len(prefix) + 4))
            term.wait_for(lambda screen: prefix not in screen.text, timeout)
            typed = ""
            restart()
        time.sleep(0.03)
    term.send(b"\x7f" * (len(typed) + len(prefix)))
    return latencies


COLS, ROWS = 120, 36


@contextlib.contextmanager
def running_app(
    tmp: Path,
    replies: Sequence[object],
    *,
    args: Sequence[str] = (),
    cols: int = COLS,
    rows: int = ROWS,
    app_script: str | None = None,
) -> Iterator[tuple[Terminal, object]]:
    """The real console script (``app_script``, or :func:`console_script`'s) in a pseudo-terminal
    against the scripted model server (its own process) playing ``replies``; yields (terminal,
    server) once the app can take a prompt."""
    from tests.helpers.model_server import ModelServerProcess

    home, work = tmp / "home", tmp / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    with ModelServerProcess(list(replies), tmp / "server") as server:  # type: ignore[arg-type]
        config = write_app_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
        with ready_app(
            config, hermetic_env(home), work, args=args, cols=cols, rows=rows, app_script=app_script
        ) as app:
            yield app, server


@contextlib.contextmanager
def ready_app(
    config: Path,
    env: dict[str, str],
    work: Path,
    *,
    args: Sequence[str] = (),
    cols: int = COLS,
    rows: int = ROWS,
    app_script: str | None = None,
    settle: float = 1.5,
) -> Iterator[Terminal]:
    """The real console script (``app_script``, or :func:`console_script`'s) with ``config`` in a
    pseudo-terminal; yields it once it can take a prompt and ``settle`` seconds more have passed
    (its start-up warm-up)."""
    app = Terminal(
        [app_script or console_script(), "--config", str(config), *args],
        cols=cols,
        rows=rows,
        env=env,
        cwd=work,
    )
    with app:
        if app.wait_for(lambda screen: READY_MARK in screen.text, 120) is None:
            raise SystemExit(f"the app did not get ready:\n{app.text()}")
        time.sleep(settle)
        yield app


def send_prompt(term: Terminal, prompt: str, timeout: float = 30.0) -> float:
    """Type ``prompt``, wait until it shows, press enter; the time enter was written."""
    term.send(prompt)
    if term.wait_for(lambda screen: prompt in screen.text, timeout) is None:
        raise SystemExit(f"the prompt never showed:\n{term.text()}")
    return term.send(b"\r")


def floor_terminal(argv: Sequence[str], tmp: Path, *, cols: int = COLS, rows: int = ROWS) -> Terminal:
    """A floor program in a pseudo-terminal with the same hermetic environment as the app."""
    home = tmp / "floor-home"
    home.mkdir(parents=True, exist_ok=True)
    return Terminal(list(argv), cols=cols, rows=rows, env=hermetic_env(home), cwd=tmp)


def report_row(name: str, value: float, floor: float, goal: str, ok: bool, unit: str = "ms") -> str:
    """One line: the figure, the floor measured in the same run, the ratio and the goal."""
    scale, digits = (1000, 1) if unit == "ms" else (1, 2)
    ratio = value / floor if floor > 0 else float("nan")
    return (
        f"  {name:44} {value * scale:8.{digits}f} {unit}  floor {floor * scale:7.{digits}f} {unit}  "
        f"({ratio:4.1f}x)  goal {goal}: {verdict(ok)}"
    )
