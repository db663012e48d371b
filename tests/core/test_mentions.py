"""@path mentions: the contents reach the model, bounded, with a notice when cut."""

from __future__ import annotations

from pathlib import Path

from turnstone_tui.core.mentions import expand_mentions, find_mentions, strip_attachments


def test_mentions_are_found_at_word_starts_quoted_or_not() -> None:
    text = 'see @src/a.py and @"my notes.txt", mail me@example.com, @src/a.py again'
    assert find_mentions(text) == ["src/a.py", "my notes.txt"]


def test_a_mentioned_file_is_attached_after_the_words(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def a():\n    return 1\n")
    expanded = expand_mentions("explain @src/a.py please", tmp_path)
    assert expanded.text.startswith("explain @src/a.py please\n\n")
    assert (
        '<attached-file path="src/a.py" chars="22">\ndef a():\n    return 1\n\n</attached-file>'
        in expanded.text
    )
    [attachment] = expanded.attachments
    assert attachment.kind == "file" and not attachment.cut
    assert expanded.notice() == "Attached: src/a.py (22 chars)"


def test_a_large_file_is_cut_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("x" * 9000 + "THE END")
    expanded = expand_mentions("why @big.log", tmp_path, max_file_chars=1000)
    assert "x" * 1000 in expanded.text and "THE END" not in expanded.text
    assert "[cut: the first 1,000 of 9,007 characters are attached]" in expanded.text
    [attachment] = expanded.attachments
    assert attachment.cut and "cut to 1,000 chars of 9,007" in expanded.notice()


def test_the_total_is_bounded_across_files(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name[0] * 600)
    expanded = expand_mentions("@a.txt @b.txt @c.txt", tmp_path, max_file_chars=500, max_total_chars=800)
    kinds = [(a.mention, a.kind, a.chars) for a in expanded.attachments]
    assert kinds == [("a.txt", "file", 500), ("b.txt", "file", 300), ("c.txt", "skipped", 0)]
    assert "total attachment limit" in expanded.notice() and "reached 800 characters" in expanded.notice()
    assert len(expanded.text) < 800 + 400


def test_unknown_binary_and_punctuated_mentions(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "notes.md").write_text("hello")
    text = "ask @alice about @logo.png and @notes.md, thanks"
    expanded = expand_mentions(text, tmp_path)
    assert [(a.mention, a.kind) for a in expanded.attachments] == [
        ("logo.png", "skipped"),
        ("notes.md", "file"),
    ]
    assert "logo.png: not attached (binary file)" in expanded.notice()
    assert (
        "IHDR" not in expanded.text
        and '<attached-file path="notes.md" chars="5">\nhello\n</attached-file>' in expanded.text
    )
    assert "alice" not in expanded.notice()


def test_a_directory_is_listed_and_nothing_mentioned_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "sub").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    expanded = expand_mentions("what is in @pkg/", tmp_path)
    assert '<attached-dir path="pkg/" chars="11">\nsub/\nmod.py\n</attached-dir>' in expanded.text
    plain = expand_mentions("no mentions here", tmp_path)
    assert plain.text == "no mentions here" and plain.notice() == ""


def test_quoted_paths_with_spaces(tmp_path: Path) -> None:
    (tmp_path / "my notes.txt").write_text("remember")
    expanded = expand_mentions('read @"my notes.txt"', tmp_path)
    assert '<attached-file path="my notes.txt" chars="8">\nremember\n</attached-file>' in expanded.text


def test_stripping_gives_back_the_words_and_the_paths(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A = 1\n</attached-file>-looking text stays inside\n")
    (tmp_path / "d").mkdir()
    expanded = expand_mentions("compare @a.py with @d", tmp_path)
    words, paths = strip_attachments(expanded.text)
    assert words == "compare @a.py with @d" and paths == ["a.py", "d"]
    assert strip_attachments("plain") == ("plain", [])
