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
  (from its first token on screen until it settled): a frozen screen;
- **waiting**: the same, counted only from the moment the server had written text the screen had
  not yet been sent (a gap that began while the server itself paused is shortened by that pause:
  the server is another process on the same busy machine, and the program cannot show what it
  has not been sent);
- **less its run-queue wait**: the stall again, each gap less the time the program's main thread
  spent in it waiting for a CPU (``/proc/PID/task/PID/schedstat``, read as each chunk arrives):
  an estimate of the figure on a quiet machine, on a shared one (what is left is the program's
  own CPU time and its waits for timers and input; a slow server still counts);
- **server**: the server's own longest pause between two events (paced every 0.5 ms): what the
  machine's load did to the source, for every program alike;
- **long gaps**: how many gaps in the terminal's output were over the 50 ms goal, and the share of
  the time spent in them (one figure, the longest, says little on a shared machine: the raw
  floor's own longest is often 40-300 ms);
- **CPU**: the program's user + system CPU time from its first words on screen to its last, per
  second of that time: how much of a core keeping up takes (what load inflates least; a program
  that needs most of a core stalls as soon as the machine is shared).

Each program first streams a short answer that is not measured (its first run compiles modules).
Programs, in rotating order each round: the raw floor (deltas written straight to the terminal),
a minimal Textual app writing each delta to one ``Log`` widget (plain text, Textual's cheapest
growing text: what Textual costs to keep up at all), a minimal Textual app streaming into one
``Markdown`` widget (``bench/floor_markdown.py``: what Textual's own Markdown costs), and
``turnstone-tui``.

Goals: settled < 100 ms after the last token; no stall over 50 ms. The stall verdict is given for
the stall as the terminal saw it and for the waiting figure; the raw floor's figures of the same
run say how much of either the machine alone accounts for.

``--compare PATH`` (repeatable) adds another ``turnstone-tui`` console script (e.g. a fresh install of the
commit before a change) to the rotation: an A/B measured in the same run, under the same load.

``--trace`` loads a tracer into every ``turnstone-tui`` measured (``bench/gap_trace.py``) and prints,
after each run, what the app's event loop was doing in the five longest gaps: its steps over 4 ms
(frames, Markdown appends, the engine reading the model's stream, widgets' messages), garbage
collections and the stacks most sampled. The tracer slows the app: its figures are not comparable.

Run: ``.venv/bin/python bench/terminal_markdown.py [--runs 3] [--tokens 20000] [--busy [N]] [--compare PATH] [--trace]``.
"""

from __future__ import annotations

import argparse
import bisect
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import gap_trace  # noqa: E402
from bench.app_stream import CHARS_PER_TOKEN, TOKEN_DELAY, markdown_document  # noqa: E402
from bench.terminal import (  # noqa: E402
    ROOT,
    Terminal,
    add_busy_argument,
    add_compare_argument,
    busy_context,
    cpu_seconds,
    floor_terminal,
    longest_gap,
    median,
    running_app,
    send_prompt,
    spinners_label,
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
TRACE_DIR: Path | None = None  # set by --trace
LAST_STREAM: dict[str, object] = {}  # the last watched stream's pid and silent stretches (for --trace)


def document(tokens: int) -> str:
    return markdown_document(tokens).rstrip().removesuffix("Done.").rstrip() + f"\n\n{FINAL_LINE}\n"


def reply(text: str) -> Reply:
    return Reply.text(text, chunk_size=CHARS_PER_TOKEN, delay=TOKEN_DELAY)


def gaps(times: list[float], start: float, end: float) -> list[tuple[float, float]]:
    """Each stretch between ``start`` and ``end`` in which no output arrived, as (from, to)."""
    points = [start, *(t for t in times if start <= t <= end), end]
    return list(zip(points, points[1:], strict=False))


def waiting_gap(stretches: list[tuple[float, float]], written: list[float]) -> float:
    """The longest part of a silent stretch after the server had written something new: for a
    stretch (a, b), from the first event written after a until b (``written`` is sorted)."""
    longest = 0.0
    for a, b in stretches:
        index = bisect.bisect_right(written, a)
        if index < len(written) and written[index] < b:
            longest = max(longest, b - written[index])
    return longest


def unqueued_stall(times: list[float], waits: list[float | None], start: float, end: float) -> float:
    """The longest gap between two chunks of output from ``start`` to ``end``, less the time the
    program's main thread spent in that gap waiting for a CPU (``waits``: its run-queue wait so
    far at each chunk's arrival): what the gap would have been had a core been free whenever the
    program wanted one, an estimate of the quiet machine's figure on a shared one."""
    points = [(t, w) for t, w in zip(times, waits, strict=False) if start <= t <= end and w is not None]
    return max(
        ((b - a) - (wb - wa) for (a, wa), (b, wb) in zip(points, points[1:], strict=False)), default=0.0
    )


def watch_stream(term: Terminal, server: ModelServerProcess, timeout: float) -> dict[str, float]:
    """Once the prompt is sent: wait for the first words and the final line on screen (a program
    that has not shown it ``timeout`` s after the first words counts as settled at the timeout)."""
    times = term.record_output_times()
    first = term.wait_for(lambda screen: FIRST_WORDS in screen.text, 60)
    if first is None:
        raise SystemExit(f"the answer never started:\n{term.text()}")
    cpu_first = cpu_seconds(term.pid)
    shown = term.wait_for(lambda screen: FINAL_LINE in screen.text, timeout)
    cpu_shown = cpu_seconds(term.pid)
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
    written = list(streams[-1]["written"])
    stretches = gaps(list(times), first, shown)
    waits = list(term.run_queue_waits or [])
    LAST_STREAM.update(pid=term.pid, stretches=stretches)
    return {
        "settle": shown - last_token,
        "stall": longest_gap(times, first, shown),
        "unqueued": unqueued_stall(list(times), waits, first, shown),
        "waiting": waiting_gap(stretches, written),
        "server": max((b - a for a, b in zip(written, written[1:], strict=False)), default=0.0),
        "long_gaps": float(sum(1 for a, b in stretches if b - a > STALL_GOAL)),
        # Of the time from the first words to the last, the share spent in gaps over the goal:
        # unlike their count, it only grows as the screen freezes more (fewer, longer gaps count).
        "frozen": sum(b - a for a, b in stretches if b - a > STALL_GOAL) / max(shown - first, 1e-9),
        "cpu": (cpu_shown - cpu_first) / max(shown - first, 1e-9),
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
TEXTUAL_LOG_FLOOR = "Textual Log widget alone"
TEXTUAL_MARKDOWN_FLOOR = "Textual Markdown widget alone"
PROGRAMS = {
    "raw terminal (floor)": lambda tmp, text: run_floor("raw", tmp, text),
    TEXTUAL_LOG_FLOOR: lambda tmp, text: run_floor("textual-log", tmp, text),
    TEXTUAL_MARKDOWN_FLOOR: lambda tmp, text: run_floor("textual", tmp, text),
    "turnstone-tui": run_app,
}


def measure(
    runs: int, tokens: int, busy: int, names: list[str] | None = None
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
                    f"last token, longest stall {figures['stall'] * 1000:6.1f} ms (waiting "
                    f"{figures['waiting'] * 1000:6.1f} ms; less its run-queue wait {figures['unqueued'] * 1000:6.1f} ms; "
                    f"server's own pause {figures['server'] * 1000:5.1f} ms), "
                    f"{figures['long_gaps']:3.0f} gaps over {STALL_GOAL * 1000:.0f} ms "
                    f"({figures['frozen'] * 100:.0f}% of the time), "
                    f"CPU {figures['cpu'] * 1000:4.0f} ms/s (stream {figures['stream_seconds']:.1f} s)",
                    flush=True,
                )
                if TRACE_DIR is not None and name.startswith("turnstone-tui"):
                    print(
                        gap_trace.report(TRACE_DIR, LAST_STREAM["pid"], LAST_STREAM["stretches"]), flush=True
                    )  # type: ignore[arg-type]
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=20_000)
    add_busy_argument(parser)
    add_compare_argument(parser)
    parser.add_argument(
        "--no-textual-floor",
        action="store_true",
        help="skip the Textual Markdown floor (it takes 40 s a run; the Textual Log floor still runs)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="trace the app and print what it did in its longest gaps (slows it: figures not comparable)",
    )
    args = parser.parse_args()
    if args.trace:
        global TRACE_DIR
        TRACE_DIR = Path(tempfile.mkdtemp(prefix="turnstone-gap-trace-"))
        gap_trace.enable(TRACE_DIR)
        print(f"tracing the app into {TRACE_DIR}", flush=True)
    for index, script in enumerate(args.compare):
        name = COMPARED if index == 0 else f"{COMPARED[:-1]} {index + 1})"
        PROGRAMS[name] = lambda tmp, text, script=script: run_app(tmp, text, script)
    names = [name for name in PROGRAMS if not (args.no_textual_floor and name == TEXTUAL_MARKDOWN_FLOOR)]
    results = measure(args.runs, args.tokens, args.busy, names)
    print()
    print(
        f"last of {args.tokens} Markdown tokens at 2k tok/s -> final line on screen, median of {args.runs}, "
        f"{'with ' + spinners_label(args.busy) + ' alongside' if args.busy else 'no added load'}, "
        f"1-minute load average {os.getloadavg()[0]:.1f} at the end"
    )
    floor_runs = results["raw terminal (floor)"]

    def med(runs: list[dict[str, float]], key: str) -> float:
        return median([r[key] for r in runs])

    def ratio(value: float, floor: float) -> str:
        return f"{value / floor:5.1f}x" if floor > 0 else "  n/a"

    for name, runs in results.items():
        settle, stall, waiting = med(runs, "settle"), med(runs, "stall"), med(runs, "waiting")
        # The raw floor settles within a millisecond or two (or "before" the server's clock says
        # it wrote the last token): a ratio to it says nothing, the difference does.
        print(
            f"  {name:32} settled {settle * 1000:7.1f} ms (max {max(r['settle'] for r in runs) * 1000:7.1f}; "
            f"{(settle - med(floor_runs, 'settle')) * 1000:+7.1f} ms on the raw floor)\n"
            f"  {'':32} stall   {stall * 1000:7.1f} ms (max {max(r['stall'] for r in runs) * 1000:7.1f}; "
            f"{ratio(stall, med(floor_runs, 'stall'))} the raw floor's), waiting {waiting * 1000:6.1f} ms "
            f"(max {max(r['waiting'] for r in runs) * 1000:6.1f}; {ratio(waiting, med(floor_runs, 'waiting'))} "
            f"the raw floor's),\n"
            f"  {'':32} less its main thread's run-queue wait {med(runs, 'unqueued') * 1000:6.1f} ms "
            f"(max {max(r['unqueued'] for r in runs) * 1000:6.1f}; "
            f"{ratio(med(runs, 'unqueued'), med(floor_runs, 'unqueued'))} the raw floor's), "
            f"{med(runs, 'long_gaps'):.0f} gaps over {STALL_GOAL * 1000:.0f} ms "
            f"({med(runs, 'frozen') * 100:.0f}% of the time), "
            f"server's own pause {med(runs, 'server') * 1000:.1f} ms\n"
            f"  {'':32} CPU {med(runs, 'cpu') * 1000:5.0f} ms per second of the stream "
            f"(max {max(r['cpu'] for r in runs) * 1000:5.0f})"
        )
    app = results["turnstone-tui"]
    settle, stall, waiting = med(app, "settle"), med(app, "stall"), med(app, "waiting")
    print(f"  settle goal < {SETTLE_GOAL * 1000:.0f} ms: {verdict(settle < SETTLE_GOAL)}")
    print(f"  stall goal < {STALL_GOAL * 1000:.0f} ms, as the terminal saw it: {verdict(stall < STALL_GOAL)}")
    print(
        f"  stall goal < {STALL_GOAL * 1000:.0f} ms, counted while the server had sent text not yet shown: "
        f"{verdict(waiting < STALL_GOAL)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
