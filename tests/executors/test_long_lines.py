"""Bounded memory for output (issue 15 item 6): a line longer than LINE_CAP is cut there and marked,
through the real bash tool and, as a property over random text and chunkings, through the pump."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.executors.exec_helpers import Recorder, execute, make_ctx, prepare
from turnstone_tui.executors import proc_group
from turnstone_tui.executors.bash import PREPARERS
from turnstone_tui.executors.proc_group import LINE_CAP, cut_note

pytestmark = pytest.mark.timeout(120)


async def test_a_long_line_is_cut_at_the_cap_and_marked(tmp_path: Path) -> None:
    size = 3_000_000
    command = f"echo first; head -c {size} /dev/zero | tr '\\0' x; echo; echo last"
    rec = Recorder()
    result = await execute(await prepare(PREPARERS, make_ctx(tmp_path), "bash", command=command), rec)
    lines = rec.of("stdout")
    assert lines[0] == "first" and lines[-1] == "last" and len(lines) == 3
    assert lines[1] == "x" * LINE_CAP + cut_note(size - LINE_CAP)
    assert "more characters not kept]" in result.text
    assert result.text.endswith("[exit code: 0]")


async def test_a_long_last_line_without_newline_is_cut_too(tmp_path: Path) -> None:
    rec = Recorder()
    command = "head -c 200000 /dev/zero | tr '\\0' y"
    await execute(await prepare(PREPARERS, make_ctx(tmp_path), "bash", command=command), rec)
    assert rec.of("stdout") == ["y" * LINE_CAP + cut_note(200000 - LINE_CAP)]


class _Lines:
    def __init__(self) -> None:
        self.text = ""

    def feed(self, text: str) -> None:
        self.text += text if text.endswith("\n") else text + "\n"


def _pump_all(chunks: list[bytes]) -> str:
    async def go() -> str:
        reader = asyncio.StreamReader()
        for chunk in chunks:
            reader.feed_data(chunk)
        reader.feed_eof()
        sink = _Lines()
        await proc_group._pump(reader, sink)
        return sink.text

    return asyncio.run(go())


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab\u00e9\u4e2d", max_size=40), min_size=1, max_size=12),
    cuts=st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=40),
)
def test_pump_property_lines_survive_or_are_cut_and_marked(lines: list[str], cuts: list[int]) -> None:
    cap, chunk = 16, 8  # a small cap (the chunk may not exceed it: lines inside one chunk are short)
    data = "\n".join(lines).encode()
    pieces, at = [], 0
    for n in cuts * (len(data) // max(sum(cuts), 1) + 1):
        if at >= len(data):
            break
        pieces.append(data[at : at + n])
        at += n
    pieces.append(data[at:])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(proc_group, "LINE_CAP", cap)
        mp.setattr(proc_group, "READ_CHUNK", chunk)
        out = _pump_all([p for p in pieces if p])
    segments = "\n".join(lines).split("\n")
    if segments[-1] == "":
        segments.pop()  # text ending in a newline has no unterminated last line
    expected = [line if len(line) <= cap else line[:cap] + cut_note(len(line) - cap) for line in segments]
    assert out == "".join(line + "\n" for line in expected)
