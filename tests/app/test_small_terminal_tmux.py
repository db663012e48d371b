"""The real `turnstone-tui` in an 80x24 tmux window: four bash panes run while the prompt and the
status bar stay on screen (issue 11 item 7, checked where it was found: a real terminal)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.test_tmux import BIN, Tmux
from tests.helpers.model_server import ModelServerProcess, Reply

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

WIDTH, HEIGHT = 80, 24


class SmallTmux(Tmux):
    def start(self, cwd: Path, *command: str) -> None:
        self.run(
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            str(WIDTH),
            "-y",
            str(HEIGHT),
            "-c",
            str(cwd),
            *command,
        )


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
    config = tmp_path / "config.toml"
    config.write_text(
        f'db_path = "{tmp_path / "turnstone.db"}"\n[api]\nbase_url = "{server.openai_base_url}"\n'
        'api_key = "test-key"\n[model]\nname = "scripted-model"\nprovider = "openai"\nretries = 0\n'
    )
    env = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "TURNSTONE_CONFIG": str(config),
    }
    tmux = SmallTmux(f"turnstone-small-{uuid.uuid4().hex[:8]}")
    tmux.start(workdir, "env", "-i", *(f"{k}={v}" for k, v in env.items()), str(BIN))
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
