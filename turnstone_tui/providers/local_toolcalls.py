"""Find tool calls in the plain text a small local model writes.

Small GGUF models have no native function calling: when they call a tool at all, they write it as
text, either Hermes/Qwen style ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` or as a
bare JSON object (optionally in a code fence) that is the whole answer. Calls are only accepted
for the tools the request offered. This module turns such
text into :class:`ParsedToolCall` values and leaves everything else as text. Malformed calls stay
plain text; nothing here raises on model output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]{0,127}$")
_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)
_MAX_FENCE_LINE = 16  # "```json" plus slack: a longer first line is not a JSON fence


@dataclass(frozen=True, slots=True)
class ParsedToolCall:
    name: str
    arguments: str  # a JSON object, as text


@dataclass(frozen=True, slots=True)
class TextPiece:
    text: str


ParsedPiece = TextPiece | ParsedToolCall


def _strip_fence(text: str) -> str:
    match = _FENCE_RE.match(text.strip())
    return match.group("body").strip() if match else text.strip()


def _one_call(obj: Any, known_names: Collection[str] | None) -> ParsedToolCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI shape {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name.strip()):
        return None
    name = name.strip()
    if known_names is not None and name not in known_names:
        return None
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return ParsedToolCall(name=name, arguments=json.dumps(args, ensure_ascii=False))


def parse_tool_call_payload(
    payload: str, known_names: Collection[str] | None = None
) -> list[ParsedToolCall] | None:
    """Parse JSON text holding one tool call object or a list of them.

    Returns None unless every object is a well-formed call (a valid ``name``, and ``arguments`` or
    ``parameters`` that is an object or a JSON string of one) whose name is in ``known_names``
    when that is given.
    """
    try:
        data = json.loads(_strip_fence(payload))
    except ValueError:
        return None
    items = data if isinstance(data, list) else [data]
    if not items:
        return None
    calls = [_one_call(item, known_names) for item in items]
    if any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ToolCallStreamParser:
    """Stateful splitter over streamed model text.

    ``feed`` returns the pieces that are already certain; ``finish`` releases the rest. Text is
    passed through as soon as it cannot be part of a tool call, so plain chat streams with no
    noticeable delay. With ``known_names`` (the tools offered in the request), a call must name
    one of them, in ``<tool_call>`` tags or as a bare JSON answer; a call naming anything else
    stays text, so a hallucinated tool never reaches the engine. Without ``known_names`` only
    tagged calls count (any valid name), and a JSON answer is just text.
    """

    def __init__(self, known_names: Collection[str] | None = None) -> None:
        self._names = known_names
        self._mode = "start" if known_names else "text"  # start | bare | text | tag
        self._buffer = ""

    def feed(self, chunk: str) -> list[ParsedPiece]:
        self._buffer += chunk
        out: list[ParsedPiece] = []
        if self._mode == "start":
            self._decide_start()
        if self._mode in ("text", "tag"):
            self._scan(out)
        return out

    def finish(self) -> list[ParsedPiece]:
        out: list[ParsedPiece] = []
        text, self._buffer = self._buffer, ""
        if self._mode in ("start", "bare"):
            calls = parse_tool_call_payload(text, self._names) if text.strip() else None
            if calls:
                out.extend(calls)
            elif text:
                out.append(TextPiece(text))
        elif self._mode == "tag":
            # The model often stops (end-of-turn token) before writing the closing tag.
            calls = parse_tool_call_payload(text, self._names)
            out.extend(calls if calls else [TextPiece(OPEN_TAG + text)])
        elif text:
            out.append(TextPiece(text))
        self._mode = "text"
        return out

    def _decide_start(self) -> None:
        head = self._buffer.lstrip()
        if not head:
            return
        if head.startswith("{"):
            self._mode = "bare"
            return
        if head.startswith("```"):
            first_line, newline, rest = head.partition("\n")
            if not newline:
                if len(first_line) > _MAX_FENCE_LINE:
                    self._mode = "text"
                return
            rest = rest.lstrip()
            if not rest:
                return
            self._mode = "bare" if rest.startswith("{") and len(first_line) <= _MAX_FENCE_LINE else "text"
            return
        if "```".startswith(head):
            return
        self._mode = "text"

    def _scan(self, out: list[ParsedPiece]) -> None:
        while self._buffer:
            if self._mode == "text":
                pos = self._buffer.find(OPEN_TAG)
                if pos < 0:
                    keep = _partial_suffix(self._buffer, OPEN_TAG)
                    emit = self._buffer[: len(self._buffer) - keep]
                    if emit:
                        out.append(TextPiece(emit))
                    self._buffer = self._buffer[len(self._buffer) - keep :]
                    return
                if pos:
                    out.append(TextPiece(self._buffer[:pos]))
                self._buffer = self._buffer[pos + len(OPEN_TAG) :]
                self._mode = "tag"
            else:
                pos = self._buffer.find(CLOSE_TAG)
                if pos < 0:
                    return
                payload = self._buffer[:pos]
                self._buffer = self._buffer[pos + len(CLOSE_TAG) :]
                self._mode = "text"
                calls = parse_tool_call_payload(payload, self._names)
                out.extend(calls if calls else [TextPiece(OPEN_TAG + payload + CLOSE_TAG)])


def parse_tool_calls_in_text(text: str, known_names: Collection[str] | None = None) -> list[ParsedPiece]:
    """One-shot form of :class:`ToolCallStreamParser`, merging adjacent text pieces."""
    parser = ToolCallStreamParser(known_names)
    pieces = parser.feed(text) + parser.finish()
    merged: list[ParsedPiece] = []
    for piece in pieces:
        if isinstance(piece, TextPiece) and merged and isinstance(merged[-1], TextPiece):
            merged[-1] = TextPiece(merged[-1].text + piece.text)
        else:
            merged.append(piece)
    return merged
