"""search: recursive regex search with file:line results, bounded output, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.exec_helpers import execute, make_ctx, prepare, run
from turnstone_tui.executors.search import MAX_MATCH_LINES, PREPARERS, MatchSink

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("import os\n\ndef handler(event):\n    return event\n")
    (tmp_path / "src" / "main.py").write_text("from pkg.mod import handler\nhandler(1)\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("handler = never shown\n")
    (tmp_path / "blob.bin").write_bytes(b"handler\x00\x01")
    return tmp_path


async def test_finds_matches_with_file_and_line(tree: Path) -> None:
    item = await prepare(PREPARERS, make_ctx(tree), "search", query=r"def \w+\(")
    assert item.needs_approval is False
    result = await execute(item)
    assert result.text == "src/pkg/mod.py:3:def handler(event):"
    assert not result.is_error


async def test_extended_regex_in_a_subdirectory(tree: Path) -> None:
    result = await run(
        PREPARERS, make_ctx(tree), "search", query="(import handler|handler\\(1\\))", path="src"
    )
    lines = sorted(result.text.splitlines())
    assert lines == ["src/main.py:1:from pkg.mod import handler", "src/main.py:2:handler(1)"]


async def test_no_matches_is_not_an_error(tree: Path) -> None:
    result = await run(PREPARERS, make_ctx(tree), "search", query="zzz_not_there")
    assert not result.is_error and "No matches" in result.text


async def test_invalid_regex_is_an_error(tree: Path) -> None:
    result = await run(PREPARERS, make_ctx(tree), "search", query="(unclosed")
    assert result.is_error and "search failed" in result.text


async def test_output_is_bounded_with_a_count_of_the_rest(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("match me\n" * (MAX_MATCH_LINES + 250))
    result = await run(PREPARERS, make_ctx(tmp_path), "search", query="match")
    lines = result.text.splitlines()
    assert len(lines) == MAX_MATCH_LINES + 1
    assert "250 more matching lines" in lines[-1]


async def test_missing_path_and_empty_query(tmp_path: Path) -> None:
    item = await prepare(PREPARERS, make_ctx(tmp_path), "search", query="x", path="nope")
    assert item.error and "no such file" in item.error
    item = await prepare(PREPARERS, make_ctx(tmp_path), "search", query="")
    assert item.error and "'query'" in item.error


async def test_a_path_under_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, workspace = tmp_path / "home", tmp_path / "work"
    (home / "notes").mkdir(parents=True)
    workspace.mkdir()
    (home / "notes" / "todo.txt").write_text("buy a needle\n")
    monkeypatch.setenv("HOME", str(home))
    item = await prepare(PREPARERS, make_ctx(workspace), "search", query="needle", path="~/notes")
    assert item.needs_approval, "outside the workspace: asked first"
    result = await execute(item)
    assert not result.is_error, result.text
    assert result.text == f"{home}/notes/todo.txt:1:buy a needle"


async def test_pattern_starting_with_dash_is_a_pattern(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x --verbose y\n")
    result = await run(PREPARERS, make_ctx(tmp_path), "search", query="--verbose")
    assert result.text == "f.txt:1:x --verbose y"


@pytest.mark.parametrize("tool", ["rg", "grep"])
async def test_hidden_files_are_searched_but_not_git(
    tmp_path: Path, tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil as _shutil

    if tool == "rg" and _shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    if tool == "grep":  # the fallback when ripgrep is missing
        real_which = _shutil.which
        monkeypatch.setattr(
            _shutil, "which", lambda name, *a, **k: None if name == "rg" else real_which(name)
        )
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci.yml").write_text("needle in a hidden dir\n")
    (tmp_path / ".env.example").write_text("needle in a hidden file\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("needle in git\n")
    (tmp_path / "plain.txt").write_text("needle plain\n")
    result = await run(PREPARERS, make_ctx(tmp_path), "search", query="needle")
    assert ".github/ci.yml:1:needle in a hidden dir" in result.text
    assert ".env.example:1:needle in a hidden file" in result.text
    assert "plain.txt:1:needle plain" in result.text
    assert "needle in git" not in result.text


async def test_gitignored_files_skipped_by_ripgrep_are_named(tmp_path: Path) -> None:
    import shutil as _shutil

    if _shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build.log\n")
    (tmp_path / "build.log").write_text("needle ignored\n")
    (tmp_path / "src.txt").write_text("needle kept\n")
    result = await run(PREPARERS, make_ctx(tmp_path), "search", query="needle")
    assert "src.txt:1:needle kept" in result.text and "needle ignored" not in result.text
    assert "not searched: files excluded by .gitignore" in result.text


def test_the_secret_filter_judges_only_the_files_of_lines_it_may_show() -> None:
    """Each judged file costs a path resolution on the event loop: past the shown lines the rest are
    only counted (it resolved every matching file of the tree before)."""
    judged: list[str] = []

    def is_secret(name: str) -> bool:
        judged.append(name)
        return name.endswith(".env")

    sink = MatchSink(max_lines=10, is_secret=is_secret)
    sink.feed("".join(f"f{i}.txt\x001:hit\n" for i in range(5)) + "a/.env\x001:KEY=sk\n")
    sink.feed("".join(f"g{i}.txt\x001:hit\n" for i in range(5_000)))
    assert len(sink.kept) == 10 and sink.hidden == 1 and "sk" not in "".join(sink.kept)
    assert sink.total == 5_005
    assert len(judged) == 6 + 5  # the first chunk, then the 5 lines that filled the list
