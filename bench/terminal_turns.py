"""Bench: the cost of each new turn in a growing session (issue 13, row 4).

The real console script in a pseudo-terminal read through pyte (``bench/terminal.py``) against the
scripted model server, driven through ``--turns`` turns (default 300): each turn types a prompt,
presses enter and waits until the last line of the model's answer (a Markdown answer with a
heading, a paragraph, a list and a code block; every fifth turn runs a bash call first) is on the
screen. It prints the time per turn (enter -> last line on screen) around turns 10, 100 and 300
(median of the ten turns up to each), the app's CPU time per turn around the same turns (user +
system, read in nanoseconds, from enter to the next turn's enter: what the other processes on a shared machine inflate
far less than the wall time, whose ratio moves with the load over a run of several minutes) and
the app's RSS after turn 10 and after the last turn. The CPU time is also given as the mean of
turns 11-30 and of the last 50 turns: a mean counts the turns that ran a long collection, which the
medians leave out.

The turns near 10 that the last turns are held against come from a fresh session run beside the
long one (``--fresh-turns``, default 10): a second app, with its own scripted server, home and
database, whose turns 1-10 each run right after one of the long session's last ten (turn 291,
fresh turn 1, turn 292, fresh turn 2, ...), so both sets of turns see the same load. The long
session's own turns near 10 ran minutes earlier, and on a shared machine the load moves more in
those minutes than the app's cost per turn does (its ratio is still printed). The same answers
are given in the same order, so the two sets hold the same kinds of turns (bash calls at 5 and 10,
295 and 300).

The floor, in the same run: the same answers written to a raw terminal by a tiny program that
reads each prompt line (``bench/floor_echo.py``): what the terminal and the harness cost.

Goals: flat (the last turns take at most 1.5x the first turns of a fresh session, in wall and in
CPU time) and RSS at the last turn within 30 MB of turn 10.

Run: ``.venv/bin/python bench/terminal_turns.py [--turns 300] [--fresh-turns 10] [--busy [N]]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    ROOT,
    Terminal,
    add_busy_argument,
    busy_context,
    cpu_seconds,
    hermetic_env,
    machine_label,
    median,
    ready_app,
    venv_python,
    verdict,
    write_app_config,
)
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

COLS, ROWS = 120, 36
MB = 1024 * 1024
TOOL_EVERY = 5
RSS_GOAL_MB = 30
FRESH_TURNS = 10
"""A fresh session's turns 1-10 run interleaved with the long session's last ten (see ``main``)."""
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


class Turns:
    """Drives one app (or the floor) turn by turn, noting each turn's time, CPU time and RSS."""

    def __init__(self, term: Terminal, *, prompt_mark: str | None = None, rss_at: Iterable[int] = ()) -> None:
        self.term = term
        self.prompt_mark = prompt_mark
        self.rss_at = set(rss_at)
        self.times: list[float] = []
        self.cpu: list[float] = []
        """The app's CPU time per turn, from enter to the next turn's enter."""
        self.rss: dict[int, float] = {}
        self._last_cpu = cpu_seconds(term.pid)

    def restart_cpu(self) -> None:
        """The next turn's CPU time counts from now."""
        self._last_cpu = cpu_seconds(self.term.pid)

    def turn(self) -> None:
        term = self.term
        n = len(self.times) + 1
        prompt = f"question q{n}z"
        term.send(prompt)
        if term.wait_for(lambda screen, p=prompt: p in screen.text, 60) is None:
            raise SystemExit(f"turn {n}: the prompt never showed:\n{term.text()}")
        sent = term.send(b"\r")
        shown = term.wait_for(lambda screen, e=end_mark(n): e in screen.text, 120)
        if shown is None:
            raise SystemExit(f"turn {n}: the answer never showed:\n{term.text()}")
        self.times.append(shown - sent)
        if self.prompt_mark is not None:  # the prompt is free again (the turn has ended)
            term.wait_for(lambda screen: self.prompt_mark in screen.text, 60)
        time.sleep(0.3)
        if n in self.rss_at:
            time.sleep(1.0)  # after the turn's collection
            self.rss[n] = rss_mb(term.pid)
        now = cpu_seconds(term.pid)
        self.cpu.append(now - self._last_cpu)
        self._last_cpu = now


def run_turns(turns: Turns, count: int, *, report_every: int = 25) -> None:
    for _ in range(count):
        turns.turn()
        n = len(turns.times)
        if report_every and n % report_every == 0:
            print(f"  turn {n}: {turns.times[-1] * 1000:.0f} ms", flush=True)


@contextlib.contextmanager
def start_app(server: ModelServerProcess, tmp: Path, env: dict[str, str], work: Path) -> Iterator[Terminal]:
    """The app in a terminal, talking to ``server``, ready for the first prompt."""
    tmp.mkdir(parents=True, exist_ok=True)
    config = write_app_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
    with ready_app(config, env, work, args=["--skip-permissions"], cols=COLS, rows=ROWS, settle=2.0) as app:
        yield app


def around(times: list[float], turn: int) -> float:
    """Median of the ten turns up to ``turn`` (1-based)."""
    turn = min(turn, len(times))
    return median(times[max(0, turn - 10) : turn])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--floor-turns", type=int, default=20)
    parser.add_argument(
        "--fresh-turns",
        type=int,
        default=FRESH_TURNS,
        help="a fresh session's first turns, each run right after one of the last turns (0: none)",
    )
    add_busy_argument(parser)
    args = parser.parse_args()
    turns = args.turns
    fresh = min(max(args.fresh_turns, 0), turns)
    with tempfile.TemporaryDirectory(prefix="turnstone-turns-") as tmp_name, contextlib.ExitStack() as stack:
        tmp = Path(tmp_name)
        dirs = {name: tmp / name for name in ("home", "work", "fresh-home", "fresh-work")}
        for path in dirs.values():
            path.mkdir()
        env = hermetic_env(dirs["home"])
        answers = tmp / "answers.json"
        answers.write_text(json.dumps([answer(n) for n in range(1, args.floor_turns + 1)]))
        server = stack.enter_context(ModelServerProcess(script(turns), tmp / "server"))
        fresh_server = stack.enter_context(ModelServerProcess(script(max(fresh, 1)), tmp / "fresh-server"))
        stack.enter_context(busy_context(args.busy))
        floor_term = Terminal(
            [venv_python(), str(ROOT / "bench" / "floor_echo.py"), str(answers)],
            cols=COLS,
            rows=ROWS,
            env=env,
            cwd=dirs["work"],
        )
        with floor_term:
            floor_term.wait_for(lambda screen: "ready" in screen.text, 60)
            floor_turns = Turns(floor_term)
            run_turns(floor_turns, args.floor_turns, report_every=0)
        floor = floor_turns.times
        app = stack.enter_context(start_app(server, tmp / "app", env, dirs["work"]))
        session = Turns(app, rss_at={10, turns})
        run_turns(session, turns - fresh)
        young: Turns | None = None
        if fresh:
            # A fresh session's first turns, each right after one of the long session's last: the
            # two are compared under the same load (the machine's load moves a lot in the minutes
            # between a session's turn 10 and its turn 300).
            young_app = stack.enter_context(
                start_app(
                    fresh_server, tmp / "fresh-app", hermetic_env(dirs["fresh-home"]), dirs["fresh-work"]
                )
            )
            young = Turns(young_app)
            session.restart_cpu()  # (its idle time while the fresh app started is no turn's)
            for _ in range(fresh):
                run_turns(session, 1)
                young.turn()
    times, cpu, rss = session.times, session.cpu, session.rss
    machine = machine_label(args.busy)
    print()
    print(f"each new turn (enter -> last line of the answer on screen), {turns} turns, {machine}")
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
    print(
        f"  RSS after turn 10 {rss.get(10, float('nan')):.0f} MB, after turn {turns} {rss.get(turns, float('nan')):.0f} MB"
    )
    # The verdicts: the last turns against the first turns of a fresh session run beside them
    # (the same load), or, without one, against this session's own turns near 10 (minutes earlier).
    same_time = around(times, turns) / around(times, 10)
    same_cpu = around(cpu, turns) / around(cpu, 10)
    if young is not None and fresh >= 10:
        first = range(turns - fresh, turns - fresh + 10)  # the long session's turns run beside the fresh 1-10
        span = f"{first.start + 1}-{first.stop}"
        late_time, late_cpu = median([times[i] for i in first]), median([cpu[i] for i in first])
        base_time, base_cpu = median(young.times[:10]), median(young.cpu[:10])
        print(
            f"  a fresh session's turns 1-10, each run right after one of turns {span} of this one (same load): "
            f"median {base_time * 1000:.1f} ms, CPU {base_cpu * 1000:.1f} ms; turns {span}: "
            f"median {late_time * 1000:.1f} ms, CPU {late_cpu * 1000:.1f} ms"
        )
        ratio_time, ratio_cpu = late_time / base_time, late_cpu / base_cpu
        against = f"turns {span} / a fresh session's turns 1-10 beside them"
        print(
            f"  (this session's own turn {turns} / turn 10, measured minutes apart: time {same_time:.2f}, CPU {same_cpu:.2f})"
        )
    else:
        ratio_time, ratio_cpu = same_time, same_cpu
        against = f"turn {turns} / turn 10"
    print(
        f"  CPU per turn, {against} = {ratio_cpu:.2f}, goal flat (<= {FLAT_GOAL}): {verdict(ratio_cpu <= FLAT_GOAL)}"
    )
    growth = rss.get(turns, 0.0) - rss.get(10, 0.0)
    print(f"  {against} = {ratio_time:.2f}, goal flat (<= {FLAT_GOAL}): {verdict(ratio_time <= FLAT_GOAL)}")
    print(f"  RSS growth {growth:.0f} MB, goal <= {RSS_GOAL_MB} MB: {verdict(growth <= RSS_GOAL_MB)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
