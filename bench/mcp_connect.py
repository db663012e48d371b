"""Connect time of 10 stdio MCP servers started concurrently, against one server's start time.

Usage: python bench/mcp_connect.py [--servers 10] [--runs 3]

Each run builds a fresh McpManager, calls start() and wait_ready(), and measures until every server
is connected (initialize + tools/resources/prompts lists). The target is that 10 servers take about
as long as one (ratio near 1), not ten times as long. On a loaded 2-core machine the servers'
Python start-up (CPU-bound) does not fully overlap, so expect a ratio above 1 there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from turnstone_tui.mcp.config import ServerConfig  # noqa: E402
from turnstone_tui.mcp.manager import McpManager, ServerState  # noqa: E402

DEMO = ROOT / "tests" / "helpers" / "mcp_servers" / "demo_server.py"


def servers(count: int) -> dict[str, ServerConfig]:
    return {
        f"s{i}": ServerConfig(f"s{i}", "stdio", command=sys.executable, args=(str(DEMO), "--name", f"s{i}"))
        for i in range(count)
    }


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def connect_once(count: int) -> tuple[float, float]:
    """(wall seconds until all connected, CPU seconds the server processes used in total)."""
    cpu_before = children_cpu()
    manager = McpManager(servers(count), connect_timeout=60.0)
    started = time.perf_counter()
    await manager.start()
    await manager.wait_ready(90)
    elapsed = time.perf_counter() - started
    states = [s.state for s in manager.statuses()]
    await manager.aclose()
    if any(s is not ServerState.CONNECTED for s in states):
        raise SystemExit(f"not every server connected: {states}")
    return elapsed, children_cpu() - cpu_before


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    single: list[float] = []
    many: list[float] = []
    many_cpu: list[float] = []
    for run in range(args.runs):
        single.append((await connect_once(1))[0])
        wall, cpu = await connect_once(args.servers)
        many.append(wall)
        many_cpu.append(cpu)
        print(
            f"run {run + 1}: 1 server {single[-1]:.3f}s, {args.servers} servers {wall:.3f}s "
            f"(server processes used {cpu:.2f}s CPU)"
        )
    one = statistics.median(single)
    all_ = statistics.median(many)
    cpu = statistics.median(many_cpu)
    print(f"median connect time, 1 server:   {one:.3f}s")
    print(f"median connect time, {args.servers} servers: {all_:.3f}s (started concurrently)")
    print(
        f"ratio ({args.servers} servers / 1 server): {all_ / one:.2f}  (one after another would be ~{args.servers})"
    )
    print(
        f"CPU floor: the {args.servers} server processes need {cpu:.2f}s CPU on {cores} core(s), "
        f"so at least {cpu / cores:.2f}s wall whatever the client does"
    )


if __name__ == "__main__":
    asyncio.run(main())
