"""Bench: cold start of the real console script in a pseudo-terminal, against a floor measured in
the same run.

Each round launches, in a rotating order:

- the floor: a Textual hello-world (``bench/floor_hello.py``) in a pseudo-terminal — time to its
  first frame;
- ``turnstone-tui`` (this tree's console script) in a pseudo-terminal, talking to the scripted
  model server — time to its first frame (anything on the screen) and to "ready to send" (the
  session's welcome line is on the screen);
- ``turnstone-tui -p PROMPT`` headless against the scripted model server — time until it exited
  with the scripted answer printed;
- a reference for ``-p``: the model SDK alone (``bench/sdk_request.py``: import ``openai``, one
  streamed request as the app's provider makes it, print) — what ``-p`` costs beyond it is ours.

Every process is new (a cold interpreter; the OS file cache is warm after the first round, as on a
user's second start). Prints medians, ratios to the floor and the goals (issue 11: first frame
<= 1.5x the floor, ready <= 2.5x, ``-p`` round trip <= 3x).

Run: ``.venv/bin/python bench/cold_start.py [--runs 7] [--busy [N]] [--app SCRIPT ...]`` (``--busy [N]``:
N CPU-spinning processes run alongside (two when N is left out), as other heavy jobs on the same two cores; ``--app``,
repeatable: the console scripts to measure, e.g. an old and a new fresh install, each round
running every one of them beside the same floor, so a before/after comparison shares the load).
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
    add_busy_argument,
    busy_context,
    console_script,
    hermetic_env,
    median,
    spinners_label,
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


def script_python(script: str) -> str:
    """The interpreter of the venv a console script belongs to (the SDK reference runs with the same
    packages and ``sys.path`` as the app it is compared with)."""
    beside = Path(script).parent / "python"
    return str(beside) if beside.exists() else venv_python()


def timed_answer(command: list[str], env: dict[str, str], cwd: Path, what: str) -> float:
    """Seconds for ``command`` to exit having printed the scripted answer."""
    started = time.monotonic()
    done = subprocess.run(
        command,
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    elapsed = time.monotonic() - started
    if done.returncode != 0 or ANSWER not in done.stdout:
        raise SystemExit(f"{what} failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    return elapsed


def sdk_round_trip(python: str, base_url: str, env: dict[str, str], cwd: Path) -> float:
    """The reference for ``-p``: the SDK alone, one streamed request (bench/sdk_request.py)."""
    return timed_answer(
        [python, str(ROOT / "bench" / "sdk_request.py"), base_url], env, cwd, "the SDK reference"
    )


def app_start(script: str, config: Path, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    term = Terminal([script, "--config", str(config)], cols=COLS, rows=ROWS, env=env, cwd=cwd)
    with term:
        first = term.wait_for(lambda screen: screen.has_content(), TIMEOUT)
        ready = term.wait_for(lambda screen: READY_MARK in screen.text, TIMEOUT)
        if first is None or ready is None:
            raise SystemExit(f"turnstone-tui did not get ready:\n{term.text()}")
        return first - term.started_at, ready - term.started_at


def headless_round_trip(script: str, config: Path, env: dict[str, str], cwd: Path) -> float:
    return timed_answer(
        [script, "--config", str(config), "-p", "say something"], env, cwd, "turnstone-tui -p"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    add_busy_argument(parser)
    parser.add_argument(
        "--app",
        action="append",
        default=[],
        metavar="SCRIPT",
        help="a turnstone-tui console script to measure (repeatable; default: this tree's)",
    )
    args = parser.parse_args()
    scripts = args.app or [console_script()]
    labels = [f"app {i + 1}" for i in range(len(scripts))] if len(scripts) > 1 else [""]

    floors: list[float] = []
    figures = {label: {name: [] for name in [*GOALS, "SDK alone"]} for label in labels}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="turnstone-cold-") as tmp_name:
        tmp = Path(tmp_name)
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        replies = [Reply.text(f"{ANSWER} {i}.") for i in range((args.runs + 2) * 2 * len(scripts))]
        with ModelServerProcess(replies, tmp / "server") as server, busy_context(args.busy):
            env = hermetic_env(home)
            configs = [
                write_config(tmp / f"config{i}.toml", server.openai_base_url, tmp / f"bench{i}.db")
                for i in range(len(scripts))
            ]
            # Once each unmeasured: the OS file cache, the bytecode cache and the database, as on a
            # user's second start.
            floor_first_frame(env, work)
            for script, config in zip(scripts, configs, strict=True):
                app_start(script, config, env, work)
                headless_round_trip(script, config, env, work)
                sdk_round_trip(script_python(script), server.openai_base_url, env, work)
            steps = [("floor", -1)] + [
                (kind, i) for i in range(len(scripts)) for kind in ("app", "headless", "sdk")
            ]
            for round_no in range(args.runs):
                shift = round_no % len(steps)
                for kind, i in steps[shift:] + steps[:shift]:
                    if kind == "floor":
                        floors.append(floor_first_frame(env, work))
                        continue
                    numbers = figures[labels[i]]
                    if kind == "sdk":
                        numbers["SDK alone"].append(
                            sdk_round_trip(script_python(scripts[i]), server.openai_base_url, env, work)
                        )
                        continue
                    if kind == "app":
                        first, ready = app_start(scripts[i], configs[i], env, work)
                        numbers["first frame"].append(first)
                        numbers["ready to send"].append(ready)
                    else:
                        numbers["-p round trip"].append(
                            headless_round_trip(scripts[i], configs[i], env, work)
                        )
                line = ", ".join(
                    f"{label + ' ' if label else ''}first frame {numbers['first frame'][-1]:.2f} s, ready "
                    f"{numbers['ready to send'][-1]:.2f} s, -p {numbers['-p round trip'][-1]:.2f} s, "
                    f"SDK alone {numbers['SDK alone'][-1]:.2f} s"
                    for label, numbers in figures.items()
                )
                print(f"round {round_no + 1}/{args.runs}: floor {floors[-1]:.2f} s, {line}", flush=True)

    floor = median(floors)
    load_after = os.getloadavg()[0]
    print()
    print(
        f"cold start, {args.runs} interleaved runs{', ' + spinners_label(args.busy) + ' alongside' if args.busy else ''}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after (on a loaded machine the "
        "ratios grow: the floor is the shortest run)"
    )
    print(f"  {'floor (Textual hello-world first frame)':42} median {floor:6.2f} s")
    for label, script in zip(labels, scripts, strict=True):
        if label:
            print(f"  {label}: {script}")
        for name, goal in GOALS.items():
            value = median(figures[label][name])
            ratio = value / floor
            title = f"{label + ' ' if label else ''}{name}"
            print(
                f"  {title:42} median {value:6.2f} s  = {ratio:4.2f}x floor  goal <= {goal:.1f}x  "
                f"{verdict(ratio <= goal)}"
            )
        sdk = median(figures[label]["SDK alone"])
        over = median(figures[label]["-p round trip"]) - sdk
        print(
            f"  {(label + ' ' if label else '') + 'SDK alone (reference for -p)':42} median {sdk:6.2f} s  = "
            f"{sdk / floor:4.2f}x floor; -p takes {over * 1000:+.0f} ms more (the app's own part)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
