"""Which function prepares which built-in tool: every family module's PREPARERS, merged.

The table is lazy: a family's module (web brings an HTTP client and an HTML converter, files a
diff engine…) is imported the first time one of its tools is prepared, not when a session starts.
``TOOL_FAMILIES`` says where each tool lives; a test checks it against the modules' PREPARERS.
The app imports them all in a thread once the session is ready (``warm``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import cache

from ..core.tools import Preparer

TOOL_FAMILIES: dict[str, str] = {
    "bash": "bash",
    "read_file": "files",
    "write_file": "files",
    "edit_file": "files",
    "diff_file": "files",
    "search": "search",
    "math": "math",
    "man": "man",
    "web_fetch": "web",
    "web_search": "web",
    "notify": "notify",
    "memory": "memory",
    "recall": "recall",
    "watch": "watch",
    "skill": "skill",
    "plan_agent": "agents",
    "task_agent": "agents",
    "read_resource": "mcp_tools",
    "use_prompt": "mcp_tools",
    "tool_search": "tool_search",
}
FAMILY_MODULES: tuple[str, ...] = tuple(dict.fromkeys(TOOL_FAMILIES.values()))


def family_preparers(family: str) -> Mapping[str, Preparer]:
    """The PREPARERS of one family module (imported now if it was not)."""
    return importlib.import_module(f"{__package__}.{family}").PREPARERS


class LazyPreparers(Mapping[str, Preparer]):
    """tool name -> preparer, importing a family's module on the first lookup of one of its tools."""

    def __getitem__(self, name: str) -> Preparer:
        family = TOOL_FAMILIES.get(name)
        if family is None:
            raise KeyError(name)
        preparer = family_preparers(family).get(name)
        if preparer is None:
            raise RuntimeError(f"executors/{family}.py does not prepare {name!r} (see TOOL_FAMILIES)")
        return preparer

    def __contains__(self, name: object) -> bool:
        return name in TOOL_FAMILIES

    def __iter__(self) -> Iterator[str]:
        return iter(TOOL_FAMILIES)

    def __len__(self) -> int:
        return len(TOOL_FAMILIES)


@cache
def builtin_preparers() -> Mapping[str, Preparer]:
    return LazyPreparers()


def warm() -> None:
    """Import every family module (slow and blocking: call it in a thread, off the start-up path)."""
    for family in FAMILY_MODULES:
        family_preparers(family)
