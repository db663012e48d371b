"""What a benched ``turnstone-tui`` was doing during the longest gaps in its output.

``enable(directory)`` makes every ``turnstone-tui`` started afterwards by this process load the
tracer in ``bench/gap_trace_site/sitecustomize.py`` (through PYTHONPATH), which writes the app's
slow event-loop steps, garbage collections and stack samples to ``directory/<pid>.json`` when it
exits. ``report(...)`` reads that and prints, for each of the longest gaps the bench measured,
the loop steps over 4 ms that overlapped it (the frame is Textual's screen update timer; a
Markdown append; the engine's turn, which reads the model's stream; a widget's message queue), the
collections, and the stacks most often sampled in it. The tracer slows the app: use it to see
what a gap is made of, not for figures (``bench/terminal_markdown.py --trace``). The samples lean
towards the places where the main thread gave up the GIL (a system call such as the selector's
``epoll_ctl``) and waited to take it back from another thread (Textual's writer, the sampler).
"""

from __future__ import annotations

import collections
import json
import os
import time
from pathlib import Path

SITE = Path(__file__).resolve().parent / "gap_trace_site"

_KINDS = (
    ("_on_timer_update", "frame (layout + render)"),
    ("await_append", "Markdown append"),
    ("_run_turn", "engine (model stream)"),
    ("_process_messages", "widget messages"),
)


def enable(directory: Path) -> None:
    """Trace every ``turnstone-tui`` this process starts from now on into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["TURNSTONE_GAP_TRACE"] = str(directory)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))


def _kind(stack: list[str]) -> str:
    if stack and stack[0].startswith("selectors.py:select"):
        return "idle (waiting for input)"
    if any("sitecustomize.py:_on_gc" in frame for frame in stack):
        return "garbage collection"
    joined = " ".join(stack)
    for marker, name in _KINDS:
        if marker in joined:
            return name
    return "other"


def load(directory: Path, pid: int) -> dict | None:
    """The trace the app ``pid`` wrote into ``directory`` at its exit (waited for up to 10 s), or
    None if it wrote none (it did not exit normally)."""
    path = directory / f"{pid}.json"
    deadline = time.monotonic() + 10
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not path.exists():
        return None
    time.sleep(0.2)  # (written at exit: let it finish)
    return json.loads(path.read_text())


def report(directory: Path, pid: int, stretches: list[tuple[float, float]], top: int = 5) -> str:
    """The ``top`` longest of ``stretches`` (silent spans of the terminal, monotonic seconds) of
    the app ``pid``, with what its trace says happened in each."""
    trace = load(directory, pid)
    if trace is None:
        return f"  (no trace from pid {pid}: the app did not exit normally)"
    if not stretches:
        return "  (no gaps)"
    origin = stretches[0][0]
    lines: list[str] = []
    for a, b in sorted(stretches, key=lambda s: s[0] - s[1])[:top]:
        lines.append(f"  gap {(b - a) * 1000:6.1f} ms, {a - origin:5.2f} s into the answer:")
        for start, end, what in trace["steps"]:
            if end > a and start < b:
                lines.append(f"    {(start - a) * 1000:+7.1f} ms  {(end - start) * 1000:5.1f} ms  {what}")
        for start, end, generation in trace["gcs"]:
            if end > a and start < b and end - start > 0.001:
                lines.append(
                    f"    {(start - a) * 1000:+7.1f} ms  {(end - start) * 1000:5.1f} ms  gc gen {generation}"
                )
        inside = [stack for when, stack in trace["samples"] if a <= when <= b]
        if inside:
            kinds = collections.Counter(_kind(stack) for stack in inside)
            shares = ", ".join(f"{name} {count * 100 // len(inside)}%" for name, count in kinds.most_common())
            lines.append(f"    samples ({len(inside)}): {shares}")
            stacks = collections.Counter(" < ".join(stack[:4]) for stack in inside)
            for stack, count in stacks.most_common(3):
                lines.append(f"      {count:3} {stack}")
    return "\n".join(lines)
