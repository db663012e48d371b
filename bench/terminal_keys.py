"""Bench: key -> character on screen in a real terminal (issue 13, rows 1 and 2).

In a pseudo-terminal read through pyte (``bench/terminal.py``), for each key the time from writing
it to the terminal until the screen shows it, p50 / p95 / max, for:

- the floor: a Textual hello-world with a focused Input (``bench/floor_hello.py``);
- ``turnstone-tui`` at the idle prompt;
- ``turnstone-tui`` while four bash panes stream an endless flood of output (``seq 1 inf``,
  approved with ``--skip-permissions``), keys typed into the prompt meanwhile; the bench checks
  the panes still stream after the last key.

Goals: idle p95 < 16 ms; under the flood p95 < 50 ms.

Run: ``.venv/bin/python bench/terminal_keys.py [--keys 40] [--busy [N]]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    ROOT,
    Terminal,
    add_busy_argument,
    busy_context,
    hermetic_env,
    key_latencies,
    machine_label,
    percentile,
    ready_app,
    report_row,
    summary_ms,
    venv_python,
    write_app_config,
)
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

COLS, ROWS = 120, 36
FLOOD = "seq 1 inf"  # endless: the keys are typed while it still streams (esc ends it)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=40)
    add_busy_argument(parser)
    args = parser.parse_args()
    replies = [
        Reply.tools([("bash", {"command": FLOOD}) for _ in range(4)]),
        Reply.text("Flood done."),
    ]
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="turnstone-keys-") as tmp_name:
        tmp = Path(tmp_name)
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        env = hermetic_env(home)
        with ModelServerProcess(replies, tmp / "server") as server, busy_context(args.busy):
            config = write_app_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
            floor = Terminal(
                [venv_python(), str(ROOT / "bench" / "floor_hello.py")],
                cols=COLS,
                rows=ROWS,
                env=env,
                cwd=work,
            )
            with floor:
                floor.wait_for(lambda screen: "Hello, world" in screen.text, 120)
                time.sleep(1.0)
                results["floor (hello-world Input)"] = key_latencies(floor, args.keys)
            with ready_app(
                config, env, work, args=["--skip-permissions"], cols=COLS, rows=ROWS, settle=2.0
            ) as app:
                results["turnstone-tui, idle prompt"] = key_latencies(app, args.keys)
                app.send("flood the panes")
                app.wait_for(lambda screen: "flood the panes" in screen.text, 30)
                app.send(b"\r")
                # the panes show the flood: numbers in the thousands on the screen
                if (
                    app.wait_for(lambda screen: any(f"{n}000" in screen.text for n in range(10, 99)), 120)
                    is None
                ):
                    raise SystemExit(f"the panes never streamed:\n{app.text()}")
                results["turnstone-tui, 4 panes flooding"] = key_latencies(app, args.keys)
                before = app.bytes_read
                time.sleep(0.5)
                if app.bytes_read == before or "Flood done." in app.text():
                    raise SystemExit(f"the panes stopped streaming before the last key:\n{app.text()}")
                app.send(b"\x1b")  # cancel the turn

    print()
    print(f"key -> character on screen, {args.keys} keys each, {machine_label(args.busy)}")
    for name, values in results.items():
        print(f"  {name:36} {summary_ms(values)}")
    floor = percentile(results["floor (hello-world Input)"], 95)
    idle = percentile(results["turnstone-tui, idle prompt"], 95)
    flood = percentile(results["turnstone-tui, 4 panes flooding"], 95)
    print(report_row("idle prompt p95", idle, floor, "< 16 ms", idle < 0.016))
    print(report_row("under a four-pane flood p95", flood, floor, "< 50 ms", flood < 0.050))
    return 0


if __name__ == "__main__":
    sys.exit(main())
