"""Bench: what one frame costs Textual itself for a DOM shaped like the app's during a tool batch
(issue 13 item 8): a minimal Textual app, none of turnstone-tui's code.

The app: a scrolling column of ``--rounds`` rounds (a user line, four tool cards, a Markdown
answer), the cards built as the app's are (a bordered ``Vertical`` with a title row of three
``Static`` and a preview ``Static``), and a 2x2 grid of four panes (a title ``Static`` and a
``Log``) under it. Each step does what a finishing tool call does to the screen: one card switches
its status class and gets a 3-line preview, and every pane gets a few output lines; then the
frame is drawn. Measured in the process (Textual's headless driver: the layout and the rendering
of the changed regions are the same work as in a terminal, only the bytes are not written):

- layout: ``Screen._refresh_layout`` (arrange every widget, then render what changed);
- restyle: ``Stylesheet.update_nodes`` (the card's class switch).

Both as wall time and, for the layout, as the main thread's CPU time (``time.thread_time()``:
what a busy machine's other processes do not inflate).

Each program shape runs in its own fresh interpreter, ``--runs`` times, rotating: a hello-world
(one ``Static``), the four panes alone, and the panes with 1, 5 and ``--rounds`` rounds of chat.
``TEXTUAL_SPEEDUPS=0`` in the environment turns off textual-speedups if it is installed.

Run: ``.venv/bin/python bench/textual_frame.py [--runs 3] [--steps 40] [--rounds 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.terminal import venv_python  # noqa: E402

CHILD = r'''
import asyncio, json, sys, time
from textual.app import App, ComposeResult
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.css.stylesheet import Stylesheet
from textual.screen import Screen
from textual.widgets import Log, Markdown, Static

ROUNDS, STEPS, PANES = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
timings = {"layout": [], "layout_cpu": [], "restyle": []}

def timed(cls, name, key):
    original = getattr(cls, name)
    def wrapper(self, *args, **kwargs):
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            timings[key].append(time.perf_counter() - started)
            if key == "layout":
                timings["layout_cpu"].append(time.thread_time() - cpu)
    setattr(cls, name, wrapper)

timed(Screen, "_refresh_layout", "layout")
timed(Stylesheet, "update_nodes", "restyle")

ANSWER = "All four **slept** in round R1X.\n\n- one\n- two\n\n`code` and a [link](x)."

class Card(Vertical):
    DEFAULT_CSS = """
    Card { height: auto; border: round $primary 40%; padding: 0 1; margin: 0 0 1 0; }
    Card.-ok { border: round $success; }
    Card.-running { border: round $warning; }
    Card > Horizontal { height: 1; }
    Card .title { width: 1fr; }
    Card .icon, Card .elapsed { width: auto; }
    Card .preview { height: auto; color: $text-muted; }
    """
    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static("○", classes="icon")
            yield Static("bash: sleep 1; echo slept", classes="title")
            yield Static("0.0s", classes="elapsed")
        yield Static("", classes="preview")

class Pane(Vertical):
    DEFAULT_CSS = "Pane { border: round $primary; } Pane Log { height: 1fr; }"
    def compose(self) -> ComposeResult:
        yield Static("bash: sleep 1")
        yield Log(max_lines=5000)

class Repro(App[None]):
    CSS = """
    #chat { height: 1fr; }
    #panes { layout: grid; grid-size: 2 2; height: 12; }
    .user { margin: 1 0; }
    """
    def compose(self) -> ComposeResult:
        if ROUNDS < 0:
            yield Static("Hello, world")
            return
        with VerticalScroll(id="chat"):
            for r in range(ROUNDS):
                yield Static(f"> sleep round {r}", classes="user")
                for _ in range(4):
                    yield Card()
                yield Markdown(ANSWER)
        if PANES:
            with Grid(id="panes"):
                for _ in range(4):
                    yield Pane()
        yield Static("status bar")

async def main():
    app = Repro()
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(3):
            await pilot.pause()
        await asyncio.sleep(0.3)
        for key in timings:
            timings[key].clear()
        cards = list(app.query(Card))
        logs = list(app.query(Log))
        hello = app.query_one(Static) if ROUNDS < 0 else None
        for step in range(STEPS):
            if cards:
                card = cards[step % len(cards)]
                ok = step % 2 == 0
                card.set_classes("-ok" if ok else "-running")
                card.query_one(".preview", Static).update(
                    "\n".join(f"slept{step}{i}" for i in range(3 if ok else 1)))
            elif hello is not None:
                hello.update(f"Hello, world {step}")
            for log in logs:
                log.write_lines([f"line {step}.{i}" for i in range(5)])
            await pilot.pause()
            await asyncio.sleep(0.02)
    print(json.dumps({k: [round(v * 1000, 3) for v in vals] for k, vals in timings.items()}))

asyncio.run(main())
'''


def run_child(rounds: int, steps: int, panes: bool) -> dict[str, list[float]]:
    out = subprocess.run(
        [venv_python(), "-c", CHILD, str(rounds), str(steps), "1" if panes else "0"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    shapes = {
        "hello-world (one Static)": (-1, False),
        "four panes": (0, True),
        "four panes + 1 round (4 cards)": (1, True),
        "four panes + 5 rounds (20 cards)": (5, True),
        f"four panes + {args.rounds} rounds ({4 * args.rounds} cards)": (args.rounds, True),
    }
    layouts: dict[str, list[float]] = {name: [] for name in shapes}
    cpus: dict[str, list[float]] = {name: [] for name in shapes}
    restyles: dict[str, list[float]] = {name: [] for name in shapes}
    started = time.monotonic()
    for run in range(args.runs):
        names = list(shapes)
        names = names[run % len(names) :] + names[: run % len(names)]
        for name in names:
            rounds, panes = shapes[name]
            result = run_child(rounds, args.steps, panes)
            layouts[name].extend(result["layout"])
            cpus[name].extend(result["layout_cpu"])
            restyles[name].extend(result["restyle"])
    speedups = os.environ.get("TEXTUAL_SPEEDUPS", "1") == "1"
    try:
        probe = subprocess.run(
            [venv_python(), "-c", "import textual.geometry as g; print(g.Region.__module__)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except subprocess.CalledProcessError:
        probe = "?"
    print(
        f"Textual alone, one frame per step ({args.steps} steps x {args.runs} runs, 120x36, "
        f"geometry from {probe!r}{'' if speedups else ', TEXTUAL_SPEEDUPS=0'}; "
        f"{time.monotonic() - started:.0f} s)"
    )
    print(
        f"  {'program':<40} {'layout+render p50':>17} {'p95':>8} {'CPU p50':>8} {'frames':>7} {'restyle p50':>11}"
    )
    for name in shapes:
        values = sorted(layouts[name])
        if not values:
            continue
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        cpu = statistics.median(cpus[name])
        restyle = statistics.median(restyles[name]) if restyles[name] else 0.0
        print(
            f"  {name:<40} {statistics.median(values):14.1f} ms {p95:5.1f} ms {cpu:5.1f} ms"
            f" {len(values):7d} {restyle:8.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
