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

Goal: <= 1.1 s on a quiet machine.

Run: ``.venv/bin/python bench/terminal_parallel_tools.py [--runs 5] [--busy [N]]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    READY_MARK,
    ScreenView,
    Terminal,
    add_busy_argument,
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    add_busy_argument(parser)
    args = parser.parse_args()
    replies: list[Reply] = []
    for run in range(args.runs):
        # (the command is written out in the approval; the times come back with the results)
        command = "s=$EPOCHREALTIME; sleep 1; echo slept{run}-{i} $s $EPOCHREALTIME"
        replies.append(Reply.tools([("bash", {"command": command.format(run=run, i=i)}) for i in range(4)]))
        replies.append(Reply.text(f"All four slept in round R{run}X."))
    walls: list[float] = []
    floors: list[float] = []
    parts: list[tuple[float, float, float, float]] = []  # start lag, end -> request, server, -> screen
    # the commands note wall-clock times; everything else here is time.monotonic()
    wall_offset = time.time() - time.monotonic()
    with tempfile.TemporaryDirectory(prefix="turnstone-par-") as tmp_name:
        tmp = Path(tmp_name)
        for run in range(args.runs):
            floors.append(run_floor(tmp / f"floor{run}"))
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        with ModelServerProcess(replies, tmp / "server") as server, busy_context(args.busy):
            config = write_app_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
            app = Terminal(
                [console_script(), "--config", str(config)],
                cols=COLS,
                rows=ROWS,
                env=hermetic_env(home),
                cwd=work,
            )
            with app:
                if app.wait_for(lambda screen: READY_MARK in screen.text, 120) is None:
                    raise SystemExit(f"the app did not get ready:\n{app.text()}")
                time.sleep(2.0)
                for run in range(args.runs):
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
                    answered = app.wait_for(lambda screen, r=run: f"R{r}X" in screen.text, 60)
                    if answered is None:
                        raise SystemExit(f"no answer:\n{app.text()}")
                    walls.append(answered - approved)
                    split = where_it_went(server, run, approved, answered, wall_offset)
                    detail = ""
                    if split is not None:
                        parts.append(split)
                        began, sent, server_ms, shown = (value * 1000 for value in split)
                        detail = (
                            f" (approval -> last command began {began:.0f} ms; last ended -> request "
                            f"received {sent:.0f} ms; server {server_ms:.0f} ms; -> answer on screen {shown:.0f} ms)"
                        )
                    print(
                        f"run {run + 1}/{args.runs}: approval -> answer {walls[-1]:.2f} s{detail}", flush=True
                    )
                    time.sleep(0.5)
    value = median(walls)
    floor = median(floors)
    print()
    print(f"4 x sleep 1 approved together -> answer, {args.runs} runs, {machine_label(args.busy)}")
    print(f"  max {max(walls):.2f} s")
    if parts:
        began, sent, server_ms, shown = (median([p[k] for p in parts]) * 1000 for k in range(4))
        print(
            f"  medians: approval -> last command began {began:.0f} ms; last command ended -> the "
            f"answer's request received {sent:.0f} ms; the server's own {server_ms:.0f} ms; -> answer "
            f"on screen {shown:.0f} ms"
        )
    print(report_row("approval -> answer, median", value, floor, f"<= {GOAL} s", value <= GOAL, unit="s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
