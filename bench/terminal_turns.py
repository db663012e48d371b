"""Bench: the cost of each new turn in a growing session (issue 13, row 4).

The real console script in a pseudo-terminal read through pyte (``bench/terminal.py``) against the
scripted model server, driven through ``--turns`` turns (default 300): each turn types a prompt,
presses enter and waits until the last line of the model's answer (a Markdown answer with a
heading, a paragraph, a list and a code block; every fifth turn runs a bash call first) is on the
screen. It prints the time per turn (enter -> last line on screen) around turns 10, 100 and 300
(median of the ten turns up to each), the app's CPU time per turn around the same turns (user +
system, from enter to the next turn's enter: what the other processes on a shared machine inflate
far less than the wall time, whose ratio moves with the load over a run of several minutes) and
the app's RSS after turn 10 and after the last turn. The CPU time is also given as the mean of
turns 11-30 and of the last 50 turns: a mean counts the turns that ran a long collection, which the
medians leave out.

The floor, in the same run: the same answers written to a raw terminal by a tiny program that
reads each prompt line (``bench/floor_echo.py``): what the terminal and the harness cost.

Goals: flat (the turns near 300 take no longer than the turns near 10, within noise) and RSS at
the last turn within 30 MB of turn 10.

Run: ``.venv/bin/python bench/terminal_turns.py [--turns 300] [--busy]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    READY_MARK,
    ROOT,
    Terminal,
    busy_context,
    console_script,
    cpu_seconds,
    hermetic_env,
    median,
    venv_python,
    verdict,
    write_app_config,
)
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

COLS, ROWS = 120, 36
MB = 1024 * 1024
TOOL_EVERY = 5
RSS_GOAL_MB = 30
FLAT_GOAL = 1.5
"""The turns near the last may take at most this many times the turns near 10 (noise allowance)."""


def answer(n: int) -> str:
    """Turn ``n``'s answer: about 25 lines of Markdown, the last line unique to the turn."""
    return (
        f"## Answer {n}\n\n"
        f"Here is what I found for question {n}. The session keeps growing, and every answer adds "
        "a heading, a paragraph, a list and a code block to the conversation, as a real model's "
        "answers do.\n\n"
        f"- the first point about item {n}\n- the second point, with `inline code`\n"
        "- the third point, which is a little longer than the others so that it wraps on a narrow "
        "terminal and makes the layout do some work\n\n"
        f"```python\ndef answer_{n}(value: int) -> int:\n    total = 0\n"
        "    for step in range(value):\n        total += step * 2\n    return total\n```\n\n"
        f"That is all for now: end of answer {n}."
    )


def end_mark(n: int) -> str:
    return f"end of answer {n}."


def script(turns: int) -> list[Reply]:
    replies: list[Reply] = []
    for n in range(1, turns + 1):
        if n % TOOL_EVERY == 0:
            replies.append(Reply.tools([("bash", {"command": f"echo tool-output-{n}"})]))
        replies.append(Reply.text(answer(n)))
    return replies


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_turns(
    term: Terminal, turns: int, *, prompt_mark: str | None, rss_at: set[int], cpu: list[float] | None = None
) -> tuple[list[float], dict[int, float]]:
    """``cpu``: filled with the app's CPU time per turn (from enter to the next turn's enter)."""
    times: list[float] = []
    rss: dict[int, float] = {}
    last_cpu = cpu_seconds(term.pid) if cpu is not None else 0.0
    for n in range(1, turns + 1):
        prompt = f"question q{n}z"
        term.send(prompt)
        if term.wait_for(lambda screen, p=prompt: p in screen.text, 60) is None:
            raise SystemExit(f"turn {n}: the prompt never showed:\n{term.text()}")
        sent = term.send(b"\r")
        shown = term.wait_for(lambda screen, e=end_mark(n): e in screen.text, 120)
        if shown is None:
            raise SystemExit(f"turn {n}: the answer never showed:\n{term.text()}")
        times.append(shown - sent)
        if prompt_mark is not None:  # the prompt is free again (the turn has ended)
            term.wait_for(lambda screen: prompt_mark in screen.text, 60)
        time.sleep(0.3)
        if n in rss_at:
            time.sleep(1.0)  # after the turn's collection
            rss[n] = rss_mb(term.pid)
        if cpu is not None:
            now = cpu_seconds(term.pid)
            cpu.append(now - last_cpu)
            last_cpu = now
        if n % 25 == 0:
            print(f"  turn {n}: {times[-1] * 1000:.0f} ms", flush=True)
    return times, rss


def around(times: list[float], turn: int) -> float:
    """Median of the ten turns up to ``turn`` (1-based)."""
    turn = min(turn, len(times))
    return median(times[max(0, turn - 10) : turn])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--floor-turns", type=int, default=20)
    parser.add_argument("--busy", action="store_true", help="run two CPU-spinning processes alongside")
    args = parser.parse_args()
    turns = args.turns
    with tempfile.TemporaryDirectory(prefix="turnstone-turns-") as tmp_name:
        tmp = Path(tmp_name)
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        env = hermetic_env(home)
        answers = tmp / "answers.json"
        answers.write_text(json.dumps([answer(n) for n in range(1, args.floor_turns + 1)]))
        with ModelServerProcess(script(turns), tmp / "server") as server, busy_context(args.busy):
            floor_term = Terminal(
                [venv_python(), str(ROOT / "bench" / "floor_echo.py"), str(answers)],
                cols=COLS,
                rows=ROWS,
                env=env,
                cwd=work,
            )
            with floor_term:
                floor_term.wait_for(lambda screen: "ready" in screen.text, 60)
                floor, _ = run_turns(floor_term, args.floor_turns, prompt_mark=None, rss_at=set())
            config = write_app_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
            app = Terminal(
                [console_script(), "--config", str(config), "--skip-permissions"],
                cols=COLS,
                rows=ROWS,
                env=env,
                cwd=work,
            )
            with app:
                if app.wait_for(lambda screen: READY_MARK in screen.text, 120) is None:
                    raise SystemExit(f"the app did not get ready:\n{app.text()}")
                time.sleep(2.0)
                cpu: list[float] = []
                times, rss = run_turns(app, turns, prompt_mark=None, rss_at={10, turns}, cpu=cpu)
    machine = "busy" if args.busy else "quiet"
    print()
    print(f"each new turn (enter -> last line of the answer on screen), {turns} turns, {machine} machine")
    print(f"  floor (raw terminal write)   median {median(floor) * 1000:7.1f} ms")
    marks = [m for m in (10, 100, 300) if m <= turns]
    if turns not in marks:
        marks.append(turns)
    for mark in marks:
        value = around(times, mark)
        print(
            f"  near turn {mark:<4}             median {value * 1000:7.1f} ms  ({value / median(floor):.1f}x floor)"
        )
    for mark in marks:
        print(f"  CPU per turn near turn {mark:<4}  median {around(cpu, mark) * 1000:7.1f} ms")
    early, late = cpu[10:30], cpu[max(30, turns - 50) :]
    if early and late:
        print(
            f"  CPU per turn, mean of turns 11-{10 + len(early)} {statistics.mean(early) * 1000:.1f} ms, "
            f"of the last {len(late)} {statistics.mean(late) * 1000:.1f} ms "
            f"({statistics.mean(late) / statistics.mean(early):.2f}x; means count every turn's collections, "
            "the medians above leave out the occasional thorough one)"
        )
    first, last = around(times, 10), around(times, turns)
    print(
        f"  RSS after turn 10 {rss.get(10, float('nan')):.0f} MB, after turn {turns} {rss.get(turns, float('nan')):.0f} MB"
    )
    cpu_first, cpu_last = around(cpu, 10), around(cpu, turns)
    print(
        f"  CPU per turn, turn {turns} / turn 10 = {cpu_last / cpu_first:.2f}, goal flat (<= {FLAT_GOAL}): "
        f"{verdict(cpu_last / cpu_first <= FLAT_GOAL)}"
    )
    growth = rss.get(turns, 0.0) - rss.get(10, 0.0)
    print(
        f"  turn {turns} / turn 10 = {last / first:.2f}, goal flat (<= {FLAT_GOAL}): {verdict(last / first <= FLAT_GOAL)}"
    )
    print(f"  RSS growth {growth:.0f} MB, goal <= {RSS_GOAL_MB} MB: {verdict(growth <= RSS_GOAL_MB)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
