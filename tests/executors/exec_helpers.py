"""Helpers for the bash / files / search / math / man executor tests: a real ToolContext, a recording emit."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from turnstone_tui.config import Config
from turnstone_tui.core.protocol import NullUI
from turnstone_tui.core.registry import default_registry
from turnstone_tui.core.tools import Preparer, ToolContext
from turnstone_tui.core.types import ExecContext, OutputStream, PreparedItem, ToolResult


def unsandboxed_config() -> Config:
    """Config with the OS sandbox off: these tests check process handling with host pids ($$, $!).
    The sandbox has its own tests (tests/sandbox)."""
    config = Config()
    config.sandbox.mode = "off"
    return config


def make_ctx(cwd: Path, **overrides: Any) -> ToolContext:
    values: dict[str, Any] = {
        "config": unsandboxed_config(),
        "registry": default_registry(),
        "cwd": cwd,
        "session_id": "test-session",
        "ui": NullUI(),
    }
    values.update(overrides)
    return ToolContext(**values)


@dataclass
class Recorder:
    """An emit_lines callback that keeps every streamed line with its stream."""

    lines: list[tuple[str, OutputStream]] = field(default_factory=list)

    def __call__(self, lines: list[str], stream: OutputStream) -> None:
        self.lines.extend((line, stream) for line in lines)

    def of(self, stream: OutputStream) -> list[str]:
        return [line for line, s in self.lines if s == stream]


async def prepare(preparers: dict[str, Preparer], ctx: ToolContext, name: str, **args: Any) -> PreparedItem:
    return await preparers[name](ctx, f"call-{name}", args)


async def execute(item: PreparedItem, emit: Recorder | None = None) -> ToolResult:
    """Run an approved item the way the pipeline does."""
    assert item.error is None, item.error
    assert item.execute is not None
    return await item.execute(ExecContext(item.call_id, emit or Recorder()))


async def run(preparers: dict[str, Preparer], ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return await execute(await prepare(preparers, ctx, name, **args))


def pid_gone(pid: int) -> bool:
    """True when the process no longer runs (gone, or a zombie waiting to be reaped)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pids: list[int], within: float = 5.0) -> list[int]:
    """Wait until every pid is gone; return those still alive after ``within`` seconds."""
    deadline = time.monotonic() + within
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if not pid_gone(p)]
        if alive:
            time.sleep(0.05)
    return alive
