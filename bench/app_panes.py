"""Bench: bash panes in the real TurnstoneApp (headless run_test, real ChatSession, real bash tool,
scripted model server on 127.0.0.1).

1. ``seq 1 200000`` streamed into a pane through the real bash tool: wall time from the prompt to
   the result in the card, and peak RSS (targets: < 2 s, < 250 MB).
2. The same 200k lines written straight into ``ParallelPanes.write`` at full speed (no engine).
3. Key latency while four bash panes stream: each key is posted and timed until the prompt shows
   it (target: p95 < 50 ms).

Run: ``.venv/bin/python bench/app_panes.py``; prints the figures.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

import psutil  # noqa: E402
from textual import events  # noqa: E402

from tests.helpers.model_server import Reply, ScriptedModelServer  # noqa: E402
from tests.helpers.scripted_config import scripted_config  # noqa: E402
from turnstone_tui.app.app import TurnstoneApp  # noqa: E402
from turnstone_tui.core.types import ProcessOutcome, ToolResult  # noqa: E402
from turnstone_tui.runtime import Runtime, RuntimeOptions  # noqa: E402
from turnstone_tui.widgets.tool_card import ToolCard  # noqa: E402

SIZE = (120, 36)
LINES = 200_000


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    return psutil.Process().memory_info().rss / (1024 * 1024)


async def make_runtime(server: ScriptedModelServer, tmp: Path) -> Runtime:
    config = scripted_config(
        server.openai_base_url, tmp / "bench.db", context_window=200_000, api_key="bench"
    )
    workdir = tmp / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    options = RuntimeOptions(cwd=workdir, start_mcp=False, start_watches=False, skip_permissions=True)
    return await Runtime.create(config, options=options)


async def wait_for(predicate, limit: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


async def bench_seq(server: ScriptedModelServer, tmp: Path) -> dict[str, float]:
    server.script([Reply.tools([("bash", {"command": f"seq 1 {LINES}"}, "call_seq")]), Reply.text("done")])
    runtime = await make_runtime(server, tmp)
    app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
    figures: dict[str, float] = {}
    try:
        async with app.run_test(size=SIZE) as pilot:
            await asyncio.wait_for(app.wait_ready(), 20)
            rss_before = current_rss_mb()
            started = time.monotonic()
            app.send_prompt("count")
            ok = await wait_for(
                lambda: (c := app.chat.tool_card("call_seq")) is not None and c.result is not None, 60
            )
            figures["seq_seconds"] = time.monotonic() - started
            await pilot.pause()
            card: ToolCard | None = app.chat.tool_card("call_seq")
            figures["seq_ok"] = float(
                bool(ok and card and card.output_lines and card.output_lines[-1] == str(LINES))
            )
            figures["card_lines"] = float(len(card.output_lines)) if card else 0.0
            figures["rss_delta_mb"] = current_rss_mb() - rss_before
            await wait_for(lambda: not app.busy, 20)
    finally:
        await runtime.aclose()
    return figures


async def bench_direct(server: ScriptedModelServer, tmp: Path) -> dict[str, float]:
    runtime = await make_runtime(server, tmp)
    app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await asyncio.wait_for(app.wait_ready(), 20)
            panes = app.panes
            panes.start("direct", f"seq 1 {LINES}")
            started = time.monotonic()
            for i in range(1, LINES + 1):
                panes.write("direct", str(i), "stdout")
                if i % 5000 == 0:
                    await asyncio.sleep(0)  # a producer yields like a subprocess reader does
            lines = panes.finish("direct", ToolResult("[exit code: 0]", process=ProcessOutcome(0)))
            await pilot.pause()
            elapsed = time.monotonic() - started
            return {"direct_seconds": elapsed, "direct_ok": float(lines[-1] == str(LINES))}
    finally:
        await runtime.aclose()


async def bench_keys(server: ScriptedModelServer, tmp: Path) -> dict[str, float]:
    command = 'for i in $(seq 1 400000); do echo "line $i of a busy build log"; done'
    calls = [("bash", {"command": command}, f"call_{n}") for n in range(4)]
    server.script([Reply.tools(calls), Reply.text("done")])
    runtime = await make_runtime(server, tmp)
    app = TurnstoneApp(runtime, cwd=runtime.options.cwd)
    latencies: list[float] = []
    try:
        async with app.run_test(size=SIZE) as pilot:
            await asyncio.wait_for(app.wait_ready(), 20)
            app.send_prompt("build everything")
            await wait_for(
                lambda: (
                    len(app.panes) == 4
                    and all(
                        app.panes.pane(c) and app.panes.pane(c).log_view.total_lines > 1000
                        for c in app.panes.call_ids
                    )
                ),
                30,
            )
            prompt = app.prompt
            prompt.focus()
            await asyncio.sleep(0.05)
            for n in range(60):
                if len(app.panes) < 4:
                    break
                char = "abcdefghij"[n % 10]
                before = prompt.text
                sent = time.monotonic()
                app.post_message(events.Key(char, char))
                await wait_for(lambda b=before: prompt.text != b, 5)
                latencies.append(time.monotonic() - sent)
                await asyncio.sleep(0.02)
            streamed = sum(
                app.panes.pane(c).log_view.total_lines for c in app.panes.call_ids if app.panes.pane(c)
            )
            app.action_cancel_turn()
            await wait_for(lambda: not app.busy, 20)
            await pilot.pause()
    finally:
        await runtime.aclose()
    latencies.sort()
    p95 = latencies[max(0, int(len(latencies) * 0.95) - 1)] if latencies else float("nan")
    return {
        "keys": float(len(latencies)),
        "key_p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "key_p95_ms": p95 * 1000,
        "key_max_ms": max(latencies) * 1000 if latencies else float("nan"),
        "lines_streamed_during_keys": float(streamed),
    }


async def main() -> None:
    with ScriptedModelServer() as server, tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        seq = await bench_seq(server, tmp / "seq")
        peak_after_seq = peak_rss_mb()
        direct = await bench_direct(server, tmp / "direct")
        keys = await bench_keys(server, tmp / "keys")
    print(
        f"seq 1 {LINES} through the bash tool into a pane: {seq['seq_seconds']:.2f} s "
        f"(target < 2 s), result correct: {bool(seq['seq_ok'])}, card keeps {int(seq['card_lines'])} lines"
    )
    print(
        f"  RSS growth during the run: {seq['rss_delta_mb']:.1f} MB; process peak RSS: {peak_after_seq:.0f} MB "
        "(target < 250 MB)"
    )
    print(
        f"{LINES} lines written straight into ParallelPanes.write: {direct['direct_seconds']:.2f} s, "
        f"correct: {bool(direct['direct_ok'])}"
    )
    print(
        f"key latency while 4 panes stream ({int(keys['keys'])} keys, "
        f"{int(keys['lines_streamed_during_keys'])} lines streamed): p50 {keys['key_p50_ms']:.1f} ms, "
        f"p95 {keys['key_p95_ms']:.1f} ms (target < 50 ms), max {keys['key_max_ms']:.1f} ms"
    )
    print(f"peak RSS of the whole bench process: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
