"""Which function prepares which built-in tool: every family module's PREPARERS, merged."""

from __future__ import annotations

import importlib
from functools import cache

from .base import Preparer

FAMILY_MODULES = (
    "bash",
    "files",
    "search",
    "math",
    "man",
    "web",
    "notify",
    "memory",
    "recall",
    "watch",
    "skill",
    "agents",
    "mcp_tools",
)


@cache
def builtin_preparers() -> dict[str, Preparer]:
    table: dict[str, Preparer] = {}
    for family in FAMILY_MODULES:
        try:
            module = importlib.import_module(f"{__package__}.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{family}":
                raise
            continue  # the registry test asserts every built-in tool has a preparer
        for name, preparer in module.PREPARERS.items():
            if name in table:
                raise RuntimeError(f"tool {name!r} is prepared by two families ({family})")
            table[name] = preparer
    try:
        from ..core import tool_search
    except ImportError:
        return table
    table.update(tool_search.PREPARERS)
    return table
