"""``@path`` mentions in a prompt: the files' contents go to the model with the message.

The user's words stay as typed; each mentioned file that exists is appended as an
``<attached-file>`` block (a directory as a short listing). Everything is bounded: per file, in
total and in number, and a cut file says so inside its block, so the model knows it saw a part.
Binary files are not attached (a note says why). A mention of something that does not exist is
left as plain text (``@someone`` in a sentence is not a file).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE_CHARS = 50_000
MAX_TOTAL_CHARS = 150_000
MAX_FILES = 10
MAX_DIR_ENTRIES = 200

_MENTION = re.compile(r"(?:^|(?<=\s))@(\"[^\"\n]+\"|[^\s@\"]+)")
_TRAILING = ".,;:!?)]}'"
_HEADER = re.compile(r'\n\n<attached-(file|dir) path="([^"]*)" chars="(\d+)">\n')


@dataclass(frozen=True, slots=True)
class Attachment:
    """One mentioned path as it went to the model."""

    mention: str  # as typed, without the @
    path: Path
    kind: str  # "file" | "dir" | "skipped"
    chars: int = 0  # characters attached
    total: int = 0  # characters (file) or entries (dir) there were
    note: str = ""  # why it was cut or skipped

    @property
    def cut(self) -> bool:
        return self.kind != "skipped" and self.chars < self.total

    def describe(self) -> str:
        """One line for the user: what was attached, and whether it was cut."""
        if self.kind == "skipped":
            return f"{self.mention}: not attached ({self.note})"
        unit = "entries" if self.kind == "dir" else "chars"
        size = f"{self.chars:,} {unit}"
        if self.cut:
            return f"{self.mention}: cut to {size} of {self.total:,} ({self.note})"
        return f"{self.mention} ({size})"


@dataclass(slots=True)
class ExpandedPrompt:
    text: str  # what the model receives
    attachments: list[Attachment] = field(default_factory=list)

    def notice(self) -> str:
        """The chat's note about the attachments ("" when nothing was mentioned)."""
        if not self.attachments:
            return ""
        return "Attached: " + "; ".join(a.describe() for a in self.attachments)


def find_mentions(text: str) -> list[str]:
    """The ``@`` mentions of ``text`` (quotes removed), in order, without duplicates."""
    seen: list[str] = []
    for match in _MENTION.finditer(text):
        raw = match.group(1)
        mention = raw[1:-1] if raw.startswith('"') else raw
        if mention and mention not in seen:
            seen.append(mention)
    return seen


def _resolve(cwd: Path, mention: str) -> tuple[str, Path] | None:
    """The mention (minus trailing punctuation if needed) and the path it names, if it exists."""
    candidates = [mention]
    stripped = mention.rstrip(_TRAILING)
    if stripped and stripped != mention:
        candidates.append(stripped)
    for candidate in candidates:
        path = Path(os.path.expanduser(candidate))
        if not path.is_absolute():
            path = cwd / path
        try:
            if path.exists():
                return candidate, path
        except OSError:  # a name too long, a permission problem: not a file we can attach
            continue
    return None


def _read_text(path: Path, limit: int) -> tuple[str, int, str]:
    """(the first ``limit`` characters, the file's length, a note: "" or why it is not attached).

    The length is in characters when the whole file was read, else in bytes (a close bound)."""
    with path.open("rb") as handle:
        head = handle.read(limit * 4 + 4)  # UTF-8: at most 4 bytes a character
        size = handle.seek(0, os.SEEK_END)
    if b"\0" in head[:8192]:
        return "", 0, "binary file"
    text = head.decode("utf-8", errors="replace")
    total = len(text) if size <= len(head) else size
    return text[:limit], total, ""


def _listing(path: Path, limit: int) -> tuple[str, int]:
    entries = []
    with os.scandir(path) as scan:
        for entry in scan:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            entries.append(entry.name + ("/" if is_dir else ""))
    entries.sort(key=lambda name: (not name.endswith("/"), name.lower()))
    return "\n".join(entries[:limit]), len(entries)


def expand_mentions(
    text: str,
    cwd: Path,
    *,
    max_file_chars: int = MAX_FILE_CHARS,
    max_total_chars: int = MAX_TOTAL_CHARS,
    max_files: int = MAX_FILES,
) -> ExpandedPrompt:
    """Attach the files and directories ``text`` mentions with ``@`` (blocking: run in a thread)."""
    result = ExpandedPrompt(text)
    blocks: list[str] = []
    budget = max_total_chars
    for mention in find_mentions(text):
        resolved = _resolve(cwd, mention)
        if resolved is None:
            continue
        name, path = resolved
        shown = name.replace('"', "'")
        if len(result.attachments) >= max_files:
            result.attachments.append(Attachment(name, path, "skipped", note=f"more than {max_files} files"))
            continue
        try:
            if path.is_dir():
                listing, count = _listing(path, MAX_DIR_ENTRIES)
                shown_count = min(count, MAX_DIR_ENTRIES)
                note = f"the first {MAX_DIR_ENTRIES} entries" if count > MAX_DIR_ENTRIES else ""
                cut_line = f"\n[cut: {shown_count} of {count} entries listed]" if note else ""
                blocks.append(_block("dir", shown, listing + cut_line))
                result.attachments.append(Attachment(name, path, "dir", shown_count, count, note))
                continue
            if not path.is_file():
                result.attachments.append(Attachment(name, path, "skipped", note="not a regular file"))
                continue
            limit = min(max_file_chars, budget)
            if limit <= 0:
                note = f"the attachments reached {max_total_chars:,} characters"
                result.attachments.append(Attachment(name, path, "skipped", note=note))
                continue
            content, total, note = _read_text(path, limit)
        except OSError as exc:
            result.attachments.append(Attachment(name, path, "skipped", note=exc.strerror or str(exc)))
            continue
        if note:
            result.attachments.append(Attachment(name, path, "skipped", note=note))
            continue
        budget -= len(content)
        cut_note = ""
        cut_line = ""
        if len(content) < total:
            cut_note = "per-file limit" if limit == max_file_chars else "total attachment limit"
            cut_line = f"\n[cut: the first {len(content):,} of {total:,} characters are attached]"
        blocks.append(_block("file", shown, content + cut_line))
        result.attachments.append(Attachment(name, path, "file", len(content), total, cut_note))
    if blocks:
        result.text = text + "".join(f"\n\n{block}" for block in blocks)
    return result


def _block(kind: str, path: str, body: str) -> str:
    # The length makes the block parseable back whatever the file holds (even a closing tag).
    return f'<attached-{kind} path="{path}" chars="{len(body)}">\n{body}\n</attached-{kind}>'


def strip_attachments(text: str) -> tuple[str, list[str]]:
    """A stored prompt without its attached blocks, and the attached paths (for showing it again)."""
    for header in _HEADER.finditer(text):
        paths = _parse_blocks(text, header.start())
        if paths is not None:
            return text[: header.start()], paths
    return text, []


def _parse_blocks(text: str, start: int) -> list[str] | None:
    """The paths of the blocks from ``start`` to the very end of ``text``; None if that is not all blocks."""
    paths: list[str] = []
    position = start
    while position < len(text):
        header = _HEADER.match(text, position)
        if header is None:
            return None
        kind, path, length = header.group(1), header.group(2), int(header.group(3))
        closing = f"\n</attached-{kind}>"
        end = header.end() + length
        if text[end : end + len(closing)] != closing:
            return None
        paths.append(path)
        position = end + len(closing)
    return paths
