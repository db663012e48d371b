"""Bench: recall over 100k stored messages (issue 13, row 9).

Builds a database of ``--messages`` (default 100,000) messages in 100 sessions through the storage
API (``Storage.append_messages``): Zipf-distributed words, so a query finds from a handful to tens
of thousands of messages, as words in real conversations do. Then:

- the search itself (``Storage.search_messages``, what ``/history QUERY`` and the ``recall`` tool
  run): p50 / p95 / max over rounds of a query mix (rare, middling, common, two-word), with the
  number of messages each query matches;
- in a real terminal (``bench/terminal.py``): ``/history QUERY`` typed into the real console
  script opened on that database, enter -> the results on screen; the floor, in the same run, is
  ``/history`` of a word that matches nothing (the same command and drawing, no search work).

Goal: search p95 < 20 ms.

Run: ``.venv/bin/python bench/terminal_recall.py [--rounds 20] [--busy [N]] [--db PATH]``
(``--db``: keep the built database there and reuse it on the next run).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.terminal import (  # noqa: E402
    READY_MARK,
    Terminal,
    add_busy_argument,
    busy_context,
    console_script,
    hermetic_env,
    machine_label,
    percentile,
    summary_ms,
    verdict,
    write_app_config,
)
from turnstone_tui.storage.db import Storage  # noqa: E402

COLS, ROWS = 120, 36
GOAL = 0.020
SESSIONS = 100
VOCABULARY = 30_000
COMMON = (
    "the a to of and in is it that for you this with on file test run error function value "
    "python bash output line config change"
).split()
# (query, what kind of query it is)
QUERIES = [
    ("w7", "common word"),
    ("file", "very common word"),
    ("w60", "middling word"),
    ("w900", "rare word"),
    ("w12000", "very rare word"),
    ("test error", "two common words"),
    ("w3 w25", "two words"),
]
NO_MATCH = "zzqxnomatch"


def _message_text(rng: random.Random, cumulative: list[float], words: list[str]) -> str:
    count = rng.randint(5, 120)
    return " ".join(
        rng.choice(COMMON) if rng.random() < 0.35 else rng.choices(words, cum_weights=cumulative)[0]
        for _ in range(count)
    )


async def build_database(path: Path, messages: int) -> None:
    rng = random.Random(13)
    words = [f"w{i}" for i in range(VOCABULARY)]
    cumulative = list(itertools.accumulate(1 / (i + 1) for i in range(VOCABULARY)))
    storage = await Storage.open(path)
    try:
        per_session = max(1, messages // SESSIONS)
        roles = ("user", "assistant")
        for number in range(SESSIONS):
            session = await storage.create_session(f"bench{number:04d}", name=f"bench session {number}")
            batch = [
                {"role": roles[i % 2], "content": _message_text(rng, cumulative, words)}
                for i in range(per_session)
            ]
            await storage.append_messages(session, batch)
            if number % 10 == 9:
                print(f"  built {(number + 1) * per_session} messages", flush=True)
    finally:
        await storage.close()


async def measure_search(path: Path, rounds: int) -> tuple[list[float], dict[str, tuple[int, float]]]:
    storage = await Storage.open(path)
    try:
        counts: dict[str, tuple[int, float]] = {}
        for query, _ in QUERIES:
            fts = " ".join(f'"{w}"' for w in query.split())
            async with storage.conn.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (fts,)
            ) as cur:
                row = await cur.fetchone()
            counts[query] = (int(row[0]) if row else 0, 0.0)
        samples: list[float] = []
        per_query: dict[str, list[float]] = {query: [] for query, _ in QUERIES}
        await storage.search_messages("warm up", limit=30)
        for _ in range(rounds):
            for query, _ in QUERIES:
                started = time.perf_counter()
                await storage.search_messages(query, limit=30)
                elapsed = time.perf_counter() - started
                samples.append(elapsed)
                per_query[query].append(elapsed)
        return samples, {q: (counts[q][0], percentile(per_query[q], 50)) for q, _ in QUERIES}
    finally:
        await storage.close()


def measure_terminal(db: Path, tmp: Path, rounds: int) -> tuple[list[float], list[float]]:
    home, work = tmp / "home", tmp / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    # no model is asked: /history is answered from the database
    config = write_app_config(tmp / "config.toml", "http://127.0.0.1:9/v1", db)
    app = Terminal(
        [console_script(), "--config", str(config)], cols=COLS, rows=ROWS, env=hermetic_env(home), cwd=work
    )
    searched: list[float] = []
    floor: list[float] = []
    with app:
        if app.wait_for(lambda screen: READY_MARK in screen.text, 120) is None:
            raise SystemExit(f"the app did not get ready:\n{app.text()}")
        time.sleep(2.0)
        for number in range(rounds):
            for query, expect, into in (
                (QUERIES[number % len(QUERIES)][0], "for ", searched),
                (NO_MATCH, "No messages match", floor),
            ):
                app.send("\x0c")  # ctrl+l: /clear, so the next result is the only one on screen
                app.wait_for(lambda screen: "/history" not in screen.text, 30)
                time.sleep(0.2)
                command = f"/history {query}"
                app.send(command)
                app.wait_for(lambda screen, c=command: c in screen.text, 30)
                time.sleep(0.3)  # let the completion menu settle
                sent = app.send(b"\r")
                shown = app.wait_for(
                    lambda screen, e=expect, q=query: any(e in line and q in line for line in screen.lines),
                    30,
                )
                if shown is None:
                    raise SystemExit(f"no results for {query!r}:\n{app.text()}")
                into.append(shown - sent)
    return searched, floor


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20, help="rounds of the query mix")
    parser.add_argument("--terminal-rounds", type=int, default=14)
    parser.add_argument("--db", type=Path, help="build the database here once and reuse it")
    add_busy_argument(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="turnstone-recall-") as tmp_name:
        tmp = Path(tmp_name)
        db = args.db or tmp / "recall.db"
        if not db.exists():
            print(f"building {args.messages} messages through the storage API ...", flush=True)
            started = time.monotonic()
            asyncio.run(build_database(db, args.messages))
            print(f"  built in {time.monotonic() - started:.0f} s", flush=True)
        with busy_context(args.busy):
            samples, per_query = asyncio.run(measure_search(db, args.rounds))
            searched, floor = measure_terminal(db, tmp, args.terminal_rounds)
    machine = machine_label(args.busy)
    print()
    print(f"recall over {args.messages} messages, {machine}")
    for query, kind in QUERIES:
        hits, p50 = per_query[query]
        print(f"  {query!r:14} {kind:18} {hits:6} matches  p50 {p50 * 1000:6.1f} ms")
    print(f"  search (Storage.search_messages)      {summary_ms(samples)}")
    print(f"  /history QUERY -> results on screen   {summary_ms(searched)}")
    print(f"  floor: /history of no match          {summary_ms(floor)}")
    p95 = percentile(samples, 95)
    print(f"  search p95 {p95 * 1000:.1f} ms, goal < 20 ms: {verdict(p95 < GOAL)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
