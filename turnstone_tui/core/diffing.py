"""Unified diffs whose cost stays linear whatever the text: difflib is quadratic (or worse) on
repetitive lines, and a model can write such a file and then overwrite it (two 100,000-line files
of shuffled repeated lines kept difflib busy for minutes, on the event loop, at prepare time).

The common leading and trailing lines are cut off first (cheap). If what is left is small enough
(``MAX_DIFF_WORK`` line pairs), difflib diffs the texts as usual; otherwise the changed middle is
shown as one hunk that removes the old lines and adds the new ones: a valid unified diff, not a
minimal one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

MAX_DIFF_WORK = 25_000_000  # (changed old lines) x (changed new lines) difflib may compare


def _range(start: int, stop: int) -> str:
    """As difflib writes a hunk range (1-based start, length; an empty range names the line before)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def diff_lines(
    a: Sequence[str], b: Sequence[str], from_name: str, to_name: str, context: int = 3
) -> Iterator[str]:
    """``difflib.unified_diff(a, b, ...)``'s lines, or one replace hunk when that would cost too much."""
    shortest = min(len(a), len(b))
    head = 0
    while head < shortest and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shortest - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    changed_a, changed_b = len(a) - head - tail, len(b) - head - tail
    if changed_a * changed_b <= MAX_DIFF_WORK:
        yield from difflib.unified_diff(a, b, from_name, to_name, n=context)
        return
    start = max(head - context, 0)
    end_a = min(len(a), head + changed_a + context)
    end_b = min(len(b), head + changed_b + context)
    yield f"--- {from_name}\n"
    yield f"+++ {to_name}\n"
    yield f"@@ -{_range(start, end_a)} +{_range(start, end_b)} @@\n"
    for line in a[start:head]:
        yield " " + line
    for line in a[head : head + changed_a]:
        yield "-" + line
    for line in b[head : head + changed_b]:
        yield "+" + line
    for line in a[head + changed_a : end_a]:
        yield " " + line
