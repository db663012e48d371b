"""The <think> splitter must survive tags cut at any point between chunks."""

from __future__ import annotations

import pytest

from turnstone_tui.providers.think_tags import ThinkTagParser

TEXT = "Intro <think>step 1, step 2</think>The answer is <b>4</b>."


def _run(chunks: list[str]) -> tuple[str, str]:
    parser = ThinkTagParser()
    pieces = [p for c in chunks for p in parser.feed(c)] + parser.flush()
    content = "".join(t for k, t in pieces if k == "content")
    reasoning = "".join(t for k, t in pieces if k == "reasoning")
    return content, reasoning


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 6, 7, 8, 11, len(TEXT)])
def test_tags_split_at_every_chunk_size(size: int) -> None:
    chunks = [TEXT[i : i + size] for i in range(0, len(TEXT), size)]
    assert _run(chunks) == ("Intro The answer is <b>4</b>.", "step 1, step 2")


def test_every_single_split_point() -> None:
    for cut in range(1, len(TEXT)):
        assert _run([TEXT[:cut], TEXT[cut:]]) == ("Intro The answer is <b>4</b>.", "step 1, step 2"), cut


def test_unclosed_think_stays_reasoning_and_partial_tag_is_flushed() -> None:
    assert _run(["<think>still going", " on </thi"]) == ("", "still going on </thi")
    assert _run(["a < b and x <thi"]) == ("a < b and x <thi", "")


def test_multiple_think_blocks() -> None:
    assert _run(["<think>a</think>b<think>c</think>d"]) == ("bd", "ac")
