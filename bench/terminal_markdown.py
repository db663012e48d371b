"""Bench: the last of 20k Markdown tokens streamed at 2k tokens/s -> the final line on screen, in a
real terminal (issue 13, row 3).

The scripted model server (its own process) streams a ~20k-token Markdown answer (headings,
paragraphs, lists, code blocks, quotes; ``bench/app_stream.py``'s document) in 4-character deltas,
2000 a second, and notes when it wrote the last one (``time.monotonic()``, one clock for every
process of the machine). Each program runs in a pseudo-terminal read through pyte
(``bench/terminal.py``); measured per run:

- **settle**: from the server writing the last token until the answer's final line is on the
  screen;
- **stall**: the longest time in which the terminal received nothing while the answer streamed
  (from its first token on screen until it settled): a frozen screen.

Each program first streams a short answer that is not measured (its first run compiles modules).
Programs, in rotating order each round: the raw floor (deltas written straight to the terminal),
a minimal Textual app streaming into one ``Markdown`` widget (``bench/floor_markdown.py``: what
Textual itself costs), and ``turnstone-tui``.

Goals: settled < 100 ms after the last token; no stall over 50 ms.

``--compare PATH`` adds another ``turnstone-tui`` console script (e.g. a fresh install of the
commit before a change) to the rotation: an A/B measured in the same run, under the same load.

Run: ``.venv/bin/python bench/terminal_markdown.py [--runs 3] [--tokens 20000] [--busy] [--compare PATH]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.app_stream import CHARS_PER_TOKEN, TOKEN_DELAY, markdown_document  # noqa: E402
from bench.terminal import (  # noqa: E402
    ROOT,
    Terminal,
    busy_context,
    floor_terminal,
    longest_gap,
    median,
    running_app,
    send_prompt,
    venv_python,
    verdict,
)
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

SETTLE_GOAL = 0.100
STALL_GOAL = 0.050
FINAL_LINE = "That is the whole build, end of answer 7Q."
# Every section's heading: an app that falls behind at the start (the first answer loads the Markdown
# machinery) may show its first frame of the answer with section 1 already scrolled away.
FIRST_WORDS = "what the build does"
TIMEOUT = 40.0  # seconds after the first words (the stream itself takes 10 s)
WARM_UP_TOKENS = 2_000


def document(tokens: int) -> str:
    return markdown_document(tokens).rstrip().removesuffix("Done.").rstrip() + f"\n\n{FINAL_LINE}\n"


def reply(text: str) -> Reply:
    return Reply.text(text, chunk_size=CHARS_PER_TOKEN, delay=TOKEN_DELAY)


def watch_stream(term: Terminal, server: ModelServerProcess, timeout: float) -> dict[str, float]:
    """Once the prompt is sent: wait for the first words and the final line on screen (a program
    that has not shown it ``timeout`` s after the first words counts as settled at the timeout)."""
    times = term.record_output_times()
    first = term.wait_for(lambda screen: FIRST_WORDS in screen.text, 60)
    if first is None:
        raise SystemExit(f"the answer never started:\n{term.text()}")
    shown = term.wait_for(lambda screen: FINAL_LINE in screen.text, timeout)
    if shown is None:
        shown = time.monotonic()
        print(f"  (the final line was not on screen {timeout:.0f} s after the first words)", flush=True)
    deadline = time.monotonic() + 10
    while not server.streams() and time.monotonic() < deadline:
        time.sleep(0.01)
    streams = server.streams()
    if not streams:
        raise SystemExit("the server recorded no finished stream")
    last_token = streams[-1]["ended"]
    return {
        "settle": shown - last_token,
        "stall": longest_gap(times, first, shown),
        "stream_seconds": last_token - streams[-1]["started"],
    }


def run_floor(mode: str, tmp: Path, text: str) -> dict[str, float]:
    with ModelServerProcess([reply(text)], tmp / "server") as server:
        argv = [venv_python(), str(ROOT / "bench" / "floor_markdown.py"), mode, server.openai_base_url]
        with floor_terminal(argv, tmp) as term:
            return watch_stream(term, server, TIMEOUT)


def run_app(tmp: Path, text: str, app_script: str | None = None) -> dict[str, float]:
    with running_app(tmp, [reply(text)], app_script=app_script) as (term, server):
        send_prompt(term, "explain the build")
        return watch_stream(term, server, TIMEOUT)  # type: ignore[arg-type]


COMPARED = "turnstone-tui (--compare)"
PROGRAMS = {
    "raw terminal (floor)": lambda tmp, text: run_floor("raw", tmp, text),
    "Textual Markdown widget alone": lambda tmp, text: run_floor("textual", tmp, text),
    "turnstone-tui": run_app,
}


def measure(
    runs: int, tokens: int, busy: bool, names: list[str] | None = None
) -> dict[str, list[dict[str, float]]]:
    text = document(tokens)
    names = names or list(PROGRAMS)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="turnstone-md-") as tmp_name, busy_context(busy):
        # Each program streams a short answer first, not measured: a fresh install (or a tree
        # just checked out) compiles the modules the stream imports on its first run, and did
        # so in the middle of the first measured stream (a second or more of stall).
        for name in names:
            PROGRAMS[name](Path(tmp_name) / f"warm-{names.index(name)}", document(WARM_UP_TOKENS))
        for run in range(runs):
            for offset in range(len(names)):
                name = names[(run + offset) % len(names)]
                figures = PROGRAMS[name](Path(tmp_name) / f"{run}-{offset}", text)
                results[name].append(figures)
                print(
                    f"run {run + 1}/{runs} {name:30} settled {figures['settle'] * 1000:7.1f} ms after the "
                    f"last token, longest stall {figures['stall'] * 1000:6.1f} ms "
                    f"(stream {figures['stream_seconds']:.1f} s)",
                    flush=True,
                )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--busy", action="store_true", help="run two CPU-spinning processes alongside")
    parser.add_argument(
        "--compare",
        metavar="PATH",
        help="another turnstone-tui console script to measure in the same rotation (an A/B)",
    )
    parser.add_argument(
        "--no-textual-floor",
        action="store_true",
        help="skip the Textual Markdown floor (it takes 40 s a run)",
    )
    args = parser.parse_args()
    if args.compare:
        PROGRAMS[COMPARED] = lambda tmp, text: run_app(tmp, text, args.compare)
    names = [name for name in PROGRAMS if not (args.no_textual_floor and name.startswith("Textual"))]
    results = measure(args.runs, args.tokens, args.busy, names)
    print()
    print(
        f"last of {args.tokens} Markdown tokens at 2k tok/s -> final line on screen, median of {args.runs}, "
        f"{'with two CPU-spinning processes' if args.busy else 'no added load'}, "
        f"1-minute load average {os.getloadavg()[0]:.1f} at the end"
    )
    floor_runs = results["raw terminal (floor)"]
    floor_settle = median([r["settle"] for r in floor_runs])
    floor_stall = median([r["stall"] for r in floor_runs])
    for name, runs in results.items():
        settle = median([r["settle"] for r in runs])
        stall = median([r["stall"] for r in runs])
        # The raw floor settles within a millisecond or two (or "before" the server's clock says
        # it wrote the last token): a ratio to it says nothing, the difference does.
        print(
            f"  {name:32} settled {settle * 1000:7.1f} ms (max {max(r['settle'] for r in runs) * 1000:7.1f}; "
            f"{(settle - floor_settle) * 1000:+7.1f} ms on the raw floor), stall {stall * 1000:6.1f} ms "
            f"(max {max(r['stall'] for r in runs) * 1000:6.1f}; {stall / floor_stall if floor_stall > 0 else float('nan'):5.1f}x "
            "the raw floor's)"
        )
    app = results["turnstone-tui"]
    settle = median([r["settle"] for r in app])
    stall = median([r["stall"] for r in app])
    print(f"  settle goal < {SETTLE_GOAL * 1000:.0f} ms: {verdict(settle < SETTLE_GOAL)}")
    print(f"  stall goal < {STALL_GOAL * 1000:.0f} ms: {verdict(stall < STALL_GOAL)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
