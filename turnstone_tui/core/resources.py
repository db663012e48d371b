"""Where the shipped data (tool JSONs, .tcss styles) lives: inside the wheel or in the source tree."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


@cache
def data_dir() -> Path:
    """``turnstone_tui/_data`` in an installed wheel; the repository root in a source checkout."""
    installed = _PACKAGE_DIR / "_data"
    if (installed / "tools").is_dir():
        return installed
    return _PACKAGE_DIR.parent


def styles_dir() -> Path:
    return data_dir() / "styles"
