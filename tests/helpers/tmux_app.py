"""The real `turnstone-tui` console script in a private tmux server, read off the screen.

Shared by the tests that check what a person sees in a real terminal (tests/app/*tmux*.py and the
fault case that kills the app in tmux)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent / "turnstone-tui"


class Tmux:
    """One tmux session on a private server socket (never the user's or another test's server)."""

    def __init__(self, name: str, *, width: int = 140, height: int = 40) -> None:
        self.name = name
        self.width = width
        self.height = height
        self.base = ["tmux", "-L", name, "-f", "/dev/null"]

    def run(self, *args: str) -> str:
        return subprocess.run(
            [*self.base, *args], check=True, capture_output=True, text=True, timeout=10
        ).stdout

    def start(self, cwd: Path, *command: str) -> None:
        self.run(
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "-c",
            str(cwd),
            *command,
        )

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=10)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def alive(self) -> bool:
        result = subprocess.run([*self.base, "has-session", "-t", self.name], capture_output=True, timeout=10)
        return result.returncode == 0

    def pane_pid(self) -> int:
        """The pane's first process: the app itself when it was started through ``env -i``."""
        return int(self.run("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def pane_title(self) -> str:
        return self.run("display-message", "-p", "-t", self.name, "#{pane_title}").strip()

    def wait_for_stable_screen(self, limit: float = 10.0) -> str:
        """The screen once two captures 0.2 s apart are the same."""
        deadline = time.monotonic() + limit
        screen = self.screen()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            again = self.screen()
            if again == screen:
                return screen
            screen = again
        return screen

    def wait_for(self, predicate: Callable[[str], bool], what: str, limit: float = 30.0) -> str:
        deadline = time.monotonic() + limit
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{screen}")


def write_scripted_config(tmp_path: Path, openai_base_url: str) -> Path:
    """A config file for the scripted model server: its database in ``tmp_path``, no retries."""
    config = tmp_path / "config.toml"
    config.write_text(
        f'db_path = "{tmp_path / "turnstone.db"}"\n[api]\nbase_url = "{openai_base_url}"\n'
        'api_key = "test-key"\n[model]\nname = "scripted-model"\nprovider = "openai"\nretries = 0\n'
    )
    return config


def start_app(tmux: Tmux, workdir: Path, home: Path, config: Path, *args: str) -> None:
    """Run the console script in ``workdir`` with an environment of only a home, XDG folders under
    it, a terminal type, PATH and the config (``args`` go to the app): nothing from the machine's own
    user reaches it."""
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "xdg-config"),
        "XDG_DATA_HOME": str(home / "xdg-data"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "TURNSTONE_CONFIG": str(config),
    }
    tmux.start(workdir, "env", "-i", *(f"{key}={value}" for key, value in env.items()), str(BIN), *args)
