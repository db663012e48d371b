"""read_file, write_file, edit_file, diff_file on real files, including every guard of edit_file."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from pathlib import Path

import pytest

from tests.executors.exec_helpers import execute, make_ctx, prepare, run
from turnstone_tui.core.tools import ToolContext
from turnstone_tui.executors.files import PREPARERS

pytestmark = pytest.mark.timeout(30)


def png_bytes(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def bump(path: Path, text: str) -> None:
    """Change a file behind the session's back (different size, so the stamp surely differs)."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


async def read(ctx: ToolContext, path: str, **args):
    return await run(PREPARERS, ctx, "read_file", path=path, **args)


# --- read_file ----------------------------------------------------------------------------------


async def test_read_file_numbers_lines_and_needs_no_approval(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\ngamma\n")
    ctx = make_ctx(tmp_path)
    item = await prepare(PREPARERS, ctx, "read_file", path="a.txt")
    assert item.needs_approval is False
    result = await execute(item)
    assert result.text == "     1\talpha\n     2\tbeta\n     3\tgamma\n"
    assert not result.is_error


async def test_read_file_offset_and_limit(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await read(make_ctx(tmp_path), "n.txt", offset=10, limit=3)
    assert result.text.splitlines()[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "offset=13" in result.text
    past = await read(make_ctx(tmp_path), "n.txt", offset=500)
    assert past.is_error and "past the end" in past.text and "100 lines" in past.text


async def test_read_file_large_file_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 100 + "\n" * 1 + ("y" * 99 + "\n") * 200_000)
    ctx = make_ctx(tmp_path)
    ctx.config.tools.truncation = 50_000
    result = await read(ctx, "big.txt")
    assert len(result.text) < 51_000
    assert "more follow: read again with offset=" in result.text


@pytest.mark.parametrize(
    ("setup", "message"),
    [("missing", "no such file"), ("dir", "is a directory"), ("binary", "binary file")],
)
async def test_read_file_clear_errors(tmp_path: Path, setup: str, message: str) -> None:
    if setup == "dir":
        (tmp_path / "thing").mkdir()
    elif setup == "binary":
        (tmp_path / "thing").write_bytes(b"ELF\x00\x01\x02" * 100)
    result = await read(make_ctx(tmp_path), "thing")
    assert result.is_error and message in result.text


async def test_read_file_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    result = await read(make_ctx(tmp_path), "e.txt")
    assert not result.is_error and "empty" in result.text


async def test_read_image_with_vision_returns_image_part(tmp_path: Path) -> None:
    data = png_bytes(3, 2)
    (tmp_path / "pic.png").write_bytes(data)
    result = await read(make_ctx(tmp_path, supports_vision=True), "pic.png")
    assert not result.is_error
    assert result.content_parts is not None
    part = result.content_parts[0]
    assert part["type"] == "image_url"
    assert part["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(data).decode()
    assert "3x2" in result.text


async def test_read_image_without_vision_is_described(tmp_path: Path) -> None:
    (tmp_path / "pic.dat").write_bytes(png_bytes(7, 5))  # detected by magic bytes, not the name
    result = await read(make_ctx(tmp_path, supports_vision=False), "pic.dat")
    assert result.content_parts is None
    assert "PNG image" in result.text and "7x5 pixels" in result.text and "cannot view images" in result.text


async def test_read_image_over_4mb_is_refused(tmp_path: Path) -> None:
    (tmp_path / "huge.png").write_bytes(png_bytes(1, 1) + b"\x00" * (4 * 1024 * 1024 + 10))
    result = await read(make_ctx(tmp_path, supports_vision=True), "huge.png")
    assert result.is_error and "4 MB" in result.text and result.content_parts is None


async def test_read_svg_as_text(tmp_path: Path) -> None:
    (tmp_path / "i.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"></svg>\n')
    result = await read(make_ctx(tmp_path, supports_vision=True), "i.svg")
    assert "<svg" in result.text and result.content_parts is None


# --- write_file ---------------------------------------------------------------------------------


async def test_write_new_file_previews_diff_from_dev_null_and_creates_dirs(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    item = await prepare(PREPARERS, ctx, "write_file", path="deep/er/new.py", content="print(1)\nprint(2)\n")
    assert item.needs_approval is True and item.preview_kind == "diff"
    assert item.preview.startswith("--- /dev/null\n+++ deep/er/new.py\n")
    assert "+print(1)\n+print(2)\n" in item.preview
    assert "new file, 2 lines" in item.header
    assert not (tmp_path / "deep").exists()  # prepare has no side effects
    result = await execute(item)
    assert not result.is_error and "created parent directories" in result.text
    assert (tmp_path / "deep/er/new.py").read_text() == "print(1)\nprint(2)\n"


async def test_write_overwrite_previews_diff_and_append_appends(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("keep\nold\n")
    ctx = make_ctx(tmp_path)
    await run(PREPARERS, ctx, "read_file", path="f.txt")
    item = await prepare(PREPARERS, ctx, "write_file", path="f.txt", content="keep\nnew\n")
    assert "-old\n" in item.preview and "+new\n" in item.preview and "+1 -1" in item.header
    await execute(item)
    assert target.read_text() == "keep\nnew\n"
    item = await prepare(PREPARERS, ctx, "write_file", path="f.txt", content="more\n", mode="append")
    assert "+more\n" in item.preview and "-keep" not in item.preview
    await execute(item)
    assert target.read_text() == "keep\nnew\nmore\n"


async def test_write_over_a_file_never_read_is_refused(tmp_path: Path) -> None:
    """As edit_file: the model must see a file before replacing it (issue 14 item 5)."""
    target = tmp_path / "notes.txt"
    target.write_text("the user's notes\n")
    ctx = make_ctx(tmp_path)
    refused = await prepare(PREPARERS, ctx, "write_file", path="notes.txt", content="new\n")
    assert refused.error is not None and "refused to overwrite notes.txt" in refused.error
    assert "has not been read in this session: call read_file" in refused.error
    assert target.read_text() == "the user's notes\n"
    # appending replaces nothing: allowed unread; a new file needs no read either
    assert (
        await prepare(PREPARERS, ctx, "write_file", path="notes.txt", content="x\n", mode="append")
    ).error is None
    assert (await prepare(PREPARERS, ctx, "write_file", path="fresh.txt", content="x\n")).error is None
    # read, then changed behind the model's back: refused again until it reads the new content
    await run(PREPARERS, ctx, "read_file", path="notes.txt")
    assert (await prepare(PREPARERS, ctx, "write_file", path="notes.txt", content="new\n")).error is None
    target.write_text("edited meanwhile, and longer\n")
    stale = await prepare(PREPARERS, ctx, "write_file", path="notes.txt", content="new\n")
    assert stale.error is not None and "changed on disk since it was last read" in stale.error
    await run(PREPARERS, ctx, "read_file", path="notes.txt")
    assert not (await run(PREPARERS, ctx, "write_file", path="notes.txt", content="new\n")).is_error
    assert target.read_text() == "new\n"


async def test_write_then_edit_works_without_a_read(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    await run(PREPARERS, ctx, "write_file", path="w.txt", content="hello world\n")
    result = await run(PREPARERS, ctx, "edit_file", path="w.txt", old_string="world", new_string="there")
    assert not result.is_error
    assert (tmp_path / "w.txt").read_text() == "hello there\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [({"content": "x"}, "'path'"), ({"path": "a"}, "'content' must be a string"),
     ({"path": "a", "content": "x", "mode": "insert"}, "mode must be")],
)  # fmt: skip
async def test_write_bad_args(tmp_path: Path, args: dict, message: str) -> None:
    item = await prepare(PREPARERS, make_ctx(tmp_path), "write_file", **args)
    assert item.error and message in item.error


async def test_write_onto_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    item = await prepare(PREPARERS, make_ctx(tmp_path), "write_file", path="d", content="x")
    assert item.error and "is a directory" in item.error


# --- edit_file ----------------------------------------------------------------------------------


async def edit_ready(tmp_path: Path, text: str, name: str = "code.py") -> tuple[ToolContext, Path]:
    path = tmp_path / name
    path.write_text(text)
    ctx = make_ctx(tmp_path)
    assert not (await read(ctx, name)).is_error
    return ctx, path


async def test_edit_without_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("a = 1\n")
    item = await prepare(
        PREPARERS, make_ctx(tmp_path), "edit_file", path="x.py", old_string="1", new_string="2"
    )
    assert item.error and "has not been read" in item.error
    assert (tmp_path / "x.py").read_text() == "a = 1\n"


async def test_single_edit_previews_unified_diff_and_applies(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "def f():\n    return 1\n")
    item = await prepare(
        PREPARERS, ctx, "edit_file", path="code.py", old_string="return 1", new_string="return 2"
    )
    assert item.needs_approval is True and item.preview_kind == "diff"
    assert "-    return 1\n+    return 2\n" in item.preview
    assert path.read_text() == "def f():\n    return 1\n"  # not yet
    result = await execute(item)
    assert not result.is_error and "1 edit at line 2" in result.text
    assert path.read_text() == "def f():\n    return 2\n"
    again = await run(
        PREPARERS, ctx, "edit_file", path="code.py", old_string="return 2", new_string="return 3"
    )
    assert not again.is_error  # the write re-recorded the stamp


async def test_stale_edit_refused_at_prepare(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "value = 1\n")
    bump(path, "value = 100\n")
    item = await prepare(PREPARERS, ctx, "edit_file", path="code.py", old_string="value", new_string="v")
    assert item.error and "changed on disk" in item.error


async def test_stale_edit_refused_at_execute_even_after_prepare_passed(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "value = 1\n")
    item = await prepare(
        PREPARERS, ctx, "edit_file", path="code.py", old_string="value = 1", new_string="value = 2"
    )
    assert item.error is None
    bump(path, "value = 1  # someone else edited this\n")  # while the user was approving
    result = await execute(item)
    assert result.is_error and "changed on disk" in result.text and "nothing was written" in result.text
    assert path.read_text() == "value = 1  # someone else edited this\n"


async def test_not_found_and_no_op_errors(tmp_path: Path) -> None:
    ctx, _ = await edit_ready(tmp_path, "a = 1\n")
    missing = await prepare(PREPARERS, ctx, "edit_file", path="code.py", old_string="b = 2", new_string="x")
    assert missing.error and "not found" in missing.error
    noop = await prepare(PREPARERS, ctx, "edit_file", path="code.py", old_string="a = 1", new_string="a = 1")
    assert noop.error and "identical" in noop.error


async def test_multiple_matches_name_the_lines_and_near_line_picks_one(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "x = 0\npass\nx = 0\npass\npass\nx = 0\n")
    item = await prepare(PREPARERS, ctx, "edit_file", path="code.py", old_string="x = 0", new_string="x = 9")
    assert item.error and "matches 3 times" in item.error and "lines 1, 3, 6" in item.error
    item = await prepare(
        PREPARERS, ctx, "edit_file", path="code.py", old_string="x = 0", new_string="x = 9", near_line=5
    )
    await execute(item)
    assert path.read_text() == "x = 0\npass\nx = 0\npass\npass\nx = 9\n"


async def test_replace_all_counts_occurrences(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "foo(foo)\nfoo\n")
    item = await prepare(
        PREPARERS, ctx, "edit_file", path="code.py", old_string="foo", new_string="bar", replace_all=True
    )
    assert "3 occurrence(s)" in item.header
    await execute(item)
    assert path.read_text() == "bar(bar)\nbar\n"


async def test_replace_all_cannot_combine_with_near_line_or_edits(tmp_path: Path) -> None:
    ctx, _ = await edit_ready(tmp_path, "a\n")
    item = await prepare(
        PREPARERS,
        ctx,
        "edit_file",
        path="code.py",
        old_string="a",
        new_string="b",
        replace_all=True,
        near_line=1,
    )
    assert item.error and "cannot be combined" in item.error
    item = await prepare(
        PREPARERS,
        ctx,
        "edit_file",
        path="code.py",
        replace_all=True,
        edits=[{"old_string": "a", "new_string": "b"}],
    )
    assert item.error and "cannot be combined" in item.error


async def test_batch_edits_apply_atomically_in_one_write(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "one\ntwo\nthree\nfour\n")
    edits = [
        {"old_string": "one", "new_string": "ONE-LONGER"},  # changes offsets of everything after it
        {"old_string": "three", "new_string": "3"},
        {"old_string": "four", "new_string": "FOUR"},
    ]
    item = await prepare(PREPARERS, ctx, "edit_file", path="code.py", edits=edits)
    assert "3 edits" in item.header
    result = await execute(item)
    assert not result.is_error
    assert path.read_text() == "ONE-LONGER\ntwo\n3\nFOUR\n"


async def test_overlapping_batch_edits_are_rejected_and_nothing_changes(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "alpha beta gamma\n")
    edits = [{"old_string": "alpha beta", "new_string": "A"}, {"old_string": "beta gamma", "new_string": "B"}]
    item = await prepare(PREPARERS, ctx, "edit_file", path="code.py", edits=edits)
    assert item.error and "overlap" in item.error and "#1" in item.error and "#2" in item.error
    assert path.read_text() == "alpha beta gamma\n"


async def test_batch_with_one_bad_edit_applies_none(tmp_path: Path) -> None:
    ctx, path = await edit_ready(tmp_path, "a = 1\nb = 2\n")
    edits = [{"old_string": "a = 1", "new_string": "a = 10"}, {"old_string": "zzz", "new_string": "y"}]
    item = await prepare(PREPARERS, ctx, "edit_file", path="code.py", edits=edits)
    assert item.error and "edit #2" in item.error and "not found" in item.error
    assert path.read_text() == "a = 1\nb = 2\n"


async def test_edit_crlf_file_with_lf_old_string(tmp_path: Path) -> None:
    path = tmp_path / "win.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    ctx = make_ctx(tmp_path)
    await read(ctx, "win.txt")
    result = await run(
        PREPARERS, ctx, "edit_file", path="win.txt", old_string="first\nsecond", new_string="1\n2"
    )
    assert not result.is_error
    assert path.read_bytes() == b"1\r\n2\r\nthird\r\n"


# --- diff_file ----------------------------------------------------------------------------------


async def test_diff_two_files_and_counts_as_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\nold\nsame2\n")
    (tmp_path / "b.txt").write_text("same\nnew\nsame2\n")
    ctx = make_ctx(tmp_path)
    item = await prepare(PREPARERS, ctx, "diff_file", path_a="a.txt", path_b="b.txt")
    assert item.needs_approval is False
    result = await execute(item)
    assert "--- a.txt\n+++ b.txt\n" in result.text and "-old\n+new\n" in result.text
    edit = await run(PREPARERS, ctx, "edit_file", path="a.txt", old_string="old", new_string="new")
    assert not edit.is_error  # diff_file satisfied the read guard


async def test_a_large_diff_stops_early_at_the_output_limit(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"old line {i}\n" for i in range(20_000)))
    ctx = make_ctx(tmp_path)
    ctx.config.tools.truncation = 2000
    new = "".join(f"new line {i}\n" for i in range(20_000))
    result = await run(PREPARERS, ctx, "diff_file", path_a="a.txt", content_b=new)
    assert not result.is_error
    diff, _, stats = result.text.rpartition("\n[")
    assert diff.endswith("[... diff cut off at the output limit ...]") and stats.startswith("0 line(s) added")
    assert 2000 <= len(diff) < 2200  # stopped at the limit, not cut from a whole diff
    assert "-old line 0\n" in result.text and "+new line 19999" not in result.text


async def test_diff_against_content_and_identical(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\ny\n")
    ctx = make_ctx(tmp_path)
    result = await run(PREPARERS, ctx, "diff_file", path_a="a.txt", content_b="x\nz\n", context_lines=0)
    assert "-y\n+z\n" in result.text and " x\n" not in result.text
    same = await run(PREPARERS, ctx, "diff_file", path_a="a.txt", content_b="x\ny\n")
    assert "No differences" in same.text and not same.is_error


async def test_diff_binary_refused_and_arg_errors(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "a.txt").write_text("a\n")
    ctx = make_ctx(tmp_path)
    result = await run(PREPARERS, ctx, "diff_file", path_a="a.txt", path_b="bin")
    assert result.is_error and "binary" in result.text
    both = await prepare(PREPARERS, ctx, "diff_file", path_a="a.txt", path_b="a.txt", content_b="x")
    assert both.error and "exactly one" in both.error
    ctx_bad = await prepare(PREPARERS, ctx, "diff_file", path_a="a.txt", content_b="x", context_lines=50)
    assert ctx_bad.error and "0-20" in ctx_bad.error
    missing = await run(PREPARERS, ctx, "diff_file", path_a="nope.txt", content_b="x")
    assert missing.is_error and "no such file" in missing.text


async def test_read_file_cuts_an_enormous_line(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * 3_000_000 + "\nsecond\n")
    result = await read(make_ctx(tmp_path), "min.js")
    first, second = result.text.splitlines()[:2]
    assert first.endswith("[... line cut: 3,000,000 characters]") and len(first) < 2100
    assert second == "     2\tsecond"


async def test_replace_all_refuses_a_result_too_big_before_building_it(tmp_path: Path) -> None:
    """replace_all multiplies: a read log with 10**5 "e" and a 4 MB new_string (the argument limit)
    would be 400 GB, built at prepare time, before any approval: the app died. The size is checked
    from the count first."""
    (tmp_path / "big.log").write_text("e\n" * 50_000)
    ctx = make_ctx(tmp_path)
    ctx.read_tracker.record(tmp_path / "big.log")
    item = await prepare(
        PREPARERS, ctx, "edit_file", path="big.log", old_string="e", new_string="x" * 1000, replace_all=True
    )
    assert item.error is not None and "would make the file 50,050,000 characters long" in item.error
    assert item.execute is None
    assert (tmp_path / "big.log").read_text() == "e\n" * 50_000
