"""Keep the head and tail of an over-long tool output, with a notice in the middle."""

from __future__ import annotations


def truncate_output(text: str, limit: int) -> str:
    """Return ``text`` unchanged when it fits in ``limit`` characters, else head + notice + tail."""
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    head, tail = text[:half], text[len(text) - half :]
    omitted = len(text) - len(head) - len(tail)
    omitted_lines = text.count("\n", half, len(text) - half)
    notice = f"\n\n[... truncated: {omitted:,} characters ({omitted_lines:,} lines) omitted ...]\n\n"
    return head + notice + tail


class HeadTailBuffer:
    """Bounded accumulator for streamed output: keeps the first and last ``limit/2`` characters.

    Memory stays O(limit) however much is written; ``text()`` renders like truncate_output.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._half = self.limit // 2
        self._head: list[str] = []
        self._head_len = 0
        self._tail: list[str] = []
        self._tail_len = 0
        self.total_chars = 0
        self.total_lines = 0
        self.dropped_chars = 0
        self.dropped_lines = 0

    def write(self, chunk: str) -> None:
        self.total_chars += len(chunk)
        self.total_lines += chunk.count("\n")
        if self._head_len < self._half:
            room = self._half - self._head_len
            self._head.append(chunk[:room])
            self._head_len += min(room, len(chunk))
            chunk = chunk[room:]
            if not chunk:
                return
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        if self._tail_len > self._half * 2:
            joined = "".join(self._tail)
            cut = len(joined) - self._half
            self.dropped_chars += cut
            self.dropped_lines += joined.count("\n", 0, cut)
            self._tail = [joined[cut:]]
            self._tail_len = self._half

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if self.total_chars <= self.limit:
            return head + tail
        dropped_chars, dropped_lines = self.dropped_chars, self.dropped_lines
        if len(tail) > self._half:
            extra = len(tail) - self._half
            dropped_lines += tail.count("\n", 0, extra)
            dropped_chars += extra
            tail = tail[extra:]
        notice = (
            f"\n\n[... truncated: {dropped_chars:,} characters ({dropped_lines:,} lines) omitted ...]\n\n"
        )
        return head + notice + tail
