"""Bench: keys typed while answers stream and end, through a growing session (issue 13, rows 2 and 4).

A user often types the next message while the answer still streams and goes on typing as it ends.
The real console script in a pseudo-terminal read through pyte (``bench/terminal.py``) against the
scripted model server, driven through ``--turns`` turns (default 60): each turn sends a prompt;
while its answer streams (about a second: bench/terminal_turns.py's Markdown answers, in small
chunks) and for ``--after`` seconds (default 1.5) after its last line is on the screen, a letter
is typed every ``--gap`` seconds (default 0.1: a quick typist), each timed from its write to the
terminal until the screen shows it; then what was typed is erased and the next prompt sent. The
turn's end is where the app tidies up after a turn (its full garbage collection: a thorough one
every few dozen turns, which walks everything alive), so that is where a key can wait longest.

Reports the keys' latency p50 / p95 / max over the whole run, how many waited over 50 and over
100 ms, and the same for the keys typed within the ``--after`` window after each answer's end.
``--compare PATH`` (repeatable) runs other turnstone-tui console scripts in the same run, each
with its own scripted server and home, their turns interleaved (turn 1 of each, turn 2 of each,
...), so all see the same load.

Goal: p95 < 50 ms (keys while output streams, as row 2's flood).

Run: ``.venv/bin/python bench/terminal_type_ahead.py [--turns 60] [--gap 0.1] [--after 1.5] [--busy [N]] [--compare PATH]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    Terminal,
    add_busy_argument,
    add_compare_argument,
    busy_context,
    console_script,
    hermetic_env,
    machine_label,
    percentile,
    ready_app,
    summary_ms,
    verdict,
    write_app_config,
)
from bench.terminal_turns import answer, end_mark  # noqa: E402
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

COLS, ROWS = 120, 36
PREFIX = "ZQ"  # typed first, unmeasured: makes what is typed unique on the screen
LINE = 20  # letters before the line is erased and typing starts again
ALPHABET = "qwertyuiopasdfghjklzxcvbnm"
GOAL = 0.050


def script(turns: int) -> list[Reply]:
    return [Reply.text(answer(n), chunk_size=8, delay=0.01) for n in range(1, turns + 1)]


class Typist:
    """Types into one app turn after turn, noting each key's latency (and which came after an
    answer's end)."""

    def __init__(self, name: str, term: Terminal, gap: float, after: float) -> None:
        self.name = name
        self.term = term
        self.gap = gap
        self.after = after
        self.keys: list[float] = []
        self.after_end: list[float] = []
        self.turns = 0
        self._typed = ""

    def _type_one(self, key: int) -> float:
        term = self.term
        if not self._typed or len(self._typed) >= len(PREFIX) + LINE:
            self._erase()
            self._typed = PREFIX
            term.send(PREFIX)
            term.wait_for(lambda screen: PREFIX in screen.text, 30)
        self._typed += ALPHABET[(key * 7) % len(ALPHABET)]
        sent = term.send(self._typed[-1])
        shown = term.wait_for(lambda screen, text=self._typed: text in screen.text, 30)
        if shown is None:
            before = term.text()
            # The raw traffic (keys in, output out) and the same output parsed again in one piece:
            # if the replay shows the key, pyte parsed the live chunks wrong; if not, the app wrote it.
            log = term.dump_raw_log(Path(tempfile.gettempdir()) / f"type-ahead-raw-{os.getpid()}.log")
            replay = term.replay_raw_log()
            replayed = (
                "not replayed (the log dropped its oldest output)"
                if replay is None
                else f"the output replayed in one piece {'shows' if self._typed in chr(10).join(replay) else 'does not show'} "
                f"it: {[line.rstrip() for line in replay if PREFIX in line]}"
            )
            print(f"{self.name}: raw log in {log}; {replayed}", flush=True)
            # A full redraw tells a frame the terminal never got (the text shows now) from a key
            # the app lost or applied out of order (it does not: the raw log shows which).
            term.resize(term.cols - 2, term.rows)
            time.sleep(1.0)
            term.resize(term.cols + 2, term.rows)
            redrawn = term.wait_for(lambda screen, text=self._typed: text in screen.text, 5)
            raise SystemExit(
                f"{self.name}: a typed key never showed ({self._typed!r}); after a full redraw "
                f"{'it shows' if redrawn else 'it still does not'}:\n{before}\n--- redrawn:\n{term.text()}"
            )
        return shown - sent

    def _erase(self) -> None:
        if self._typed:
            old = self._typed
            self.term.send(b"\x7f" * len(old))
            self.term.wait_for(lambda screen: old not in screen.text, 30)
            self._typed = ""

    def turn(self) -> None:
        self.turns += 1
        n, term = self.turns, self.term
        prompt = f"question q{n}z"
        term.send(prompt)
        if term.wait_for(lambda screen: prompt in screen.text, 60) is None:
            raise SystemExit(f"turn {n}: the prompt never showed:\n{term.text()}")
        term.send(b"\r")
        ended_at: float | None = None
        key = 0
        while ended_at is None or time.monotonic() < ended_at + self.after:
            next_key = time.monotonic() + self.gap
            latency = self._type_one(key)
            key += 1
            self.keys.append(latency)
            if ended_at is not None:
                self.after_end.append(latency)
            elif end_mark(n) in term.text():
                ended_at = time.monotonic()
            elif key > 600:
                raise SystemExit(f"turn {n}: the answer never ended:\n{term.text()}")
            time.sleep(max(0.0, next_key - time.monotonic()))
        self._erase()


def counts(values: list[float]) -> str:
    over50 = sum(v > 0.050 for v in values)
    over100 = sum(v > 0.100 for v in values)
    return f"{over50} over 50 ms, {over100} over 100 ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between keys")
    parser.add_argument("--after", type=float, default=1.5, help="seconds typed on after each answer's end")
    add_compare_argument(parser)
    add_busy_argument(parser)
    args = parser.parse_args()
    programs = [("turnstone-tui", console_script())] + [
        (f"turnstone-tui (--compare {i})" if len(args.compare) > 1 else "turnstone-tui (--compare)", path)
        for i, path in enumerate(args.compare, 1)
    ]
    typists: dict[str, Typist] = {}
    with (
        tempfile.TemporaryDirectory(prefix="turnstone-type-ahead-") as tmp_name,
        contextlib.ExitStack() as stack,
    ):
        tmp = Path(tmp_name)
        for i, (name, path) in enumerate(programs):
            base = tmp / f"p{i}"
            home, work = base / "home", base / "work"
            home.mkdir(parents=True)
            work.mkdir()
            server = stack.enter_context(ModelServerProcess(script(args.turns), base / "server"))
            config = write_app_config(base / "config.toml", server.openai_base_url, base / "bench.db")
            term = stack.enter_context(
                ready_app(config, hermetic_env(home), work, cols=COLS, rows=ROWS, app_script=path, settle=2.0)
            )
            typists[name] = Typist(name, term, args.gap, args.after)
        stack.enter_context(busy_context(args.busy))
        started = time.monotonic()
        for turn in range(1, args.turns + 1):
            order = list(typists.values())
            shift = turn % len(order)  # who goes first rotates
            for typist in order[shift:] + order[:shift]:
                typist.turn()
            if turn % 10 == 0:
                print(f"  turn {turn} ({time.monotonic() - started:.0f} s)", flush=True)
    print()
    print(
        f"keys typed every {args.gap * 1000:.0f} ms while each answer streams and {args.after:g} s after its "
        f"end, {args.turns} turns, {machine_label(args.busy)}"
    )
    for name, typist in typists.items():
        print(
            f"  {name:28} all keys ({len(typist.keys)})      {summary_ms(typist.keys)}; {counts(typist.keys)}"
        )
        print(
            f"  {'':28} after the end ({len(typist.after_end)})  {summary_ms(typist.after_end)}; "
            f"{counts(typist.after_end)}"
        )
    main_keys = typists["turnstone-tui"].keys
    p95 = percentile(main_keys, 95)
    print(f"  turnstone-tui p95 {p95 * 1000:.1f} ms, goal < {GOAL * 1000:.0f} ms: {verdict(p95 < GOAL)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
