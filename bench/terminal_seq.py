"""Bench: ``seq 1 200000`` through the bash tool -> the model's answer on screen, in a real terminal
(issue 13, row 8), and whether the live pane was seen.

The scripted model asks for one bash call ``seq 1 200000`` (run with ``--skip-permissions``, so no
approval is asked) and answers once it has the result. Measured from enter (the prompt sent) until
the answer is on the screen; **live** when, before the answer, the screen showed the running pane
with a number from the middle of the output (1000..190000: the finished card shows only the last
lines). The floor: ``bash -c 'seq 1 200000 | tail -n 3'`` in the same pseudo-terminal size, start to
the last number on screen (the command's own cost; the whole output through pyte would measure
pyte, which needs seconds for it).

Goals: < 0.8 s, the pane seen live every run.

Run: ``.venv/bin/python bench/terminal_seq.py [--runs 5] [--busy [N]]``.
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
    ScreenView,
    add_busy_argument,
    busy_context,
    floor_terminal,
    machine_label,
    median,
    running_app,
    send_prompt,
    verdict,
)
from tests.helpers.model_server import Reply  # noqa: E402

GOAL = 0.8
COMMAND = "seq 1 200000"
_NUMBER = re.compile(r"(?<![\d.])(\d{4,6})(?![\d.])")


def shows_middle(screen: ScreenView) -> bool:
    """A number from the middle of seq's output is on the screen (only a live pane shows those)."""
    return any(1000 <= int(n) <= 190_000 for n in _NUMBER.findall(screen.text))


def run_floor(tmp: Path) -> float:
    with floor_terminal(["bash", "-c", f"{COMMAND} | tail -n 3; read -r -n 1"], tmp) as term:
        started = term.started_at
        shown = term.wait_for(lambda screen: "200000" in screen.text, 60)
        if shown is None:
            raise SystemExit(f"seq never finished on screen:\n{term.text()}")
        return shown - started


def run_app(tmp: Path, rounds: int) -> list[tuple[float, bool]]:
    replies: list[Reply] = []
    for run in range(rounds):
        replies.append(Reply.tools([("bash", {"command": COMMAND})]))
        replies.append(Reply.text(f"Counted to 200000 in round S{run}Q."))
    figures: list[tuple[float, bool]] = []
    with running_app(tmp, replies, args=["--skip-permissions"]) as (term, _server):
        for run in range(rounds):
            live: list[float] = []

            def seen(screen: ScreenView, r: int = run, live: list[float] = live) -> bool:
                if not live and shows_middle(screen):
                    live.append(time.monotonic())
                return f"S{r}Q" in screen.text

            sent = send_prompt(term, f"count round {run}")
            answered = term.wait_for(seen, 60)
            if answered is None:
                raise SystemExit(f"no answer:\n{term.text()}")
            figures.append((answered - sent, bool(live)))
            time.sleep(0.5)
    return figures


def measure(runs: int, busy: int) -> tuple[list[float], list[tuple[float, bool]]]:
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="turnstone-seq-") as tmp_name, busy_context(busy):
        tmp = Path(tmp_name)
        for run in range(runs):
            floors.append(run_floor(tmp / f"floor{run}"))
        app = run_app(tmp / "app", runs)
    return floors, app


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    add_busy_argument(parser)
    args = parser.parse_args()
    floors, app = measure(args.runs, args.busy)
    for n, (wall, live) in enumerate(app):
        print(f"run {n + 1}: enter -> answer {wall:.2f} s, pane seen live: {live}")
    walls = [wall for wall, _ in app]
    lives = sum(1 for _, live in app if live)
    value, floor = median(walls), median(floors)
    print()
    print(f"{COMMAND} through bash -> answer, {args.runs} runs, {machine_label(args.busy)}")
    print(f"  floor ({COMMAND} | tail -n 3 in bash): median {floor * 1000:.0f} ms")
    print(
        f"  turnstone-tui: median {value:.2f} s, max {max(walls):.2f} s ({value / floor:.1f}x the floor); "
        f"goal < {GOAL} s: {verdict(value < GOAL)}"
    )
    print(f"  pane seen live in {lives} of {len(app)} runs; goal every run: {verdict(lives == len(app))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
