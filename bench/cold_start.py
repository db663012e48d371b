"""Bench: cold start of the real console script in a pseudo-terminal, against a floor measured in
the same run.

Each round launches, in a rotating order:

- the floor: a Textual hello-world (``bench/floor_hello.py``) in a pseudo-terminal — time to its
  first frame;
- ``turnstone-tui`` (this tree's console script) in a pseudo-terminal, talking to the scripted
  model server — time to its first frame (anything on the screen) and to "ready to send" (the
  session's welcome line is on the screen);
- ``turnstone-tui -p PROMPT`` headless against the scripted model server — time until it exited
  with the scripted answer printed.

Every process is new (a cold interpreter; the OS file cache is warm after the first round, as on a
user's second start). Prints medians, ratios to the floor and the goals (issue 11: first frame
<= 1.5x the floor, ready <= 2.5x, ``-p`` round trip <= 3x).

Run: ``.venv/bin/python bench/cold_start.py [--runs 7] [--busy]`` (``--busy``: two CPU-spinning
processes run alongside, as another heavy job on the same two cores).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    ROOT,
    Terminal,
    busy_context,
    console_script,
    hermetic_env,
    median,
    venv_python,
    verdict,
)
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

COLS, ROWS = 120, 36
TIMEOUT = 120.0
READY_MARK = "shift+enter"  # on the welcome line the app shows once the session can take prompts
ANSWER = "Cold start answer"
GOALS = {"first frame": 1.5, "ready to send": 2.5, "-p round trip": 3.0}


def write_config(path: Path, base_url: str, db: Path) -> Path:
    """A config.toml for the scripted model server (OpenAI protocol), the database in ``db``."""
    path.write_text(
        f'db_path = "{db}"\n\n[api]\nbase_url = "{base_url}"\napi_key = "bench-key"\n\n'
        '[model]\nname = "scripted-model"\nprovider = "openai"\nretries = 0\n',
        encoding="utf-8",
    )
    return path


def floor_first_frame(env: dict[str, str], cwd: Path) -> float:
    term = Terminal(
        [venv_python(), str(ROOT / "bench" / "floor_hello.py")], cols=COLS, rows=ROWS, env=env, cwd=cwd
    )
    with term:
        shown = term.wait_for(lambda screen: "Hello, world" in screen.text, TIMEOUT)
        if shown is None:
            raise SystemExit(f"the hello-world floor showed nothing:\n{term.text()}")
        return shown - term.started_at


def app_start(config: Path, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    term = Terminal([console_script(), "--config", str(config)], cols=COLS, rows=ROWS, env=env, cwd=cwd)
    with term:
        first = term.wait_for(lambda screen: screen.has_content(), TIMEOUT)
        ready = term.wait_for(lambda screen: READY_MARK in screen.text, TIMEOUT)
        if first is None or ready is None:
            raise SystemExit(f"turnstone-tui did not get ready:\n{term.text()}")
        return first - term.started_at, ready - term.started_at


def headless_round_trip(config: Path, env: dict[str, str], cwd: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(
        [console_script(), "--config", str(config), "-p", "say something"],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    elapsed = time.monotonic() - started
    if done.returncode != 0 or ANSWER not in done.stdout:
        raise SystemExit(f"turnstone-tui -p failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--busy", action="store_true", help="run two CPU-spinning processes alongside")
    args = parser.parse_args()

    figures: dict[str, list[float]] = {
        "floor": [],
        "first frame": [],
        "ready to send": [],
        "-p round trip": [],
    }
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="turnstone-cold-") as tmp_name:
        tmp = Path(tmp_name)
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        replies = [Reply.text(f"{ANSWER} {i}.") for i in range(args.runs + 2)]
        with ModelServerProcess(replies, tmp / "server") as server, busy_context(args.busy):
            config = write_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
            env = hermetic_env(home)
            # Once each unmeasured: the OS file cache, the bytecode cache and the database, as on a
            # user's second start.
            floor_first_frame(env, work)
            app_start(config, env, work)
            headless_round_trip(config, env, work)
            steps = ["floor", "app", "headless"]
            for round_no in range(args.runs):
                order = steps[round_no % 3 :] + steps[: round_no % 3]
                for step in order:
                    if step == "floor":
                        figures["floor"].append(floor_first_frame(env, work))
                    elif step == "app":
                        first, ready = app_start(config, env, work)
                        figures["first frame"].append(first)
                        figures["ready to send"].append(ready)
                    else:
                        figures["-p round trip"].append(headless_round_trip(config, env, work))
                print(
                    f"round {round_no + 1}/{args.runs}: floor {figures['floor'][-1]:.2f} s, first frame "
                    f"{figures['first frame'][-1]:.2f} s, ready {figures['ready to send'][-1]:.2f} s, "
                    f"-p {figures['-p round trip'][-1]:.2f} s",
                    flush=True,
                )

    floor = median(figures["floor"])
    load_after = os.getloadavg()[0]
    print()
    print(
        f"cold start, {args.runs} interleaved runs{', two CPU spinners alongside' if args.busy else ''}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after (on a loaded machine the "
        "ratios grow: the floor is the shortest run)"
    )
    print(f"  {'floor (Textual hello-world first frame)':42} median {floor:6.2f} s")
    for name, goal in GOALS.items():
        value = median(figures[name])
        ratio = value / floor
        print(
            f"  {name:42} median {value:6.2f} s  = {ratio:4.2f}x floor  goal <= {goal:.1f}x  {verdict(ratio <= goal)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
