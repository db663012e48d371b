"""The raw-terminal floor for the per-turn bench: for each line typed, write the next canned
answer (a JSON list of strings, the file named on the command line) to the terminal at once.

What a program that does nothing but print costs in the same pseudo-terminal and harness.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    answers = json.loads(open(sys.argv[1], encoding="utf-8").read())
    print("ready", flush=True)
    for text in answers:
        if not sys.stdin.readline():
            return
        sys.stdout.write(text.replace("\n", "\r\n") + "\r\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
