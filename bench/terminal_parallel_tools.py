"""Bench: four ``sleep 1`` bash calls approved together -> the answer on screen (issue 13, row 7).

The real console script in a pseudo-terminal read through pyte (``bench/terminal.py``); the
scripted model asks for four ``sleep 1`` calls in one batch, the approval modal opens and ``y``
(approve the batch) is pressed; the time from that key until the model's answer (sent after all four
results) is on the screen. The floor, measured in the same run: ``bash`` in the same pseudo-terminal
running four ``sleep 1`` in the background and printing a line once all have ended (the ideal is
one second: the calls run together).

Each run also says where the time beyond the sleeps went: each command notes when it began and
ended (bash's ``$EPOCHREALTIME``, no extra process) in its output, which reaches the model with the
results; the scripted server notes when it began writing the answer. So: approval -> the last
command began (the sandbox's start-up included), the last command ended -> the answer's request
reached the server (results collected, the request built and sent), the server's own time to begin
the answer, and that -> the answer on the screen (the answer applied and drawn, and the terminal's
share).

And how much of the last stretch (the last command's end -> the answer on screen) the app's main
thread spent running, and how much waiting for a CPU (its ``/proc`` schedstat, sampled every
millisecond near the end of each round): on a shared machine that stretch's wall time is mostly
the wait, which no change to the app removes; its CPU time is what a change can cut, and varies far
less from run to run.

Goal: <= 1.1 s on a quiet machine.

``--trace`` loads ``bench/gap_trace.py``'s tracer into the apps and prints, for each round, their
loop steps over 4 ms and garbage collections from the last command's end to the answer on screen
(it slows them: the figures of a traced run are not comparable).

``--compare PATH`` (repeatable) adds another ``turnstone-tui`` console script (e.g. a fresh install of the
commit before a change): each program runs in its own terminal against its own scripted server, all
open at once, and each round measures them one after the other (the first rotating), so an A/B is
measured in the same run, under the same load.

Run: ``.venv/bin/python bench/terminal_parallel_tools.py [--runs 5] [--busy [N]] [--compare PATH] [--trace]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import gap_trace  # noqa: E402
from bench.terminal import (  # noqa: E402
    READY_MARK,
    ScreenView,
    Terminal,
    add_busy_argument,
    add_compare_argument,
    busy_context,
    console_script,
    floor_terminal,
    hermetic_env,
    machine_label,
    median,
    report_row,
    write_app_config,
)
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

COLS, ROWS = 120, 36
GOAL = 1.1


def run_floor(tmp: Path) -> float:
    script = "for i in 1 2 3 4; do sleep 1 & done; wait; echo all-four-slept; read -r -n 1"
    with floor_terminal(["bash", "-c", script], tmp) as term:
        shown = term.wait_for(lambda screen: "all-four-slept" in screen.text, 60)
        if shown is None:
            raise SystemExit(f"the floor never finished:\n{term.text()}")
        return shown - term.started_at


def where_it_went(
    server: ModelServerProcess, run: int, approved: float, answered: float, wall_offset: float
) -> tuple[float, float, float, float] | None:
    """(approval -> the last command began, the last command ended -> the answer's request reached
    the server, the server's time to begin the answer, that -> the answer on screen) in seconds, from
    the times the commands printed (their results are in the answer's request) and the server's
    record of its streams; None if not found."""
    found: dict[str, tuple[float, float]] = {}
    for request in server.requests():
        text = str(request.get("body"))
        for i, began, ended in re.findall(rf"slept{run}-(\d) (\d+\.\d+) (\d+\.\d+)", text):
            found[i] = (float(began) - wall_offset, float(ended) - wall_offset)
    streams = server.streams()
    if len(found) != 4 or len(streams) < 2 * run + 2:
        return None
    stream = streams[2 * run + 1]  # (each round: the tool calls, then the answer)
    received, served = stream.get("received", stream["started"]), stream["started"]
    last_began = max(began for began, _ in found.values())
    last_ended = max(ended for _, ended in found.values())
    return last_began - approved, received - last_ended, served - received, answered - served


COMPARED = "turnstone-tui (--compare)"


class MainThreadClock:
    """Samples the app's main thread's CPU time and run-queue wait (``/proc/PID/task/PID/schedstat``)
    every millisecond from ``after`` seconds on until stopped, so the CPU the app spent on a stretch
    known only afterwards (the last command's end -> the answer on screen) can be read: on a shared
    machine its wall time is mostly waiting for a CPU, its CPU time is what a change can cut."""

    def __init__(self, pid: int, after: float) -> None:
        self._path = f"/proc/{pid}/task/{pid}/schedstat"
        self._after = after
        self._stop = threading.Event()
        self.samples: list[tuple[float, float, float]] = []  # (monotonic, cpu s, wait s)
        self._thread = threading.Thread(target=self._run, name="main-thread-clock", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            fd = os.open(self._path, os.O_RDONLY)
        except OSError:
            return
        try:
            self._stop.wait(self._after)
            while not self._stop.is_set():
                fields = os.pread(fd, 128, 0).split()
                self.samples.append((time.monotonic(), int(fields[0]) / 1e9, int(fields[1]) / 1e9))
                time.sleep(0.001)
        finally:
            os.close(fd)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)

    def between(self, start: float, end: float) -> tuple[float, float] | None:
        """(CPU seconds, run-queue wait seconds) of the main thread from ``start`` to ``end``
        (the last sample at or before each), None if the samples do not cover it."""
        before = [s for s in self.samples if s[0] <= start]
        upto = [s for s in self.samples if s[0] <= end]
        if not before or not upto:
            return None
        return upto[-1][1] - before[-1][1], upto[-1][2] - before[-1][2]


class Session:
    """One console script in its pseudo-terminal against its own scripted model server, playing
    ``runs`` rounds of four ``sleep 1`` calls; :meth:`round` measures one."""

    def __init__(self, name: str, script: str, runs: int, tmp: Path, stack: contextlib.ExitStack) -> None:
        self.name = name
        self.walls: list[float] = []
        # start lag, end -> request, server, -> screen
        self.parts: list[tuple[float, float, float, float]] = []
        # the main thread's (CPU, run-queue wait), the last command's end -> the answer on screen
        self.path_cpu: list[tuple[float, float]] = []
        self.next_run = 0
        replies: list[Reply] = []
        for run in range(runs):
            # (the command is written out in the approval; the times come back with the results)
            command = "s=$EPOCHREALTIME; sleep 1; echo slept{run}-{i} $s $EPOCHREALTIME"
            replies.append(
                Reply.tools([("bash", {"command": command.format(run=run, i=i)}) for i in range(4)])
            )
            replies.append(Reply.text(f"All four slept in round R{run}X."))
        home, work = tmp / "home", tmp / "work"
        home.mkdir(parents=True)
        work.mkdir(parents=True)
        self.server = stack.enter_context(ModelServerProcess(replies, tmp / "server"))
        config = write_app_config(tmp / "config.toml", self.server.openai_base_url, tmp / "bench.db")
        self.windows: list[tuple[float, float]] = []  # (the last command ended, the answer shown)
        self.app = stack.enter_context(
            Terminal(
                [script, "--config", str(config)], cols=COLS, rows=ROWS, env=hermetic_env(home), cwd=work
            )
        )

    def ready(self) -> None:
        if self.app.wait_for(lambda screen: READY_MARK in screen.text, 120) is None:
            raise SystemExit(f"the app did not get ready:\n{self.app.text()}")

    def round(self, wall_offset: float) -> str:
        app, run = self.app, self.next_run
        self.next_run += 1
        prompt = f"sleep round {run}"
        app.send(prompt)
        app.wait_for(lambda screen, p=prompt: p in screen.text, 30)
        app.send(b"\r")
        modal = f"echo slept{run}-3"  # the batch's last call, listed in the approval modal

        def asked(screen: ScreenView, m: str = modal) -> bool:
            return "Approve 4 tool calls?" in screen.text and m in screen.text

        if app.wait_for(asked, 60) is None:
            raise SystemExit(f"no approval modal:\n{app.text()}")
        time.sleep(0.3)
        approved = app.send("y")  # approve this batch (not "always")
        clock = MainThreadClock(app.pid, 0.8)  # (the sleeps take a second)
        answered = app.wait_for(lambda screen, r=run: f"R{r}X" in screen.text, 60)
        clock.stop()
        if answered is None:
            raise SystemExit(f"no answer:\n{app.text()}")
        self.walls.append(answered - approved)
        split = where_it_went(self.server, run, approved, answered, wall_offset)
        detail = ""
        if split is not None:
            self.parts.append(split)
            self.windows.append((answered - split[3] - split[2] - split[1], answered))
            began, sent, server_ms, shown = (value * 1000 for value in split)
            detail = (
                f" (approval -> last command began {began:.0f} ms; last ended -> request "
                f"received {sent:.0f} ms; server {server_ms:.0f} ms; -> answer on screen {shown:.0f} ms"
            )
            used = clock.between(answered - split[3] - split[2] - split[1], answered)
            if used is not None:
                self.path_cpu.append(used)
                detail += (
                    f"; last ended -> screen: main thread CPU {used[0] * 1000:.0f} ms, "
                    f"waiting {used[1] * 1000:.0f} ms"
                )
            detail += ")"
        return f"approval -> answer {self.walls[-1]:.2f} s{detail}"

    def summary(self) -> str:
        lines = [f"  {self.name}: median {median(self.walls):.2f} s, max {max(self.walls):.2f} s"]
        if self.parts:
            began, sent, server_ms, shown = (median([p[k] for p in self.parts]) * 1000 for k in range(4))
            lines.append(
                f"    medians: approval -> last command began {began:.0f} ms; last command ended -> the "
                f"answer's request received {sent:.0f} ms; the server's own {server_ms:.0f} ms; -> answer "
                f"on screen {shown:.0f} ms"
            )
        if self.path_cpu:
            cpu, wait = (median([p[k] for p in self.path_cpu]) * 1000 for k in range(2))
            lines.append(
                f"    the last command's end -> the answer on screen: the app's main thread ran {cpu:.0f} ms "
                f"(max {max(p[0] for p in self.path_cpu) * 1000:.0f}), waited for a CPU {wait:.0f} ms (medians)"
            )
        return "\n".join(lines)

    def trace_report(self, directory: Path, pid: int) -> str:
        """What the app's loop did from each round's last command's end to its answer on screen."""
        trace = gap_trace.load(directory, pid)
        if trace is None:
            return f"  (no trace from pid {pid})"
        lines = [f"  {self.name} (pid {pid}):"]
        for run, (ended, shown) in enumerate(self.windows):
            lines.append(
                f"   round {run + 1}: last command ended -> answer on screen {(shown - ended) * 1000:.0f} ms"
            )
            events = [
                (start, end, what) for start, end, what in trace["steps"] if end > ended and start < shown
            ]
            events += [
                (start, end, f"gc gen {generation}")
                for start, end, generation in trace["gcs"]
                if end > ended and start < shown and end - start > 0.0005
            ]
            events += [
                (start, end, what)
                for start, end, what in trace.get("marks", [])
                if end > ended and start < shown
            ]
            for start, end, what in sorted(events):
                lines.append(f"    {(start - ended) * 1000:+7.1f} ms  {(end - start) * 1000:5.1f} ms  {what}")
        return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    add_busy_argument(parser)
    add_compare_argument(parser)
    parser.add_argument(
        "--trace",
        action="store_true",
        help="trace the apps (bench/gap_trace.py) and print their loop steps over 4 ms and collections "
        "between the last command's end and the answer (slows them: figures not comparable)",
    )
    args = parser.parse_args()
    trace_dir: Path | None = None
    if args.trace:
        trace_dir = Path(tempfile.mkdtemp(prefix="turnstone-gap-trace-"))
        gap_trace.enable(trace_dir)
        print(f"tracing the apps into {trace_dir}", flush=True)
    programs = [("turnstone-tui", console_script())]
    for index, script in enumerate(args.compare):
        programs.append((COMPARED if index == 0 else f"{COMPARED[:-1]} {index + 1})", script))
    floors: list[float] = []
    # the commands note wall-clock times; everything else here is time.monotonic()
    wall_offset = time.time() - time.monotonic()
    with tempfile.TemporaryDirectory(prefix="turnstone-par-") as tmp_name, contextlib.ExitStack() as stack:
        tmp = Path(tmp_name)
        for run in range(args.runs):
            floors.append(run_floor(tmp / f"floor{run}"))
        sessions = [
            Session(name, script, args.runs, tmp / f"app{index}", stack)
            for index, (name, script) in enumerate(programs)
        ]
        stack.enter_context(busy_context(args.busy))
        for session in sessions:
            session.ready()
        time.sleep(2.0)
        for run in range(args.runs):
            # all programs stay open; each round runs them one after the other, the first rotating
            for offset in range(len(sessions)):
                session = sessions[(run + offset) % len(sessions)]
                line = session.round(wall_offset)
                label = f" {session.name}" if len(sessions) > 1 else ""
                print(f"run {run + 1}/{args.runs}{label}: {line}", flush=True)
                time.sleep(0.5)
        pids = [session.app.pid for session in sessions]
    if trace_dir is not None:
        for session, pid in zip(sessions, pids, strict=True):
            print(session.trace_report(trace_dir, pid))
    floor = median(floors)
    print()
    print(f"4 x sleep 1 approved together -> answer, {args.runs} runs, {machine_label(args.busy)}")
    for session in sessions:
        print(session.summary())
    value = median(sessions[0].walls)
    print(report_row("approval -> answer, median", value, floor, f"<= {GOAL} s", value <= GOAL, unit="s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
