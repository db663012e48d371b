"""Which function prepares which built-in tool: every family module's PREPARERS, merged."""

from __future__ import annotations

import importlib
from functools import cache

from ..core.tools import Preparer

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
    "tool_search",
)


@cache
def builtin_preparers() -> dict[str, Preparer]:
    table: dict[str, Preparer] = {}
    for family in FAMILY_MODULES:
        module = importlib.import_module(f"{__package__}.{family}")
        for name, preparer in module.PREPARERS.items():
            if name in table:
                raise RuntimeError(f"tool {name!r} is prepared by two families ({family})")
            table[name] = preparer
    return table
