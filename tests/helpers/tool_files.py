"""The built-in tool definitions as files: tests count them instead of writing the number down."""

from __future__ import annotations

from pathlib import Path

TOOLS_DIR = Path(__file__).resolve().parents[2] / "tools"
TOOL_FILES = sorted(TOOLS_DIR.glob("*.json"))
BUILTIN_TOOL_COUNT = len(TOOL_FILES)
