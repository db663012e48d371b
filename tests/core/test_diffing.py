"""core/diffing.py: unified diffs stay linear on repetitive text and apply like difflib's."""

from __future__ import annotations

import difflib
import re

import pytest

from turnstone_tui.core import diffing
from turnstone_tui.core.diffing import diff_lines


def apply(a: list[str], diff: list[str]) -> list[str]:
    """Apply a unified diff to ``a`` (enough of patch(1) to check the hunks)."""
    out: list[str] = []
    pos = 0
    for i, line in enumerate(diff):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if not m:
            continue
        start, length = int(m.group(1)), int(m.group(2) or 1)
        begin = start - 1 if length else start
        out.extend(a[pos:begin])
        pos = begin
        for body in diff[i + 1 :]:
            if body.startswith("@@"):
                break
            if body[0] in " -":
                assert a[pos] == body[1:]
                pos += 1
            if body[0] in " +":
                out.append(body[1:])
    return out + a[pos:]


def shuffled(n: int, step: int) -> list[str]:
    return [f"a{(i * step) % 1000}\n" for i in range(n)]


def test_a_repetitive_rewrite_is_one_linear_hunk_that_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    """100,000 lines of shuffled repeated lines kept difflib busy for minutes (on the event loop,
    when write_file previewed an overwrite); difflib is not even called now."""

    def refuse(*_args: object, **_kw: object) -> None:
        raise AssertionError("difflib called on a huge middle")

    monkeypatch.setattr(diffing.difflib, "unified_diff", refuse)
    a = ["head\n", *shuffled(100_000, 1), "tail\n"]
    b = ["head\n", *shuffled(100_000, 7), "tail\n"]
    diff = list(diff_lines(a, b, "a/f", "b/f"))
    assert diff[:3] == ["--- a/f\n", "+++ b/f\n", "@@ -1,100002 +1,100002 @@\n"]
    assert apply(a, diff) == b


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (["x\n", "y\n", "z\n"], ["x\n", "Y\n", "z\n"]),
        ([], ["new\n"]),
        (["gone\n"], []),
        ([f"{i}\n" for i in range(50)], [f"{i}\n" for i in range(50) if i % 7]),
        (["no newline"], ["no newline", "more"]),
    ],
)
def test_small_changes_are_difflibs_own_diff(a: list[str], b: list[str]) -> None:
    assert list(diff_lines(a, b, "a", "b")) == list(difflib.unified_diff(a, b, "a", "b"))


def test_the_replace_hunk_keeps_context_and_applies_at_the_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffing, "MAX_DIFF_WORK", 0)  # every change takes the linear path
    for a, b in (
        (["x\n", "y\n", "z\n"], ["x\n", "Y\n", "z\n"]),
        ([], ["new\n"]),
        (["gone\n"], []),
        ([f"{i}\n" for i in range(50)], [f"{i}\n" for i in range(50) if i % 7]),
    ):
        diff = list(diff_lines(a, b, "a", "b"))
        assert apply(a, diff) == b, (a, b, diff)
