"""read_file and diff_file (read-only, no approval), plus the text/diff helpers edit and write share.

Every file access runs in a worker thread (``asyncio.to_thread``) so a slow disk never blocks the
event loop. Both tools record the read in ``ctx.read_tracker`` so edit_file may follow.
"""

from __future__ import annotations

import asyncio
import base64
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from ..core.diffing import diff_lines
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, Subject, ToolResult
from ..sandbox.gitconfig import LineRedactor, is_git_config, redact_text
from .path_policy import outside_workspace, real_path, secret_refusal, secret_store

MAX_IMAGE_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 2000  # longer lines (minified files) are cut in read_file output
MAX_DIFF_INPUT_BYTES = 20 * 1024 * 1024
SNIFF_BYTES = 8192

IMAGE_EXTENSIONS = {
    ".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".gif": "gif", ".webp": "webp", ".bmp": "bmp",
    ".tif": "tiff", ".tiff": "tiff", ".ico": "ico",
}  # fmt: skip
MIME = {
    "png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "bmp": "image/bmp",
    "tiff": "image/tiff", "ico": "image/x-icon",
}  # fmt: skip


class FileProblem(Exception):
    """A clear, user-facing reason a file cannot be used (missing, directory, binary ...)."""


# --- shared helpers -----------------------------------------------------------------------------


def describe_os_error(path: str, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"{path}: no such file"
    if isinstance(exc, IsADirectoryError):
        return f"{path}: is a directory, not a file (use search, or bash ls)"
    if isinstance(exc, PermissionError):
        return f"{path}: permission denied"
    return f"{path}: {exc.strerror or exc}"


def check_regular_file(path: Path, shown: str) -> None:
    """Raise FileProblem unless ``path`` is an existing regular file."""
    if not path.exists():
        raise FileProblem(f"{shown}: no such file")
    if path.is_dir():
        raise FileProblem(f"{shown}: is a directory, not a file (use search, or bash ls)")
    if not path.is_file():
        raise FileProblem(f"{shown}: not a regular file")


def read_text(path: Path, shown: str, max_bytes: int = MAX_DIFF_INPUT_BYTES) -> str:
    """The whole file as text (newlines preserved); FileProblem for missing, binary or huge files."""
    check_regular_file(path, shown)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise FileProblem(f"{shown}: too large ({size:,} bytes; limit {max_bytes:,})")
        data = path.read_bytes()
    except OSError as exc:
        raise FileProblem(describe_os_error(shown, exc)) from None
    if b"\x00" in data:
        raise FileProblem(f"{shown}: binary file (contains NUL bytes), refused")
    return data.decode("utf-8", errors="surrogateescape")


def unified_diff(old: str, new: str, from_name: str, to_name: str, context: int = 3, limit: int = 0) -> str:
    """A unified diff of two texts; ``limit`` > 0 stops early with a notice once that many chars."""
    lines = diff_lines(
        old.splitlines(keepends=True), new.splitlines(keepends=True), from_name, to_name, context
    )
    return join_diff_lines(lines, limit)


def join_diff_lines(lines: Iterable[str], limit: int = 0) -> str:
    out: list[str] = []
    size = 0
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
        size += len(line)
        if limit and size > limit:
            out.append("\n[... diff cut off at the output limit ...]\n")
            break
    return "".join(out).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def diff_stats(diff: str) -> tuple[int, int]:
    """(added, removed) line counts of a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _positive_int(args: dict[str, Any], key: str) -> int | None | str:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"{key} must be a positive whole number, got {value!r}"
    return value


# --- images -------------------------------------------------------------------------------------


def sniff_image(head: bytes, path: Path) -> str | None:
    """The image format from magic bytes (or the extension when the bytes are inconclusive)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:2] == b"BM" and len(head) >= 26:
        return "bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if head[:4] == b"\x00\x00\x01\x00":
        return "ico"
    ext = IMAGE_EXTENSIONS.get(path.suffix.lower())
    if ext and b"\x00" in head:  # binary with an image extension but unknown magic
        return ext
    return None


def image_dimensions(fmt: str, head: bytes) -> tuple[int, int] | None:
    try:
        if fmt == "png" and head[12:16] == b"IHDR":
            w, h = struct.unpack(">II", head[16:24])
            return w, h
        if fmt == "gif":
            w, h = struct.unpack("<HH", head[6:10])
            return w, h
        if fmt == "bmp":
            w, h = struct.unpack("<ii", head[18:26])
            return w, abs(h)
        if fmt == "ico":
            w, h = head[6] or 256, head[7] or 256
            return w, h
        if fmt == "webp":
            chunk = head[12:16]
            if chunk == b"VP8X":
                w = int.from_bytes(head[24:27], "little") + 1
                h = int.from_bytes(head[27:30], "little") + 1
                return w, h
            if chunk == b"VP8L":
                b = int.from_bytes(head[21:25], "little")
                return (b & 0x3FFF) + 1, ((b >> 14) & 0x3FFF) + 1
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", head[26:30])
                return w & 0x3FFF, h & 0x3FFF
        if fmt == "jpeg":
            return _jpeg_dimensions(head)
    except (struct.error, IndexError):
        return None
    return None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return None


def _read_image(path: Path, shown: str, fmt: str, size: int, vision: bool) -> ToolResult:
    if size > MAX_IMAGE_BYTES:
        return ToolResult(
            f"{shown}: {fmt.upper()} image of {size:,} bytes is larger than the 4 MB limit; refused",
            is_error=True,
        )
    data = path.read_bytes()
    dims = image_dimensions(fmt, data if fmt == "jpeg" else data[:64])
    dim_text = f", {dims[0]}x{dims[1]} pixels" if dims else ""
    description = f"{shown}: {fmt.upper()} image, {size:,} bytes{dim_text}"
    if not vision:
        return ToolResult(description + " (the current model cannot view images; described instead)")
    url = f"data:{MIME[fmt]};base64,{base64.b64encode(data).decode('ascii')}"
    return ToolResult(description, content_parts=[{"type": "image_url", "image_url": {"url": url}}])


# --- read_file ----------------------------------------------------------------------------------


def _bounded_lines(fh: TextIO, cap: int) -> Iterator[tuple[str, int]]:
    """(line, length without its newline) pairs; a line longer than ``cap`` is returned cut, the rest skipped unread."""
    while True:
        part = fh.readline(cap)
        if not part:
            return
        length = len(part)
        if len(part) == cap and not part.endswith("\n"):
            while True:
                more = fh.readline(cap)
                length += len(more)
                if not more or more.endswith("\n"):
                    length -= 1 if more.endswith("\n") else 0
                    break
        elif part.endswith("\n"):
            length -= 1
        yield part, length


REDACTED_NOTE = (
    "[{count} line(s) with a credential (a token in a remote URL, an extraHeader, a password) shown with "
    "REDACTED in its place: credentials must not enter the conversation]\n"
)


def _read_lines(
    path: Path, shown: str, offset: int, limit: int | None, budget: int, redact: bool = False
) -> ToolResult:
    redactor = LineRedactor() if redact else None
    redacted = 0
    out: list[str] = []
    used = 0
    last = offset - 1
    reached_end = True
    total = 0
    with path.open("r", encoding="utf-8", errors="replace", newline=None) as fh:
        for number, (line, length) in enumerate(_bounded_lines(fh, MAX_LINE_CHARS + 1), start=1):
            total = number
            if number < offset and redactor is None:
                continue
            if limit is not None and number >= offset + limit:
                reached_end = False
                break
            if redactor is not None:  # every line up to the shown ones: a value may continue
                cleaned = redactor(line)
                redacted += number >= offset and cleaned != line
                line = cleaned
            if number < offset:
                continue
            line = line.rstrip("\n")
            if length > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + f" [... line cut: {length:,} characters]"
            row = f"{number:>6}\t{line}\n"
            if used + len(row) > budget and out:
                reached_end = False
                break
            out.append(row)
            used += len(row)
            last = number
    if total == 0:
        return ToolResult(f"({shown} is empty)")
    if not out:
        return ToolResult(
            f"{shown}: offset {offset} is past the end of the file ({total} lines)", is_error=True
        )
    if reached_end:
        if offset > 1 or limit is not None:
            out.append(f"[lines {offset}-{last} of {total}]\n")
    else:
        out.append(f"[showing lines {offset}-{last}; more follow: read again with offset={last + 1}]\n")
    if redacted:
        out.append(REDACTED_NOTE.format(count=redacted))
    return ToolResult("".join(out))


def read_file_sync(
    path: Path, shown: str, offset: int, limit: int | None, budget: int, vision: bool, redact: bool = False
) -> ToolResult:
    try:
        check_regular_file(path, shown)
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
        fmt = sniff_image(head, path)
        if fmt is not None:
            return _read_image(path, shown, fmt, size, vision)
        if b"\x00" in head:
            return ToolResult(
                f"{shown}: binary file ({size:,} bytes), not shown; use bash (e.g. xxd {shown} | head) "
                "to inspect it",
                is_error=True,
            )
        return _read_lines(path, shown, offset, limit, budget, redact)
    except FileProblem as exc:
        return ToolResult(str(exc), is_error=True)
    except OSError as exc:
        return ToolResult(describe_os_error(shown, exc), is_error=True)


def _is_own_plan(ctx: ToolContext, real: Path) -> bool:
    """``real`` is this session's plan file (``<data dir>/plans/<session>.md``, which plan_agent
    writes and its result names): read_file reads it without asking, although the data dir around
    it is a secret store. Only that one regular file: no other session's plan, nothing through a
    link planted at the plan's path."""
    if not ctx.session_id:
        return False
    plan = ctx.plan_path()
    try:
        if plan.is_symlink() or not plan.is_file():
            return False
    except OSError:
        return False
    return real == real_path(plan)


async def prepare_read_file(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    shown = require_str(args, "path")
    if shown is None:
        return error_item(call_id, "read_file", args, "read_file: 'path' must be a non-empty string")
    offset = _positive_int(args, "offset")
    limit = _positive_int(args, "limit")
    for problem in (offset, limit):
        if isinstance(problem, str):
            return error_item(call_id, "read_file", args, f"read_file: {problem}")
    path = ctx.resolve(shown)
    real = await asyncio.to_thread(real_path, path)
    own_plan = await asyncio.to_thread(_is_own_plan, ctx, real)
    store = None if own_plan else secret_store(real, [ctx.config.path])
    if store:
        return error_item(call_id, "read_file", args, secret_refusal("read_file", shown, store))
    outside = outside_workspace(real, ctx.cwd) and not own_plan
    start = offset if isinstance(offset, int) else 1
    count = limit if isinstance(limit, int) else None
    budget = max(ctx.config.tools.truncation - 200, 1000)
    vision = ctx.supports_vision
    tracker = ctx.read_tracker
    if not outside:  # runs without asking: an edit_file later in this batch may follow it
        await asyncio.to_thread(tracker.expect, path)

    redact = is_git_config(real)

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        result = await asyncio.to_thread(read_file_sync, path, shown, start, count, budget, vision, redact)
        if not result.is_error:
            tracker.record(path)
        return result

    span = ""
    if offset is not None or limit is not None:
        span = f" (lines {start}-{start + count - 1})" if count else f" (from line {start})"
    where = f" (outside the workspace: {real})" if outside else (f" (-> {real})" if real != path else "")
    return PreparedItem(
        call_id=call_id,
        func_name="read_file",
        args=args,
        header=f"read_file: {shown}{span}{where}",
        preview=str(real) + span,
        needs_approval=outside,  # reads inside the workspace are auto-approved, others are asked
        execute=execute,
        subject=Subject(paths=(str(real),)),
    )


# --- diff_file ----------------------------------------------------------------------------------


async def prepare_diff_file(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    name = "diff_file"
    path_a_shown = require_str(args, "path_a")
    if path_a_shown is None:
        return error_item(call_id, name, args, "diff_file: 'path_a' must be a non-empty string")
    has_b = args.get("path_b") is not None
    has_content = args.get("content_b") is not None
    if has_b == has_content:
        return error_item(
            call_id, name, args, "diff_file: give exactly one of 'path_b' (a file) or 'content_b' (a string)"
        )
    path_b_shown = require_str(args, "path_b") if has_b else None
    if has_b and path_b_shown is None:
        return error_item(call_id, name, args, "diff_file: 'path_b' must be a non-empty string")
    content_b = args.get("content_b")
    if has_content and not isinstance(content_b, str):
        return error_item(call_id, name, args, "diff_file: 'content_b' must be a string")
    context = args.get("context_lines", 3)
    if isinstance(context, float) and context.is_integer():
        context = int(context)
    if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= 20:
        return error_item(call_id, name, args, f"diff_file: context_lines must be 0-20, got {context!r}")

    path_a = ctx.resolve(path_a_shown)
    path_b = ctx.resolve(path_b_shown) if path_b_shown else None
    outside = False
    reals: list[str] = []
    configs: list[bool] = []  # per path: a git config, shown with its credentials redacted
    for checked, checked_shown in ((path_a, path_a_shown), (path_b, path_b_shown)):
        if checked is None or checked_shown is None:
            continue
        real = await asyncio.to_thread(real_path, checked)
        reals.append(str(real))
        configs.append(is_git_config(real))
        store = secret_store(real, [ctx.config.path])
        if store:
            return error_item(call_id, "diff_file", args, secret_refusal("diff_file", checked_shown, store))
        outside = outside or outside_workspace(real, ctx.cwd)
    limit = ctx.config.tools.truncation
    tracker = ctx.read_tracker
    label_b = path_b_shown or "content_b"

    def work() -> ToolResult:
        try:
            text_a = read_text(path_a, path_a_shown)
            text_b = read_text(path_b, label_b) if path_b is not None else str(content_b)
        except FileProblem as exc:
            return ToolResult(f"diff_file: {exc}", is_error=True)
        if configs[0]:  # content_b compared with the real token would answer guesses about it
            text_a = redact_text(text_a)[0]
        if path_b is not None and configs[-1]:
            text_b = redact_text(text_b)[0]
        tracker.record(path_a)
        if path_b is not None:
            tracker.record(path_b)
        diff = unified_diff(text_a, text_b, path_a_shown, label_b, context, limit)
        if not diff:
            return ToolResult(f"No differences: {path_a_shown} and {label_b} are identical.")
        added, removed = diff_stats(diff)
        return ToolResult(f"{diff}[{added} line(s) added, {removed} removed]")

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        return await asyncio.to_thread(work)

    return PreparedItem(
        call_id=call_id,
        func_name=name,
        args=args,
        header=f"diff_file: {path_a_shown} vs {label_b}" + (" (outside the workspace)" if outside else ""),
        preview=f"{path_a} vs {path_b or 'the given content'} (context {context})",
        needs_approval=outside,
        execute=execute,
        subject=Subject(paths=tuple(reals)),
    )


PREPARERS: dict[str, Preparer] = {"read_file": prepare_read_file, "diff_file": prepare_diff_file}
