"""File checkpoints (/undo): what comes back, what is left alone, and the bounds."""

from __future__ import annotations

import threading
from pathlib import Path

from turnstone_tui.core import checkpoints as cp
from turnstone_tui.core.checkpoints import FileCheckpoints, UndoAction, read_snapshot


def agent_writes(checkpoints: FileCheckpoints, path: Path, data: str) -> None:
    """What write_file/edit_file do: snapshot, write, record."""
    before = read_snapshot(path)
    path.write_text(data)
    checkpoints.record(path, before)


def test_undo_restores_edited_files_and_deletes_created_ones(tmp_path: Path) -> None:
    edited, created = tmp_path / "calc.py", tmp_path / "new.py"
    edited.write_text("a - b\n")
    checkpoints = FileCheckpoints()
    checkpoints.begin_turn("fix calc")
    agent_writes(checkpoints, edited, "a + b\n")
    agent_writes(checkpoints, edited, "a + b  # fixed\n")  # a second write in the turn
    agent_writes(checkpoints, created, "print(1)\n")
    plan = checkpoints.plan_undo()
    assert plan is not None and plan.label == "fix calc"
    actions = {step.path: step.action for step in plan.steps}
    assert actions == {edited: UndoAction.RESTORE, created: UndoAction.DELETE}
    restore = next(step for step in plan.steps if step.path == edited)
    assert "-a + b  # fixed" in restore.diff and "+a - b" in restore.diff
    lines = checkpoints.undo(plan)
    assert edited.read_text() == "a - b\n", "back to before the turn's first write"
    assert not created.exists()
    assert sorted(lines) == sorted([f"{edited}: restored", f"{created}: deleted (the agent created it)"])
    assert checkpoints.plan_undo() is None, "the turn is used up"


def test_a_file_changed_since_the_agent_wrote_it_is_left_alone(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine.txt", tmp_path / "theirs.txt"
    mine.write_text("one\n")
    theirs.write_text("one\n")
    checkpoints = FileCheckpoints()
    checkpoints.begin_turn("t")
    agent_writes(checkpoints, mine, "two\n")
    agent_writes(checkpoints, theirs, "two\n")
    theirs.write_text("the user's own edit\n")
    plan = checkpoints.plan_undo()
    assert plan is not None
    assert {s.path: s.action for s in plan.steps}[theirs] is UndoAction.CHANGED
    mine.write_text("changed between the question and the answer\n")  # checked again at undo
    lines = checkpoints.undo(plan)
    assert theirs.read_text() == "the user's own edit\n"
    assert mine.read_text() == "changed between the question and the answer\n"
    assert all("left alone" in line for line in lines), lines


def test_only_the_newest_turn_with_changes_is_undone_then_the_one_before(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("v0")
    checkpoints = FileCheckpoints()
    checkpoints.begin_turn("first")
    agent_writes(checkpoints, path, "v1")
    checkpoints.begin_turn("second")
    agent_writes(checkpoints, path, "v2")
    checkpoints.begin_turn("a turn that only talked")
    plan = checkpoints.plan_undo()
    assert plan is not None and plan.label == "second"
    checkpoints.undo(plan)
    assert path.read_text() == "v1"
    plan = checkpoints.plan_undo()
    assert plan is not None and plan.label == "first"
    checkpoints.undo(plan)
    assert path.read_text() == "v0"


def test_bounds_turns_file_size_and_total(tmp_path: Path, monkeypatch) -> None:
    checkpoints = FileCheckpoints()
    for index in range(cp.MAX_TURNS + 5):
        checkpoints.begin_turn(f"turn {index}")
        agent_writes(checkpoints, tmp_path / f"f{index}.txt", "x")
    assert len(checkpoints._turns) == cp.MAX_TURNS

    monkeypatch.setattr(cp, "MAX_FILE_BYTES", 10)
    big = tmp_path / "big.bin"
    big.write_bytes(b"y" * 11)
    checkpoints.begin_turn("big")
    agent_writes(checkpoints, big, "small now")
    plan = checkpoints.plan_undo()
    assert plan is not None and [s.action for s in plan.steps] == [UndoAction.TOO_BIG]
    assert checkpoints.undo(plan) == [f"{big}: left alone (too big to restore)"]
    assert big.read_text() == "small now"

    monkeypatch.setattr(cp, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(cp, "MAX_TOTAL_BYTES", 150)
    checkpoints = FileCheckpoints()
    for index in range(3):
        path = tmp_path / f"t{index}.txt"
        path.write_bytes(b"z" * 100)
        checkpoints.begin_turn(f"t{index}")
        agent_writes(checkpoints, path, "new")
    kept = [c.before for turn in checkpoints._turns for c in turn.changes.values()]
    assert kept[-1] == b"z" * 100, "the newest turn keeps its bytes"
    assert all(before is cp.TOO_BIG for before in kept[:-1]), "older ones give theirs up first"


def test_parallel_writes_in_one_turn_are_all_recorded(tmp_path: Path) -> None:
    checkpoints = FileCheckpoints()
    checkpoints.begin_turn("parallel")
    paths = [tmp_path / f"p{i}.txt" for i in range(16)]
    for path in paths:
        path.write_text("before")
    threads = [threading.Thread(target=agent_writes, args=(checkpoints, p, "after")) for p in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    plan = checkpoints.plan_undo()
    assert plan is not None and len(plan.applicable) == 16
    checkpoints.undo(plan)
    assert all(p.read_text() == "before" for p in paths)
