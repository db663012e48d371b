"""The real `turnstone-tui` in an 80x24 tmux window: four bash panes run while the prompt and the
status bar stay on screen (issue 11 item 7, checked where it was found: a real terminal)."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.model_server import ModelServerProcess, Reply
from tests.helpers.tmux_app import Tmux, start_app, write_scripted_config

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

WIDTH, HEIGHT = 80, 24


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ModelServerProcess]:
    calls = [
        (
            "bash",
            {"command": f'for i in 1 2 3 4 5 6 7 8 9; do echo "{tag} step $i"; sleep 0.5; done'},
            f"call_{tag}",
        )
        for tag in ("alpha", "beta", "gamma", "delta")
    ]
    with ModelServerProcess(
        [Reply.tools(calls), Reply.text("All four finished.")], tmp_path / "server"
    ) as process:
        yield process


def test_four_panes_at_80x24_keep_the_prompt_and_status_bar(
    tmp_path: Path, server: ModelServerProcess
) -> None:
    workdir = tmp_path / "project"
    workdir.mkdir()
    config = write_scripted_config(tmp_path, server.openai_base_url)
    tmux = Tmux(f"turnstone-small-{uuid.uuid4().hex[:8]}", width=WIDTH, height=HEIGHT)
    start_app(tmux, workdir, tmp_path, config)
    try:
        tmux.wait_for(lambda s: "scripted-model" in s and "idle" in s, "the app to start", limit=60)
        tmux.keys("-l", "build all four")
        tmux.wait_for(lambda s: "build all four" in s, "the typed prompt")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Approve 4 tool calls?" in s, "the approval modal")
        tmux.keys("y")
        screen = tmux.wait_for(
            lambda s: all(f"{tag} step 2" in s for tag in ("alpha", "beta", "gamma", "delta")),
            "four panes streaming",
        )
        rows = screen.splitlines()
        assert len(rows) <= HEIGHT
        status = [row for row in rows if "scripted-model" in row]
        assert status and "running" in status[0], f"no status bar while the panes run:\n{screen}"
        assert any("Ask anything" in row for row in rows), f"no prompt while the panes run:\n{screen}"
        assert any("alpha step" in row and "beta step" in row for row in rows), f"not side by side:\n{screen}"
        screen = tmux.wait_for(lambda s: "All four finished." in s and "idle" in s, "the answer", limit=60)
        assert any("Ask anything" in row for row in screen.splitlines())
    finally:
        tmux.kill()
