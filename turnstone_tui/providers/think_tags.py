"""Split ``<think>...</think>`` blocks out of streamed content.

Local models (Qwen, DeepSeek-R1 distills, SmolLM…) often put their reasoning inside the content
between think tags. The tags may arrive split across chunks (``"<thi"`` + ``"nk>"``), so the
parser keeps back any tail that could still become a tag.
"""

from __future__ import annotations

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkTagParser:
    """Stateful splitter: feed content chunks, get ``(kind, text)`` pieces back.

    ``kind`` is ``"content"`` or ``"reasoning"``. Call :meth:`flush` at the end of the stream to
    release any held-back text (an unfinished tag prefix is then plain text of its section).
    """

    def __init__(self) -> None:
        self._in_think = False
        self._pending = ""

    @property
    def in_think(self) -> bool:
        return self._in_think

    def feed(self, chunk: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        text = self._pending + chunk
        self._pending = ""
        while text:
            tag = CLOSE_TAG if self._in_think else OPEN_TAG
            kind = "reasoning" if self._in_think else "content"
            pos = text.find(tag)
            if pos >= 0:
                if pos:
                    out.append((kind, text[:pos]))
                text = text[pos + len(tag) :]
                self._in_think = not self._in_think
                continue
            keep = _partial_tag_suffix(text, tag)
            emit = text[: len(text) - keep] if keep else text
            if emit:
                out.append((kind, emit))
            self._pending = text[len(text) - keep :] if keep else ""
            break
        return out

    def flush(self) -> list[tuple[str, str]]:
        if not self._pending:
            return []
        kind = "reasoning" if self._in_think else "content"
        text, self._pending = self._pending, ""
        return [(kind, text)]
