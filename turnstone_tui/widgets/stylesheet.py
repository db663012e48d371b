"""Read the shipped ``styles/*.tcss`` files for widgets' DEFAULT_CSS and screens' CSS_PATH."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..core.resources import styles_dir


def style_path(name: str) -> Path:
    """Path of one stylesheet, e.g. ``style_path("approval.tcss")``."""
    return styles_dir() / name


@cache
def style_text(name: str) -> str:
    """The text of one stylesheet ("" when missing, so a widget still mounts)."""
    try:
        return style_path(name).read_text(encoding="utf-8")
    except OSError:
        return ""
