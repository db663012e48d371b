"""write_file and edit_file: both need approval, and both preview a unified diff of the change.

edit_file's stale-edit guard: the path must have been read (read_file / diff_file) and must not have
changed on disk since; checked when preparing AND again right before writing (the user may take a
while to approve). After writing, the new state is recorded so a follow-up edit works.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.checkpoints import read_snapshot
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, Subject, ToolResult
from .files_read import FileProblem, diff_stats, join_diff_lines, read_text, unified_diff
from .path_policy import (
    credential_refusal,
    holds_credential,
    outside_workspace,
    real_path,
    runs_code_in_git,
    secret_refusal,
    secret_store,
)

NEW_FILE_PREVIEW_LINES = 400
RESULT_DIFF_CHARS = 8000
MAX_EDIT_FILE_BYTES = 20 * 1024 * 1024


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# --- write_file ---------------------------------------------------------------------------------


def _new_file_diff(content: str, shown: str, limit: int) -> str:
    lines = content.splitlines(keepends=True)
    head = lines[:NEW_FILE_PREVIEW_LINES]
    out = [f"--- /dev/null\n+++ {shown}\n", f"@@ -0,0 +1,{len(lines)} @@\n"]
    out.extend("+" + line for line in head)
    diff = join_diff_lines(out, limit)
    if len(lines) > len(head):
        diff += f"[... {len(lines) - len(head)} more line(s) not shown ...]\n"
    return diff


def _moved(link: Path, real: Path, shown: str, tool: str) -> str | None:
    """Why the write is refused when ``link`` no longer resolves to the ``real`` path that was previewed
    and judged (a folder on the way swapped for a symlink since), else None. Blocking."""
    now = real_path(link)
    if now == real:
        return None
    return (
        f"{tool}: {shown} now points to {now}, not to {real} as when the change was shown; nothing was "
        "written. Prepare the change again."
    )


def _fingerprint(path: Path) -> str | None:
    """The content hash of ``path`` (None when it does not exist), to detect changes after a preview."""
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.errno}"


def _current_text(path: Path, shown: str) -> tuple[str | None, str | None]:
    """(text, note): text None for a new file; note explains when the old content can't be shown."""
    if not path.exists():
        return None, None
    try:
        return read_text(path, shown), None
    except FileProblem as exc:
        return "", f"(current content not shown: {exc})"


async def prepare_write_file(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    name = "write_file"
    shown = require_str(args, "path")
    if shown is None:
        return error_item(call_id, name, args, "write_file: 'path' must be a non-empty string")
    content = args.get("content")
    if not isinstance(content, str):
        return error_item(call_id, name, args, "write_file: 'content' must be a string")
    mode = args.get("mode") or "overwrite"
    if mode not in ("overwrite", "append"):
        return error_item(
            call_id, name, args, f"write_file: mode must be 'overwrite' or 'append', got {mode!r}"
        )
    # symlinks followed before anything is decided or shown: the preview names the real target
    link = ctx.resolve(shown)
    path = await asyncio.to_thread(real_path, link)
    store = secret_store(path, [ctx.config.path])
    if store:
        return error_item(call_id, name, args, secret_refusal("write_file", shown, store))
    if await asyncio.to_thread(holds_credential, path):
        return error_item(call_id, name, args, credential_refusal("write_file", shown))
    where = ""
    outside = outside_workspace(path, ctx.cwd)
    if outside:
        where = f" [outside the workspace: {path}]"
    elif path != link.absolute():
        where = f" [-> {path}]"
    if path.is_dir():
        return error_item(call_id, name, args, f"write_file: {shown} is a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return error_item(call_id, name, args, f"write_file: {parent} exists and is not a directory")
            break

    tracker = ctx.read_tracker
    checkpoints = ctx.checkpoints
    if mode == "overwrite" and await asyncio.to_thread(path.exists):
        # as edit_file: never overwrite what the model has not seen (or has changed since it read it)
        reason = await asyncio.to_thread(tracker.check, path)
        if reason:
            return error_item(
                call_id,
                name,
                args,
                f"write_file: refused to overwrite {shown}: {reason} (or change part of it with edit_file)",
            )
    limit = ctx.config.tools.truncation
    old, note = await asyncio.to_thread(_current_text, path, shown)
    previewed = await asyncio.to_thread(_fingerprint, path)
    n_lines = _line_count(content)
    if old is None:
        preview = _new_file_diff(content, shown, limit)
        header = f"write_file: {shown} (new file, {n_lines} lines)"
    else:
        new = old + content if mode == "append" else content
        diff = await asyncio.to_thread(unified_diff, old, new, f"a/{shown}", f"b/{shown}", 3, limit)
        preview = diff or "(no change)"
        added, removed = diff_stats(preview)
        header = f"write_file: {shown} ({mode}: +{added} -{removed})"
        if note:
            preview = f"{note}\n{preview}"
    header += where
    data = _encode(content)

    def work() -> ToolResult:
        moved = _moved(link, path, shown, name)
        if moved:
            return ToolResult(moved, is_error=True)
        if _fingerprint(path) != previewed:
            return ToolResult(
                f"write_file: {shown} changed on disk after the preview was shown; it was not overwritten. "
                "Read it again and redo the change.",
                is_error=True,
            )
        created_dirs = not path.parent.exists()
        before = read_snapshot(path) if checkpoints is not None else None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab" if mode == "append" else "wb") as fh:
                fh.write(data)
        except OSError as exc:
            return ToolResult(f"write_file: cannot write {shown}: {exc.strerror or exc}", is_error=True)
        if checkpoints is not None:
            checkpoints.record(path, before)
        tracker.record(path)
        verb = "Appended" if mode == "append" else "Wrote"
        extra = " (created parent directories)" if created_dirs else ""
        return ToolResult(f"{verb} {len(data):,} bytes ({n_lines} lines) to {shown}{extra}")

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        return await asyncio.to_thread(work)

    return PreparedItem(
        call_id,
        name,
        args,
        header,
        preview=preview,
        execute=execute,
        preview_kind="diff",
        subject=Subject(
            paths=(str(path),), workspace_edit=not outside and not runs_code_in_git(path, ctx.cwd)
        ),
    )


# --- edit_file: locating and applying edits ------------------------------------------------------


class EditProblem(Exception):
    pass


@dataclass(slots=True)
class _Edit:
    old: str
    new: str
    near_line: int | None


@dataclass(slots=True)
class _Span:
    start: int
    end: int
    new: str
    index: int  # 1-based position in the edits list (0 for a single edit)


def _occurrences(text: str, old: str) -> list[int]:
    found, start = [], 0
    while True:
        pos = text.find(old, start)
        if pos < 0:
            return found
        found.append(pos)
        start = pos + len(old)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _adapt_newlines(text: str, edit: _Edit) -> _Edit:
    """A file with CRLF line ends: models send "\\n"; match the file's convention instead."""
    if "\r\n" in text and "\n" in edit.old and "\r\n" not in edit.old and edit.old not in text:
        return _Edit(edit.old.replace("\n", "\r\n"), edit.new.replace("\n", "\r\n"), edit.near_line)
    return edit


def _locate(text: str, edit: _Edit, label: str) -> tuple[int, _Edit]:
    """The start offset of the one match ``edit`` means (near_line picks among several)."""
    edit = _adapt_newlines(text, edit)
    positions = _occurrences(text, edit.old)
    if not positions:
        raise EditProblem(
            f"{label}old_string not found in the file (it must match exactly, whitespace included)"
        )
    if len(positions) == 1:
        return positions[0], edit
    lines = [_line_of(text, p) for p in positions]
    shown = ", ".join(str(n) for n in lines[:20]) + (" ..." if len(lines) > 20 else "")
    if edit.near_line is None:
        raise EditProblem(
            f"{label}old_string matches {len(positions)} times (at lines {shown}): add near_line, include more "
            "surrounding text to make it unique, or use replace_all"
        )
    span_lines = edit.old.count("\n")

    def distance(line: int) -> int:
        near = edit.near_line or 0
        return (
            0 if line <= near <= line + span_lines else min(abs(line - near), abs(line + span_lines - near))
        )

    distances = [distance(n) for n in lines]
    best = min(distances)
    winners = [i for i, d in enumerate(distances) if d == best]
    if len(winners) > 1:
        tied = ", ".join(str(lines[i]) for i in winners)
        raise EditProblem(
            f"{label}near_line {edit.near_line} is equally close to the matches at lines {tied}: be more specific"
        )
    return positions[winners[0]], edit


def _parse_edit(raw: Any, label: str) -> _Edit:
    if not isinstance(raw, dict):
        raise EditProblem(f"{label}each edit must be an object with old_string and new_string")
    old, new, near = raw.get("old_string"), raw.get("new_string"), raw.get("near_line")
    if not isinstance(old, str) or old == "":
        raise EditProblem(f"{label}old_string must be a non-empty string")
    if not isinstance(new, str):
        raise EditProblem(f'{label}new_string must be a string (use "" to delete)')
    if isinstance(near, float) and near.is_integer():
        near = int(near)
    if near is not None and (isinstance(near, bool) or not isinstance(near, int) or near < 1):
        raise EditProblem(f"{label}near_line must be a positive line number, got {near!r}")
    if old == new:
        raise EditProblem(f"{label}old_string and new_string are identical: this edit changes nothing")
    return _Edit(old, new, near)


def plan_edit(text: str, args: dict[str, Any]) -> tuple[str, str]:
    """Apply the requested edit(s) to ``text`` in memory: (new_text, summary) or EditProblem."""
    edits = args.get("edits")
    has_single = args.get("old_string") is not None or args.get("new_string") is not None
    replace_all = args.get("replace_all", False)
    if not isinstance(replace_all, bool):
        raise EditProblem("replace_all must be true or false")
    if edits is not None and has_single:
        raise EditProblem("give either old_string/new_string or an edits array, not both")
    if replace_all and (edits is not None or args.get("near_line") is not None):
        raise EditProblem("replace_all cannot be combined with near_line or edits")
    if edits is None and not has_single:
        raise EditProblem("nothing to do: give old_string and new_string, or an edits array")

    if edits is None:
        edit = _parse_edit(args, "")
        if replace_all:
            edit = _adapt_newlines(text, edit)
            count = text.count(edit.old)
            if count == 0:
                raise EditProblem(
                    "old_string not found in the file (it must match exactly, whitespace included)"
                )
            size = len(text) + count * (len(edit.new) - len(edit.old))
            if size > MAX_EDIT_FILE_BYTES:  # checked before it is built: 10**5 hits x 1 MB would be 100 GB
                raise EditProblem(
                    f"replacing {count:,} occurrence(s) would make the file {size:,} characters long (the limit "
                    f"is {MAX_EDIT_FILE_BYTES:,}); nothing was changed"
                )
            return text.replace(edit.old, edit.new), f"replace_all: {count} occurrence(s) replaced"
        pos, edit = _locate(text, edit, "")
        new_text = text[:pos] + edit.new + text[pos + len(edit.old) :]
        return new_text, f"1 edit at line {_line_of(text, pos)}"

    if not isinstance(edits, list) or not edits:
        raise EditProblem("edits must be a non-empty array of {old_string, new_string, near_line?}")
    spans: list[_Span] = []
    for i, raw in enumerate(edits, start=1):
        label = f"edit #{i}: "
        edit = _parse_edit(raw, label)
        pos, edit = _locate(text, edit, label)
        spans.append(_Span(pos, pos + len(edit.old), edit.new, i))
    ordered = sorted(spans, key=lambda s: s.start)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.start < before.end:
            raise EditProblem(
                f"edits #{before.index} and #{after.index} overlap (both change text at line "
                f"{_line_of(text, after.start)}): merge them into one edit; nothing was applied"
            )
    new_text = text
    for span in reversed(ordered):  # back to front: earlier offsets stay valid
        new_text = new_text[: span.start] + span.new + new_text[span.end :]
    if new_text == text:
        raise EditProblem("the edits change nothing")
    return new_text, f"{len(spans)} edits applied atomically"


# --- edit_file: the tool ------------------------------------------------------------------------


async def prepare_edit_file(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    name = "edit_file"
    shown = require_str(args, "path")
    if shown is None:
        return error_item(call_id, name, args, "edit_file: 'path' must be a non-empty string")
    path = ctx.resolve(shown)
    tracker = ctx.read_tracker
    checkpoints = ctx.checkpoints
    reason = tracker.check(path)
    if reason:
        return error_item(call_id, name, args, f"edit_file: {reason}")
    if await asyncio.to_thread(lambda: holds_credential(real_path(path))):
        return error_item(call_id, name, args, credential_refusal("edit_file", shown))
    try:
        original = await asyncio.to_thread(read_text, path, shown, MAX_EDIT_FILE_BYTES)
        new_text, summary = await asyncio.to_thread(plan_edit, original, args)
    except (FileProblem, EditProblem) as exc:
        return error_item(call_id, name, args, f"edit_file: {shown}: {exc}")
    limit = ctx.config.tools.truncation
    diff = await asyncio.to_thread(unified_diff, original, new_text, f"a/{shown}", f"b/{shown}", 3, limit)
    added, removed = diff_stats(diff)
    real = await asyncio.to_thread(real_path, path)

    def work() -> ToolResult:
        moved = _moved(path, real, shown, name)
        if moved:
            return ToolResult(moved, is_error=True)
        stale = tracker.check(path)
        if stale:
            return ToolResult(f"edit_file: {stale}; nothing was written", is_error=True)
        try:
            current = read_text(path, shown, MAX_EDIT_FILE_BYTES)
        except FileProblem as exc:
            return ToolResult(f"edit_file: {exc}", is_error=True)
        if current != original:
            return ToolResult(
                f"edit_file: {shown} changed on disk since the edit was prepared (stale edit refused): "
                "read it again; nothing was written",
                is_error=True,
            )
        before = read_snapshot(path) if checkpoints is not None else None
        try:
            path.write_bytes(_encode(new_text))
        except OSError as exc:
            return ToolResult(f"edit_file: cannot write {shown}: {exc.strerror or exc}", is_error=True)
        if checkpoints is not None:
            checkpoints.record(path, before)
        tracker.record(path)
        shown_diff = (
            diff if len(diff) <= RESULT_DIFF_CHARS else diff[:RESULT_DIFF_CHARS] + "\n[... diff cut ...]\n"
        )
        return ToolResult(f"Edited {shown}: {summary} (+{added} -{removed} lines)\n{shown_diff}")

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        return await asyncio.to_thread(work)

    return PreparedItem(
        call_id=call_id,
        func_name=name,
        args=args,
        header=f"edit_file: {shown} ({summary}, +{added} -{removed})",
        preview=diff,
        execute=execute,
        preview_kind="diff",
        subject=Subject(
            paths=(str(real),),
            workspace_edit=not outside_workspace(real, ctx.cwd) and not runs_code_in_git(real, ctx.cwd),
        ),
    )


PREPARERS: dict[str, Preparer] = {"write_file": prepare_write_file, "edit_file": prepare_edit_file}
