"""Escape sequences and invisible characters in what the model sends, read off a real terminal.

Textual writes text to the terminal as it is: a command holding ``ESC[2K ESC[1G`` showed in the
approval modal as only what followed (the line was erased and rewritten), and OSC sequences in an
answer retitled the window. The approval rows write such characters out (``\\x1b``, ``<U+202E>``),
and the app's last line filter keeps every other control character from the terminal."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from tests.helpers.model_server import ModelServerProcess, Reply
from tests.helpers.tmux_app import Tmux, start_app, write_scripted_config

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

# A harmless stand-in for `curl ... | sh`: everything before ESC[2K was erased on screen.
COMMAND = "echo HIDDEN-PART > hidden.txt # \x1b[2K\x1b[1Gls -la \u202eexe.txt"
ANSWER = "Denied, fine. \x1b]2;PWNED-TITLE\x07Shown \x1b[8mconcealed\x1b[28m text-END."


def test_escape_sequences_neither_hide_a_command_nor_reach_the_terminal(tmp_path: Path) -> None:
    replies = [Reply.tools([("bash", {"command": COMMAND}, "call_1")]), Reply.text(ANSWER)]
    workdir = tmp_path / "project"
    workdir.mkdir()
    with ModelServerProcess(replies, tmp_path / "server") as server:
        config = write_scripted_config(tmp_path, server.openai_base_url)
        tmux = Tmux(f"turnstone-inject-{uuid.uuid4().hex[:8]}")
        start_app(tmux, workdir, tmp_path, config)
        try:
            tmux.wait_for(lambda s: "scripted-model" in s and "idle" in s, "the app to start")
            before = tmux.pane_title()
            tmux.keys("-l", "list the files")
            tmux.keys("Enter")
            screen = tmux.wait_for(lambda s: "Approve" in s and "ls -la" in s, "the approval modal")
            screen = tmux.wait_for_stable_screen()
            row = [line for line in screen.splitlines() if "ls -la" in line]
            assert any("HIDDEN-PART" in line and "\\x1b[2K" in line for line in row), screen
            assert "<U+202E>exe.txt" in screen, screen
            tmux.keys("n")
            tmux.wait_for(lambda s: "text-END" in s, "the answer")
            title = tmux.pane_title()
            assert "PWNED" not in title and title == before, title
            assert not (workdir / "hidden.txt").exists()
        finally:
            tmux.kill()
