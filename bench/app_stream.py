"""Bench: the real TurnstoneApp (headless ``run_test``, real Runtime and ChatSession, tmp database,
scripted model server on 127.0.0.1) starting up and streaming a long Markdown answer.

1. Time to first frame: from entering ``run_test()`` until Textual's ``Ready`` event (the DOM is
   ready and the first frame was drawn), and until the session is ready (welcome shown); median of 5.
2. A ~20k-token Markdown answer (paragraphs, lists, code blocks) streamed at 2k tokens/s (4-character
   deltas) by the scripted model server running in its own process (as a real model server would;
   in a thread of this process it would take the GIL from the app): the delivered token rate, how
   long after the last token the screen settles (the first frame drawn once every chunk of the
   answer's Markdown holds its text and has finished mounting its blocks; target < 100 ms), and
   the worst event-loop stall while streaming (a 10 ms ticker measures how late it wakes). Median
   over ``--runs`` runs.

Run: ``.venv/bin/python bench/app_stream.py [--runs N] [--tokens N]``; prints the figures
(a 20k-token run takes about 10 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from textual import events  # noqa: E402
from textual.message import Message  # noqa: E402

from tests.helpers.model_server import ModelServerProcess, Reply, ScriptedModelServer  # noqa: E402
from tests.helpers.scripted_config import scripted_config  # noqa: E402
from turnstone_tui.app.app import TurnstoneApp  # noqa: E402
from turnstone_tui.runtime import Runtime, RuntimeOptions  # noqa: E402
from turnstone_tui.widgets.chat_messages import AssistantMessage  # noqa: E402

SIZE = (120, 40)
CHARS_PER_TOKEN = 4  # the scripted server sends one 4-character delta per "token"
TOKEN_DELAY = 0.0005  # seconds between SSE events (the server's sleep; the real rate is measured)
TICK = 0.010
STARTUP_RUNS = 5
SETTLE_TARGET_MS = 100.0
FIRST_FRAME_TARGET_MS = 500.0


async def make_runtime(server: ScriptedModelServer | ModelServerProcess, tmp: Path) -> Runtime:
    config = scripted_config(
        server.openai_base_url, tmp / "bench.db", context_window=200_000, api_key="bench"
    )
    workdir = tmp / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    options = RuntimeOptions(cwd=workdir, start_mcp=False, start_watches=False)
    return await Runtime.create(config, options=options)


def markdown_document(tokens: int) -> str:
    """A deterministic answer of about ``tokens`` tokens: headings, paragraphs, lists, code blocks."""
    target = tokens * CHARS_PER_TOKEN
    parts: list[str] = []
    size = 0
    section = 0
    while size < target:
        section += 1
        block = (
            f"## Section {section}: what the build does\n\n"
            f"The build step number {section} reads the **configuration**, resolves `dependencies` and "
            "writes the artefacts into the output folder. It is *incremental*: unchanged inputs are "
            "skipped, so a second run is much faster than the first one.\n\n"
            f"- item one of section {section}, with `inline code`\n"
            "- item two, which is a little longer so that it wraps on a narrow terminal window\n"
            "  - a nested point\n"
            "- item three\n\n"
            f"1. first step of {section}\n2. second step\n3. third step\n\n"
            "```python\n"
            f"def step_{section}(inputs: list[str]) -> dict[str, int]:\n"
            "    counts: dict[str, int] = {}\n"
            "    for name in inputs:\n"
            "        counts[name] = counts.get(name, 0) + 1\n"
            "    return counts\n"
            "```\n\n"
            "> Note: the cache lives next to the sources; delete it to force a clean build.\n\n"
        )
        parts.append(block)
        size += len(block)
    return "".join(parts)[:target].rstrip() + "\n\nDone.\n"


@dataclass
class TokenClock:
    """Counts answer tokens as the engine hands them to the UI bridge."""

    deltas: int = 0
    chars: int = 0
    first: float | None = None
    last: float | None = None

    def wrap(self, on_token: Callable[[str], None]) -> Callable[[str], None]:
        def counted(text: str) -> None:
            now = time.perf_counter()
            if self.first is None:
                self.first = now
            self.last = now
            self.deltas += 1
            self.chars += len(text)
            on_token(text)

        return counted


@dataclass
class StallMeter:
    """A task that sleeps ``TICK`` in a loop and records how late it wakes."""

    lateness: list[float] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(TICK)
            self.lateness.append(time.perf_counter() - started - TICK)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    @property
    def worst_ms(self) -> float:
        return max(self.lateness, default=0.0) * 1000


async def wait_for(predicate: Callable[[], object], limit: float, step: float = 0.001) -> bool:
    deadline = time.perf_counter() + limit
    while not predicate():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(step)
    return True


async def bench_startup(server: ScriptedModelServer, tmp: Path) -> dict[str, float]:
    runtime = await make_runtime(server, tmp)
    app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
    marks: dict[str, float] = {}

    def hook(message: Message) -> None:
        if isinstance(message, events.Ready) and "first_frame" not in marks:
            marks["first_frame"] = time.perf_counter()

    try:
        started = time.perf_counter()
        async with app.run_test(size=SIZE, message_hook=hook):
            await asyncio.wait_for(app.wait_ready(), 20)
            marks["session_ready"] = time.perf_counter()
            await wait_for(lambda: "first_frame" in marks, 10)
    finally:
        await runtime.aclose()
    return {name: (at - started) * 1000 for name, at in marks.items()}


def answer(app: TurnstoneApp) -> AssistantMessage | None:
    # Not app.query(...): that walks the whole DOM, thousands of Markdown widgets, on every poll.
    return app.chat.last_answer


def holds_document(app: TurnstoneApp, document: str) -> bool:
    """The answer's Markdown chunks hold the whole text and no append is still mounting blocks."""
    message = answer(app)
    return message is not None and message.settled and message.rendered_source.strip() == document.strip()


class FrameWatch:
    """Notes when the app draws the first frame that shows the whole answer.

    Wraps ``App._display``, which every frame goes through (after its layout and render), and
    checks there whether the widgets already hold the whole document: that frame is the settled
    screen."""

    def __init__(self, app: TurnstoneApp, document: str) -> None:
        self.settled_at: float | None = None
        self.frames = 0
        display = app._display

        def watched(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is None or app._batch_count:
                return
            self.frames += 1
            if self.settled_at is None and holds_document(app, document):
                self.settled_at = time.perf_counter()

        app._display = watched  # type: ignore[method-assign]


async def bench_stream(tmp: Path, tokens: int) -> dict[str, float]:
    document = markdown_document(tokens)
    # The server runs in its own process, as a real model server would (in a thread of this
    # process it would take the GIL from the app).
    with ModelServerProcess(
        [Reply.text(document, chunk_size=CHARS_PER_TOKEN, delay=TOKEN_DELAY)], tmp / "server"
    ) as server:
        return await stream_once(server, tmp, document)


async def stream_once(server: ModelServerProcess, tmp: Path, document: str) -> dict[str, float]:
    runtime = await make_runtime(server, tmp)
    app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
    clock = TokenClock()
    meter = StallMeter()
    figures: dict[str, float] = {}
    try:
        async with app.run_test(size=SIZE) as pilot:
            await asyncio.wait_for(app.wait_ready(), 20)
            await pilot.pause()
            app.bridge.on_content_token = clock.wrap(app.bridge.on_content_token)  # type: ignore[method-assign]
            frames = FrameWatch(app, document)
            meter.start()
            app.send_prompt("explain the build")
            ok = await wait_for(lambda: clock.deltas > 0 and clock.chars >= len(document), 600, step=0.005)
            # The last token has reached the UI bridge: wait for the frame that shows all of it.
            ok = ok and await wait_for(lambda: frames.settled_at is not None, 30, step=0.005)
            settled_at = frames.settled_at or time.perf_counter()
            await meter.stop()
            await wait_for(lambda: not app.busy, 20)
            await pilot.pause()
            assert clock.first is not None and clock.last is not None
            duration = max(clock.last - clock.first, 1e-9)
            figures = {
                "ok": float(ok),
                "tokens": clock.chars / CHARS_PER_TOKEN,
                "deltas": float(clock.deltas),
                "seconds": duration,
                "token_rate": clock.chars / CHARS_PER_TOKEN / duration,
                "settle_ms": (settled_at - clock.last) * 1000,
                "stall_ms": meter.worst_ms,
                "ticks": float(len(meter.lateness)),
            }
    finally:
        await meter.stop()
        await runtime.aclose()
    return figures


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


async def main(runs: int, tokens: int) -> None:
    with ScriptedModelServer() as server, tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        startups = [await bench_startup(server, tmp / f"start{n}") for n in range(STARTUP_RUNS)]
        print(
            f"time to first frame (run_test enter -> Ready), median of {STARTUP_RUNS}: "
            f"{median(startups, 'first_frame'):.0f} ms (target < {FIRST_FRAME_TARGET_MS:.0f} ms); "
            f"first run {startups[0]['first_frame']:.0f} ms"
        )
        print(f"  session ready (welcome shown), median: {median(startups, 'session_ready'):.0f} ms")
        streams = []
        for n in range(runs):
            figures = await bench_stream(tmp / f"stream{n}", tokens)
            streams.append(figures)
            print(
                f"  stream run {n + 1}: {figures['tokens']:.0f} tokens in {figures['seconds']:.1f} s "
                f"({figures['token_rate']:.0f} tokens/s), settled {figures['settle_ms']:.1f} ms after "
                f"the last token, worst loop stall {figures['stall_ms']:.1f} ms, complete: {bool(figures['ok'])}"
            )
    print(
        f"{tokens} tokens of Markdown streamed, median of {runs}: delivered "
        f"{median(streams, 'token_rate'):.0f} tokens/s (asked ~2000), screen settled "
        f"{median(streams, 'settle_ms'):.1f} ms after the last token (target < {SETTLE_TARGET_MS:.0f} ms), "
        f"worst event-loop stall {median(streams, 'stall_ms'):.1f} ms (10 ms ticker), "
        f"all complete: {all(run['ok'] for run in streams)}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="streaming runs (default 3)")
    parser.add_argument("--tokens", type=int, default=20_000, help="answer length in tokens (default 20000)")
    args = parser.parse_args()
    asyncio.run(main(max(1, args.runs), max(100, args.tokens)))
