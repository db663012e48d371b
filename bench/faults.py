"""The fault table (issue 15 item 11): every case of the fault suite (tests/faults/cases.py) run
against the real `turnstone-tui` and the scripted model server; per family, how many faults were
tried, how many the session recovered from, and how many committed messages were lost.

Run: ``.venv/bin/python bench/faults.py [--family NAME] [-v]``. Exit status 1 when any case did not
recover or lost a message.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.faults.cases import CASES  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", help="run only this family (e.g. 'kill -9')")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = parser.parse_args()
    cases = [c for c in CASES if args.family in (None, c.family)]
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # tried, recovered, committed, lost
    failures: list[str] = []
    started = time.monotonic()
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="turnstone-fault-") as name:
            try:
                outcome = case.run(Path(name))
            except Exception as exc:  # noqa: BLE001 - a case that crashed did not recover
                failures.append(f"{case.id}: {type(exc).__name__}: {exc}")
                rows[case.family][0] += 1  # at least one fault that was not survived
                continue
        row = rows[case.family]
        row[0] += outcome.faults
        row[1] += outcome.faults if outcome.recovered else 0
        row[2] += outcome.committed
        row[3] += outcome.lost
        if not outcome.recovered or outcome.lost:
            failures.append(f"{case.id}: {outcome.detail or f'lost {outcome.lost}'}")
        if args.verbose:
            state = "recovered" if outcome.recovered else "NOT RECOVERED"
            print(
                f"  {case.id:60} {state:13} committed {outcome.committed:3}  lost {outcome.lost}", flush=True
            )
    print(f"\n{'family':20} {'tried':>6} {'recovered':>10} {'messages':>9} {'lost':>5}")
    totals = [0, 0, 0, 0]
    for family, row in rows.items():
        print(f"{family:20} {row[0]:6} {row[1]:10} {row[2]:9} {row[3]:5}")
        totals = [a + b for a, b in zip(totals, row, strict=True)]
    print(f"{'all':20} {totals[0]:6} {totals[1]:10} {totals[2]:9} {totals[3]:5}")
    print(f"({time.monotonic() - started:.0f} s; 'messages': committed before the faults, all checked after)")
    for failure in failures:
        print(f"FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
