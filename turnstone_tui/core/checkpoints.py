"""File checkpoints: what ``/undo`` puts back.

Before ``write_file`` or ``edit_file`` changes a file, the file's bytes (or its absence) are kept for
the running turn; ``/undo`` restores the files of the newest turn that changed any, after showing
what it will do. A file changed again since the agent wrote it (by the user, or by a command) is left
alone and named, never overwritten. Changes made by bash commands are not tracked. Checkpoints live
in memory for the running process and are bounded (turns kept, bytes per file, bytes in all).

The methods that touch files block: tools call them in their worker thread, the app in a thread.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from .diffing import diff_lines

UNDO_NOTE_KIND = "undo_note"
"""The kind of the user-role note that tells the model its changes were undone."""
MAX_TURNS = 20
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_DIFF_LINES = 400


class _TooBig:
    """The file was larger than MAX_FILE_BYTES before the write: not restorable."""


TOO_BIG = _TooBig()
Snapshot = bytes | None | _TooBig
"""A file's content before a write: its bytes, None when it did not exist, or TOO_BIG."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_snapshot(path: Path) -> Snapshot:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError:
        return TOO_BIG
    if size > MAX_FILE_BYTES:
        return TOO_BIG
    try:
        return path.read_bytes()
    except OSError:
        return TOO_BIG


def _current_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes())
    except FileNotFoundError:
        return None


@dataclass(slots=True)
class FileChange:
    path: Path
    before: Snapshot
    after_digest: str | None
    """What the agent's last write in the turn left (None: it deleted nothing, so never None in practice)."""


@dataclass(slots=True)
class TurnCheckpoint:
    number: int
    label: str
    changes: dict[Path, FileChange] = field(default_factory=dict)


class UndoAction(StrEnum):
    RESTORE = "restore"
    DELETE = "delete"  # the agent created the file
    CHANGED = "changed since"  # left alone
    TOO_BIG = "too big to restore"  # left alone
    UNCHANGED = "already as before"


@dataclass(frozen=True, slots=True)
class UndoStep:
    path: Path
    action: UndoAction
    diff: str = ""
    """current -> restored, unified (bounded)."""

    @property
    def applies(self) -> bool:
        return self.action in (UndoAction.RESTORE, UndoAction.DELETE)


@dataclass(frozen=True, slots=True)
class UndoPlan:
    turn: int
    label: str
    steps: tuple[UndoStep, ...]

    @property
    def applicable(self) -> list[UndoStep]:
        return [step for step in self.steps if step.applies]


class FileCheckpoints:
    def __init__(self) -> None:
        self._turns: list[TurnCheckpoint] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def begin_turn(self, label: str) -> None:
        with self._lock:
            if self._turns and not self._turns[-1].changes:
                self._turns[-1] = TurnCheckpoint(next(self._numbers), label)
            else:
                self._turns.append(TurnCheckpoint(next(self._numbers), label))
            del self._turns[:-MAX_TURNS]

    def record(self, path: Path, before: Snapshot) -> None:
        """After a successful write of ``path`` whose content before it was ``before`` (taken with
        :func:`read_snapshot` just before writing). The first write of a turn keeps ``before``."""
        after = _current_digest(path)
        with self._lock:
            if not self._turns:
                self._turns.append(TurnCheckpoint(next(self._numbers), ""))
            changes = self._turns[-1].changes
            known = changes.get(path)
            if known is None:
                changes[path] = FileChange(path, before, after)
            else:
                known.after_digest = after
            self._trim()

    def _trim(self) -> None:
        total = 0
        for turn in reversed(self._turns):
            for change in turn.changes.values():
                if isinstance(change.before, bytes):
                    total += len(change.before)
                    if total > MAX_TOTAL_BYTES:
                        change.before = TOO_BIG

    def latest(self) -> TurnCheckpoint | None:
        with self._lock:
            for turn in reversed(self._turns):
                if turn.changes:
                    return turn
        return None

    def plan_undo(self) -> UndoPlan | None:
        """What undoing the newest turn with file changes would do, file by file (reads the files)."""
        turn = self.latest()
        if turn is None:
            return None
        changes = sorted(
            turn.changes.values(), key=lambda change: str(change.path)
        )  # parallel writes: any order
        steps = [self._step(change) for change in changes]
        return UndoPlan(turn.number, turn.label, tuple(steps))

    def _step(self, change: FileChange) -> UndoStep:
        path = change.path
        if isinstance(change.before, _TooBig):
            return UndoStep(path, UndoAction.TOO_BIG)
        current = read_snapshot(path)
        if isinstance(current, _TooBig) or (
            (_digest(current) if current is not None else None) != change.after_digest
        ):
            return UndoStep(path, UndoAction.CHANGED)
        if current == change.before:
            return UndoStep(path, UndoAction.UNCHANGED)
        action = UndoAction.DELETE if change.before is None else UndoAction.RESTORE
        return UndoStep(path, action, _diff(path, current, change.before))

    def undo(self, plan: UndoPlan) -> list[str]:
        """Apply ``plan`` (from :meth:`plan_undo`, checked again file by file) and drop its turn.
        Returns one line per file saying what happened."""
        turn = self.latest()
        if turn is None or turn.number != plan.turn:
            return ["nothing to undo any more"]
        lines = []
        for step in plan.steps:
            change = turn.changes.get(step.path)
            fresh = self._step(change) if change is not None else step
            if not fresh.applies or fresh.action != step.action:
                lines.append(f"{step.path}: left alone ({fresh.action.value})")
                continue
            try:
                if fresh.action is UndoAction.DELETE:
                    step.path.unlink()
                    lines.append(f"{step.path}: deleted (the agent created it)")
                else:
                    assert isinstance(change.before, bytes)  # noqa: S101 - RESTORE implies bytes
                    step.path.write_bytes(change.before)
                    lines.append(f"{step.path}: restored")
            except OSError as exc:
                lines.append(f"{step.path}: could not undo: {exc.strerror or exc}")
        with self._lock:
            if turn in self._turns:
                self._turns.remove(turn)
        return lines


def _diff(path: Path, current: bytes | None, restored: bytes | None) -> str:
    def lines(data: bytes | None) -> list[str]:
        return data.decode("utf-8", errors="replace").splitlines(keepends=True) if data else []

    old, new = lines(current), lines(restored)
    diff = list(diff_lines(old, new, f"a/{path.name}", "/dev/null" if restored is None else f"b/{path.name}"))
    text = "".join(line if line.endswith("\n") else line + "\n" for line in diff[:MAX_DIFF_LINES])
    if len(diff) > MAX_DIFF_LINES:
        text += f"… {len(diff) - MAX_DIFF_LINES} more diff lines\n"
    return text


def undo_note(lines: list[str]) -> dict[str, str]:
    """The note the model reads after ``/undo`` (its picture of those files is out of date)."""
    body = "\n".join(f"- {line}" for line in lines)
    return {
        "role": "user",
        "content": f"[the user undid your file changes of the last turn that made any]\n{body}\n"
        "Read these files again before you change them.",
        "kind": UNDO_NOTE_KIND,
    }
