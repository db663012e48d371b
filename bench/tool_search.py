"""Benchmark client-side tool search: BM25 over 2,000 synthetic tool descriptions.

Run: ``.venv/bin/python bench/tool_search.py [--tools 2000] [--queries 500]``
Prints the index build time and the median / p95 time per query (target: < 2 ms a query).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnstone_tui.core.tool_search import ToolSearchManager  # noqa: E402

SERVICES = [f"svc{n}" for n in range(80)] + ["github", "slack", "jira", "calendar", "postgres", "stripe"]
VERBS = ["create", "list", "delete", "update", "get", "search", "sync", "export", "import", "archive"]


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size * 2)}
    return sorted(words)[:size]


def synthetic_tools(count: int, rng: random.Random) -> list[dict]:
    words = vocabulary(rng)
    tools = []
    for i in range(count):
        service, verb = rng.choice(SERVICES), rng.choice(VERBS)
        obj = rng.choice(words)
        description = " ".join(rng.choice(words) for _ in range(rng.randint(15, 40)))
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": f"mcp__{service}__{verb}_{obj}_{i}",
                    "description": f"{verb.capitalize()} {obj} objects in {service}. {description}",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        )
    return tools


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(1234)
    tools = synthetic_tools(args.tools, rng)
    words = [w for t in tools for w in t["function"]["description"].split()]

    started = time.perf_counter()
    manager = ToolSearchManager([], tools, mode="on", max_results=5)
    build_ms = (time.perf_counter() - started) * 1000

    queries = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 5))) for _ in range(args.queries)]
    for q in queries[:20]:  # warm up
        manager.search(q)
    times: list[float] = []
    hits = 0
    for q in queries:
        t0 = time.perf_counter()
        found = manager.search(q)
        times.append((time.perf_counter() - t0) * 1000)
        hits += bool(found)
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    median = statistics.median(times)
    print(f"tools: {len(tools)}  queries: {len(queries)}  queries with results: {hits}")
    print(f"index build: {build_ms:.1f} ms")
    print(f"per query: median {median:.3f} ms, p95 {p95:.3f} ms, max {times[-1]:.3f} ms (target < 2 ms)")
    return 0 if p95 < 2.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
