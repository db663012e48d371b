"""Bench: resume a 300-turn session, then page through it (issue 13, rows 5 and 6).

Builds a session of ``--turns`` turns (default 300; the answers of ``bench/terminal_turns.py``,
every fifth turn with a bash call and its result) through the storage API, then launches the real
console script with ``--resume`` in a pseudo-terminal read through pyte (``bench/terminal.py``):

- first frame, and the last answer's last line on screen, both from the launch; the goal is the
  second within 1 s of the first;
- PageUp ``--pages`` times from the end, then PageDown as many: key -> the screen changed, and
  the app's CPU time per key (from /proc: what a loaded machine inflates far less).

The floors, in the same run: a Textual hello-world (``bench/floor_hello.py``): its first frame, and
key -> character on screen in its input; and the same app started fresh (no ``--resume``, same
database): its welcome line (ready to send), so what resuming itself adds is the difference.

Goals: last answer < 1 s after the first frame; PageUp p95 and PageDown p95 each < 50 ms.

Run: ``.venv/bin/python bench/terminal_resume.py [--turns 300] [--pages 40] [--runs 3] [--busy [N]]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    READY_MARK,
    ROOT,
    Terminal,
    add_busy_argument,
    busy_context,
    console_script,
    hermetic_env,
    key_latencies,
    machine_label,
    median,
    percentile,
    summary_ms,
    venv_python,
    verdict,
    write_app_config,
)
from bench.terminal_turns import TOOL_EVERY, answer, cpu_seconds, end_mark  # noqa: E402
from turnstone_tui.storage.db import Storage  # noqa: E402

COLS, ROWS = 120, 36
PAGE_GOAL = 0.050
RESUME_GOAL = 1.0
PAGE_UP, PAGE_DOWN = b"\x1b[5~", b"\x1b[6~"


def turn_messages(n: int) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "user", "content": f"question q{n}z"}]
    if n % TOOL_EVERY == 0:
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "bash", "arguments": f'{{"command": "echo tool-output-{n}"}}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{n}", "name": "bash", "content": f"tool-output-{n}\n"}
        )
    messages.append({"role": "assistant", "content": answer(n)})
    return messages


async def build_session(db: Path, turns: int) -> str:
    storage = await Storage.open(db)
    try:
        session = await storage.create_session(name="a long session", model="scripted-model")
        for n in range(1, turns + 1):
            await storage.append_messages(session, turn_messages(n))
        return session
    finally:
        await storage.close()


def page_latencies(term: Terminal, key: bytes, count: int, timeout: float = 10.0) -> list[float]:
    """Press ``key`` ``count`` times; each time, key -> the screen shows something else."""
    latencies: list[float] = []
    for _ in range(count):
        before = term.text()
        sent = term.send(key)
        shown = term.wait_for(lambda screen, b=before: screen.text != b, timeout)
        if shown is None:
            break  # nothing more to scroll
        latencies.append(shown - sent)
        term.wait_quiet(0.15, 5)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3, help="resumes (each pages through the session)")
    add_busy_argument(parser)
    args = parser.parse_args()
    firsts: list[float] = []
    lasts: list[float] = []
    floor_firsts: list[float] = []
    floor_keys: list[float] = []
    fresh: list[float] = []
    ups: list[float] = []
    downs: list[float] = []
    cpu_up: list[float] = []  # the app's CPU time per key, per run
    cpu_down: list[float] = []
    with tempfile.TemporaryDirectory(prefix="turnstone-resume-") as tmp_name:
        tmp = Path(tmp_name)
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        env = hermetic_env(home)
        db = tmp / "bench.db"
        started = time.monotonic()
        session = asyncio.run(build_session(db, args.turns))
        print(f"built a {args.turns}-turn session in {time.monotonic() - started:.1f} s", flush=True)
        config = write_app_config(tmp / "config.toml", "http://127.0.0.1:9/v1", db)
        warm_up = Terminal(
            [console_script(), "--config", str(config)], cols=COLS, rows=ROWS, env=env, cwd=work
        )
        with warm_up:  # compiles the bytecode into this home's cache: no run pays for it
            warm_up.wait_for(lambda screen: READY_MARK in screen.text, 180)
        with busy_context(args.busy):
            for run in range(args.runs):
                floor = Terminal(
                    [venv_python(), str(ROOT / "bench" / "floor_hello.py")],
                    cols=COLS,
                    rows=ROWS,
                    env=env,
                    cwd=work,
                )
                with floor:
                    seen = floor.wait_for(lambda screen: "Hello, world" in screen.text, 120)
                    if seen is not None:
                        floor_firsts.append(seen - floor.started_at)
                    time.sleep(0.5)
                    floor_keys.extend(key_latencies(floor, 10))
                plain = Terminal(
                    [console_script(), "--config", str(config)], cols=COLS, rows=ROWS, env=env, cwd=work
                )
                with plain:
                    ready = plain.wait_for(lambda screen: READY_MARK in screen.text, 120)
                    if ready is not None:
                        fresh.append(ready - plain.started_at)
                app = Terminal(
                    [console_script(), "--config", str(config), "--resume", session],
                    cols=COLS,
                    rows=ROWS,
                    env=env,
                    cwd=work,
                )
                with app:
                    first = app.wait_for(lambda screen: screen.has_content(), 120)
                    last = app.wait_for(lambda screen: end_mark(args.turns) in screen.text, 120)
                    if first is None or last is None:
                        raise SystemExit(f"the resumed session never showed its last answer:\n{app.text()}")
                    firsts.append(first - app.started_at)
                    lasts.append(last - app.started_at)
                    app.wait_for(lambda screen: READY_MARK in screen.text, 60)  # the engine is ready too
                    app.wait_quiet(1.0, 30)
                    before = cpu_seconds(app.pid)
                    run_ups = page_latencies(app, PAGE_UP, args.pages)
                    middle = cpu_seconds(app.pid)
                    run_downs = page_latencies(app, PAGE_DOWN, args.pages)
                    after = cpu_seconds(app.pid)
                    ups.extend(run_ups)
                    downs.extend(run_downs)
                    cpu_up.append((middle - before) / max(1, len(run_ups)))
                    cpu_down.append((after - middle) / max(1, len(run_downs)))
                print(
                    f"run {run + 1}/{args.runs}: first frame {firsts[-1]:.2f} s, last answer {lasts[-1]:.2f} s",
                    flush=True,
                )
    machine = machine_label(args.busy)
    after_first = [last - first for first, last in zip(firsts, lasts, strict=True)]
    pages = ups + downs
    print()
    print(f"resume a {args.turns}-turn session, {args.runs} runs, {machine}")
    print(f"  floor: hello-world first frame     median {median(floor_firsts):.2f} s")
    print(f"  floor: fresh start, ready to send  median {median(fresh):.2f} s")
    print(f"  first frame                        median {median(firsts):.2f} s")
    print(
        f"  last answer on screen              median {median(lasts):.2f} s ({median(after_first):.2f} s after the first frame)"
    )
    print(f"  resume's own cost (last answer - fresh start ready) {median(lasts) - median(fresh):.2f} s")
    print(f"  floor: hello-world key -> screen   {summary_ms(floor_keys)}")
    print(f"  PageUp -> screen                   {summary_ms(ups)}")
    print(f"  PageDown -> screen                 {summary_ms(downs)}")
    print(f"  both keys together                 {summary_ms(pages)}")
    print(
        f"  the app's CPU time per key (user + system, median of runs): PageUp "
        f"{median(cpu_up) * 1000:.1f} ms, PageDown {median(cpu_down) * 1000:.1f} ms"
    )
    resumed = median(after_first)
    up95, down95 = percentile(ups, 95), percentile(downs, 95)
    print(
        f"  last answer {resumed:.2f} s after the first frame, goal < {RESUME_GOAL} s: {verdict(resumed < RESUME_GOAL)}"
    )
    print(
        f"  PageUp p95 {up95 * 1000:.1f} ms, PageDown p95 {down95 * 1000:.1f} ms, goal each < 50 ms: "
        f"{verdict(up95 < PAGE_GOAL and down95 < PAGE_GOAL)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
