"""AGENTS.md project instructions: which files are read, in what order, bounded, and that they reach
the model (a real `turnstone-tui -p` against the scripted model server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.test_headless import base_args, cli_env, run_cli
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.core.project_instructions import (
    MAX_INSTRUCTION_BYTES,
    instruction_dirs,
    load_project_instructions,
)
from turnstone_tui.core.prompts import build_system_prompt

pytestmark = pytest.mark.timeout(120)


def make_repo(root: Path) -> Path:
    """root/.git, root/AGENTS.md, root/pkg/CLAUDE.md, root/pkg/sub (cwd); returns the cwd."""
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("ROOT: run the tests with make test\n")
    sub = root / "pkg" / "sub"
    sub.mkdir(parents=True)
    (root / "pkg" / "CLAUDE.md").write_text("PKG: this package uses tabs\n")
    return sub


def test_files_are_read_from_the_repository_root_down_to_the_working_directory(tmp_path: Path) -> None:
    cwd = make_repo(tmp_path / "repo")
    (cwd / "AGENTS.md").write_text("SUB: never touch generated files\n")
    (cwd / "CLAUDE.md").write_text("SUB-CLAUDE: shadowed by AGENTS.md\n")
    (tmp_path / "AGENTS.md").write_text("OUTSIDE the repository: not read\n")
    global_dir = tmp_path / "config"
    global_dir.mkdir()
    (global_dir / "AGENTS.md").write_text("GLOBAL: answer in British English\n")

    assert instruction_dirs(cwd) == [tmp_path / "repo", tmp_path / "repo" / "pkg", cwd]
    found = load_project_instructions(cwd, global_dir)
    assert found.paths == [
        global_dir / "AGENTS.md",
        tmp_path / "repo" / "AGENTS.md",
        tmp_path / "repo" / "pkg" / "CLAUDE.md",
        cwd / "AGENTS.md",
    ]
    section = found.section()
    order = [section.index(marker) for marker in ("GLOBAL:", "ROOT:", "PKG:", "SUB:")]
    assert order == sorted(order), "the nearest file comes last"
    assert "SUB-CLAUDE" not in section and "OUTSIDE" not in section
    assert not found.truncated
    assert found.describe(cwd).startswith("Following project instructions:")


def test_outside_a_repository_only_the_working_directory_is_read(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("PARENT\n")
    cwd = tmp_path / "work"
    cwd.mkdir()
    assert load_project_instructions(cwd).files == ()
    (cwd / "AGENTS.md").write_text("HERE\n")
    assert [text for _, text in load_project_instructions(cwd).files] == ["HERE\n"]


def test_no_files_add_nothing_to_the_system_prompt(tmp_path: Path) -> None:
    found = load_project_instructions(tmp_path, tmp_path / "missing-config")
    assert found.files == () and found.section() == ""
    plain = build_system_prompt(cwd=tmp_path, model="m")
    assert build_system_prompt(cwd=tmp_path, model="m", instructions=found.section()) == plain


def test_a_huge_or_unreadable_file_is_bounded_and_never_fails_the_start(tmp_path: Path) -> None:
    cwd = make_repo(tmp_path / "repo")
    (cwd / "AGENTS.md").mkdir()  # a directory by that name is not a file: skipped
    (tmp_path / "repo" / "AGENTS.md").write_text("x" * (MAX_INSTRUCTION_BYTES * 3))
    found = load_project_instructions(cwd)
    assert found.truncated
    assert sum(len(text.encode()) for _, text in found.files) <= MAX_INSTRUCTION_BYTES
    assert "cut at 32 KiB" in found.section()
    assert "PKG:" not in found.section(), "files after the budget are not read"


def test_the_model_receives_the_instructions_and_the_user_is_told(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    cwd = make_repo(tmp_path / "repo")
    global_file = tmp_path / "home" / ".config" / "turnstone" / "AGENTS.md"
    global_file.parent.mkdir(parents=True)
    global_file.write_text("GLOBAL: sign answers with -- t\n")
    assert cli_env(tmp_path)["XDG_CONFIG_HOME"] == str(tmp_path / "home" / ".config")
    model_server.script([Reply.text("ok -- t")])
    result = run_cli(["-p", "hello", *base_args(model_server, tmp_path, "openai")], tmp_path, cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok -- t"
    system = model_server.requests[0].body["messages"][0]
    assert system["role"] == "system"
    for marker in ("GLOBAL: sign answers", "ROOT: run the tests", "PKG: this package uses tabs"):
        assert marker in system["content"]
    assert "Following project instructions:" in result.stderr
    told = next(line for line in result.stderr.splitlines() if "Following project instructions:" in line)
    assert "../../AGENTS.md" in told and "../CLAUDE.md" in told, told
