"""Bench: the app's peak memory while a tool prints one 400 MB line (issue 15 item 6).

The real console script runs a scripted turn whose bash call prints a single 400 MB line
(``head -c 400000000 /dev/zero | tr '\\0' a``) followed by a short one; the app's resident memory
(RSS of the app process, sampled every 20 ms) is recorded until the model's answer arrives. Two
front ends: headless (``-p``) and the full-screen app in a pseudo-terminal (``bench/terminal.py``).
The floor, measured in the same run: the same turn with a command that prints one short line.

Goal: peak RSS < 300 MB with the 400 MB line (it was ~2 GB when a line was buffered whole).

Run: ``.venv/bin/python bench/memory_long_line.py [--mb 400] [--runs 3] [--skip-app]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    READY_MARK,
    Terminal,
    console_script,
    hermetic_env,
    median,
    verdict,
    write_app_config,
)
from tests.helpers.model_server import ModelServerProcess, Reply  # noqa: E402

GOAL_MB = 300
ANSWER = "LONG-LINE-ANSWER"


class PeakRss:
    """Samples a process's RSS in a thread; ``peak`` in MB."""

    def __init__(self, pid: int, every: float = 0.02) -> None:
        self.process = psutil.Process(pid)
        self.every = every
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.process.memory_info().rss / 1e6)
            except psutil.Error:
                return
            time.sleep(self.every)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def command(megabytes: int) -> str:
    if megabytes <= 0:
        return "echo one short line; echo LINE-DONE"
    return f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' a; echo; echo LINE-DONE"


def script(megabytes: int) -> list[Reply]:
    return [Reply.tools([("bash", {"command": command(megabytes)})]), Reply.text(f"{ANSWER} done.")]


def headless_peak(tmp: Path, megabytes: int) -> float:
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    with ModelServerProcess(script(megabytes), tmp / "server") as server:
        config = write_app_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
        env = {**hermetic_env(tmp / "home"), "PATH": "/usr/bin:/bin"}
        proc = subprocess.Popen(
            [console_script(), "--config", str(config), "--skip-permissions", "-p", "print the long line"],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with PeakRss(proc.pid) as rss:
            out, err = proc.communicate(timeout=600)
    if ANSWER not in out:
        raise SystemExit(f"headless run failed (exit {proc.returncode}):\n{out[-2000:]}\n{err[-2000:]}")
    return rss.peak


def app_peak(tmp: Path, megabytes: int) -> float:
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    with ModelServerProcess(script(megabytes), tmp / "server") as server:
        config = write_app_config(tmp / "config.toml", server.openai_base_url, tmp / "bench.db")
        app = Terminal(
            [console_script(), "--config", str(config), "--skip-permissions"],
            cols=120,
            rows=36,
            env=hermetic_env(tmp / "home"),
            cwd=work,
        )
        with app:
            if app.wait_for(lambda screen: READY_MARK in screen.text, 120) is None:
                raise SystemExit(f"the app did not get ready:\n{app.text()}")
            with PeakRss(app.pid) as rss:
                app.send("print the long line")
                app.wait_for(lambda screen: "print the long line" in screen.text, 30)
                app.send(b"\r")
                if app.wait_for(lambda screen: ANSWER in screen.text, 600) is None:
                    raise SystemExit(f"no answer:\n{app.text()}")
                time.sleep(1.0)  # the last frames
    return rss.peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400, help="size of the single line in MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-app", action="store_true", help="headless only")
    args = parser.parse_args()
    fronts = [("headless", headless_peak)] + ([] if args.skip_app else [("app in a pty", app_peak)])
    ok = True
    print(
        f"peak RSS of the app while bash prints one {args.mb} MB line (floor: one short line), {args.runs} runs"
    )
    for label, measure in fronts:
        floors, peaks = [], []
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="turnstone-mem-") as name:
                floors.append(measure(Path(name), 0))
            with tempfile.TemporaryDirectory(prefix="turnstone-mem-") as name:
                peaks.append(measure(Path(name), args.mb))
            print(
                f"  {label} run {run + 1}: floor {floors[-1]:.0f} MB, {args.mb} MB line {peaks[-1]:.0f} MB",
                flush=True,
            )
        floor, peak = median(floors), median(peaks)
        meets = peak < GOAL_MB
        ok = ok and meets
        print(
            f"{label}: median peak RSS {peak:.0f} MB with the {args.mb} MB line, floor {floor:.0f} MB "
            f"({peak / floor:.2f}x); goal < {GOAL_MB} MB: {verdict(meets)}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
