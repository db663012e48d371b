"""Benchmark: stream ``seq 1 N`` through the bash tool (prepare + execute) into a no-op UI.

Every line goes through the tool's emit_lines into ``NullUI.on_tool_output`` as the engine routes it.
Prints lines/s (median of several runs) and peak RSS. Target: > 200,000 lines/s, RSS bounded.

    .venv/bin/python bench/bash_stream.py [--lines 200000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnstone_tui.config import Config  # noqa: E402
from turnstone_tui.core.protocol import NullUI  # noqa: E402
from turnstone_tui.core.registry import default_registry  # noqa: E402
from turnstone_tui.core.tools import ToolContext  # noqa: E402
from turnstone_tui.core.types import ExecContext  # noqa: E402
from turnstone_tui.executors.bash import PREPARERS  # noqa: E402

TARGET_LINES_PER_S = 200_000


async def one_run(ctx: ToolContext, lines: int) -> tuple[float, int]:
    ui = ctx.ui
    call_id = "bench"
    count = 0

    def emit(lines: list[str], stream: str) -> None:
        nonlocal count
        count += len(lines)
        ui.on_tool_output(call_id, lines, stream)  # type: ignore[arg-type]

    started = time.perf_counter()
    item = await PREPARERS["bash"](ctx, call_id, {"command": f"seq 1 {lines}"})
    assert item.execute is not None, item.error
    result = await item.execute(ExecContext(call_id, emit))
    elapsed = time.perf_counter() - started
    if count != lines or result.is_error:
        raise SystemExit(f"bad run: {count} lines emitted, result: {result.text[-200:]}")
    return elapsed, count


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(Config(), default_registry(), Path(tmp), "bench", NullUI())
        await one_run(ctx, 1000)  # warm-up
        rss_before = psutil.Process().memory_info().rss
        rates = []
        for i in range(args.runs):
            elapsed, count = await one_run(ctx, args.lines)
            rates.append(count / elapsed)
            print(f"run {i + 1}: {count:,} lines in {elapsed * 1000:.1f} ms = {count / elapsed:,.0f} lines/s")
        rss_after = psutil.Process().memory_info().rss
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    median = statistics.median(rates)
    print(f"median: {median:,.0f} lines/s (target > {TARGET_LINES_PER_S:,})")
    print(
        f"peak RSS: {peak_kb / 1024:.1f} MB; RSS change over the runs: {(rss_after - rss_before) / 1e6:+.1f} MB"
    )
    ok = median > TARGET_LINES_PER_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
