"""The real `turnstone-tui` in tmux against the standalone scripted model server, read off the screen:
a prompt typed, the approval modal answered with `a`, two bash panes streaming side by side, the final
answer shown, then ctrl+c twice quits and leaves no child process behind."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers.model_server import ModelServerProcess, Reply
from tests.helpers.tmux_app import Tmux, start_app, write_scripted_config

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def bash_loop(tag: str, marker: str) -> str:
    # Prints a line every 0.4 s for a few seconds; the marker makes leftover processes findable.
    return f'for i in 1 2 3 4 5 6 7 8; do echo "{tag} step $i"; sleep 0.4; done # {marker}'


# Far taller than the terminal: the chat must follow it down as it streams.
LONG_ANSWER = (
    "".join(
        f"## Step {n}\n\nStep {n} compiles the module and runs its checks.\n\n- input {n}\n- output {n}\n\n"
        for n in range(1, 41)
    )
    + "That is the whole LONG-ANSWER-END.\n"
)


@pytest.fixture
def model_server_process(tmp_path: Path) -> Iterator[tuple[ModelServerProcess, str]]:
    marker = f"turnstone-tmux-{uuid.uuid4().hex[:8]}"
    replies = [
        Reply.tools(
            [
                ("bash", {"command": bash_loop("alpha", marker)}, "call_a"),
                ("bash", {"command": bash_loop("beta", marker)}, "call_b"),
            ],
            text="Running both builds.",
        ),
        Reply.text("Both builds **passed**: alpha and beta finished cleanly."),
        Reply.text(LONG_ANSWER, chunk_size=24, delay=0.002),
    ]
    with ModelServerProcess(replies, tmp_path / "server") as server:
        yield server, marker


def test_real_app_in_tmux(tmp_path: Path, model_server_process: tuple[ModelServerProcess, str]) -> None:
    server, marker = model_server_process
    workdir = tmp_path / "project"
    workdir.mkdir()
    config = write_scripted_config(tmp_path, server.openai_base_url)
    tmux = Tmux(f"turnstone-test-{uuid.uuid4().hex[:8]}")
    start_app(tmux, workdir, tmp_path, config)
    try:
        tmux.wait_for(lambda s: "scripted-model" in s and "idle" in s, "the app to start")
        tmux.keys("-l", "run the alpha and beta builds")
        tmux.wait_for(lambda s: "run the alpha and beta builds" in s, "the typed prompt")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Approve 2 tool calls?" in s, "the approval modal")
        tmux.keys("a")
        # Both panes stream at the same time: lines of each are on screen while neither has finished.
        screen = tmux.wait_for(
            lambda s: "alpha step 2" in s and "beta step 2" in s and "Both builds" not in s,
            "two panes streaming side by side",
        )
        side_by_side = [line for line in screen.splitlines() if "alpha step" in line and "beta step" in line]
        assert side_by_side, f"panes are not side by side:\n{screen}"
        screen = tmux.wait_for(lambda s: "Both builds passed" in s, "the final answer", limit=40)
        assert "Both builds passed" in screen
        requests = server.requests()
        posts = [r for r in requests if r["method"] == "POST"]
        assert len(posts) == 2  # (the third request is sent below)
        tool_results = {
            m["tool_call_id"]: m["content"] for m in posts[1]["body"]["messages"] if m["role"] == "tool"
        }
        assert set(tool_results) == {"call_a", "call_b"}
        assert "alpha step 8" in tool_results["call_a"] and "beta step 8" in tool_results["call_b"]
        # A long answer streams in and the view follows it to its end.
        tmux.keys("-l", "explain every step")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "LONG-ANSWER-END" in s and "idle" in s, "the end of a long answer", limit=40)
        # Read the settled screen: a capture taken while a frame is being written can be torn
        # (seen under load: half the rows from before the view scrolled).
        screen = tmux.wait_for_stable_screen()
        assert "Step 40 compiles" in screen and "Step 1 compiles" not in screen, f"not at the end:\n{screen}"
        # ctrl+c once warns, twice quits; the tmux session ends with the app.
        tmux.keys("C-c")
        tmux.wait_for(lambda s: "ctrl+c again" in s, "the quit notice")
        assert tmux.alive()
        tmux.keys("C-c")
        deadline = time.monotonic() + 15
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not tmux.alive(), "the app did not quit on the second ctrl+c"
        leftovers = [
            p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])
        ]
        assert not leftovers, f"child processes left behind: {leftovers}"
    finally:
        tmux.kill()
