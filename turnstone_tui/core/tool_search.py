"""Client-side tool search: defer MCP tools and let the model find them with BM25.

When the total tool count (built-in + MCP) reaches the threshold (mode "auto") or the mode is
"on", only the built-in tools, the synthetic ``tool_search`` tool and the MCP tools already found
are sent to the model. ``tool_search`` ranks the deferred MCP tools by BM25 over their names
(split on ``_`` / ``__`` / camelCase) and descriptions; the tools it returns are expanded into the
visible set and stay there for the rest of the session (also across MCP refreshes, as long as the
tool still exists). With no MCP tools there is nothing to defer, so search stays inactive.

The tier (the spec's three-tier approach) says how the deferred tools are searched: "native" sends
them to the provider marked deferred, with the provider's own search tool (Anthropic's server-side
BM25; the tools its results reference are expanded the same way); "client" is the synthetic
``tool_search`` function above; "off" sends every tool. It is decided per model: a
``[models.NAME] tool_search`` entry, else the provider's capability table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from .bm25 import BM25Index

TOOL_SEARCH_NAME = "tool_search"
MAX_SEARCH_RESULTS = 50
Mode = Literal["auto", "on", "off"]
Tier = Literal["native", "client", "off"]
TIER_LABELS = {
    "native": "native (the provider searches the deferred tools)",
    "client": "client-side (the tool_search function)",
    "off": "off (every tool is sent)",
}


def tier_override(config: Any, model: str) -> str:
    """The configured tier for ``model``: the active model's own setting (from its alias), else a
    ``[models.NAME]`` entry whose name or model name is ``model``; "" when none is set."""
    if config.model.tool_search:
        return str(config.model.tool_search)
    for alias, entry in config.models.items():
        if entry.tool_search and model in (alias, entry.name):
            return str(entry.tool_search)
    return ""


def decide_tier(override: str, native: bool | None) -> tuple[Tier, str | None]:
    """(tier, notice): the override wins; "native" on a provider that cannot search natively falls
    back to the client tier with a notice; by default native where the capability table says so."""
    if override in ("client", "off"):
        return override, None  # type: ignore[return-value]
    if override == "native":
        if native is None:
            return (
                "client",
                "tool_search = native is set, but this provider has no native tool search: using the client-side tool_search",
            )
        return "native", None
    return ("native" if native else "client"), None


TOOL_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_SEARCH_NAME,
        "description": (
            "Find more tools. Many external (MCP) tools are available but not listed; search them by what "
            "you want to do (keywords such as 'github issues create' or 'calendar events'). The tools found "
            "become available to call right away and stay available."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords describing the capability you need."},
                "max_results": {
                    "type": "integer",
                    "description": "How many tools to return (default from config, max 50).",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_RESULTS,
                },
            },
            "required": ["query"],
        },
    },
}


def schema_name(schema: dict[str, Any]) -> str:
    fn = schema.get("function", schema)
    return str(fn.get("name", ""))


def schema_description(schema: dict[str, Any]) -> str:
    fn = schema.get("function", schema)
    return str(fn.get("description") or "")


class ToolSearchIndex:
    """BM25 over tool names and descriptions; ``search`` returns tool names, best first."""

    def __init__(self, schemas: list[dict[str, Any]]) -> None:
        self.names = [schema_name(s) for s in schemas]
        # The name counts twice: a word in the name says more than one in a long description.
        docs = [f"{n} {n} {schema_description(s)}" for n, s in zip(self.names, schemas, strict=True)]
        self._index = BM25Index(docs)
        self._by_name = {n.lower(): i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def search(self, query: str, k: int = 5) -> list[str]:
        if k <= 0:
            return []
        exact = self._by_name.get(query.strip().lower())
        hits = [self.names[i] for i, _ in self._index.search(query, k + 1)]
        if exact is not None:
            name = self.names[exact]
            hits = [name, *(h for h in hits if h != name)]
        return hits[:k]


class ToolSearchManager:
    """Which tool schemas the model sees, and the BM25 index over the deferred MCP tools."""

    def __init__(
        self,
        builtin_schemas: list[dict[str, Any]],
        mcp_schemas: list[dict[str, Any]],
        mode: Mode = "auto",
        threshold: int = 20,
        max_results: int = 5,
    ) -> None:
        if mode not in ("auto", "on", "off"):
            raise ValueError(f"tool search mode must be auto, on or off, got {mode!r}")
        self.builtin_schemas = list(builtin_schemas)
        self.mode: Mode = mode
        self.threshold = threshold
        self.max_results = max_results
        self.tier: Tier = "client"
        self.expanded: set[str] = set()
        self.mcp_schemas: list[dict[str, Any]] = []
        self.index = ToolSearchIndex([])
        self.rebuild(mcp_schemas)

    @property
    def total_tools(self) -> int:
        return len(self.builtin_schemas) + len(self.mcp_schemas)

    @property
    def active(self) -> bool:
        if self.mode == "off" or self.tier == "off" or not self.mcp_schemas:
            return False
        return self.mode == "on" or self.total_tools >= self.threshold

    @property
    def deferred_count(self) -> int:
        return len(self.mcp_schemas) - len(self.expanded) if self.active else 0

    def visible_schemas(self) -> list[dict[str, Any]]:
        if not self.active:
            return [*self.builtin_schemas, *self.mcp_schemas]
        shown = [s for s in self.mcp_schemas if schema_name(s) in self.expanded]
        if self.tier == "native":
            return [*self.builtin_schemas, *shown]
        return [*self.builtin_schemas, TOOL_SEARCH_SCHEMA, *shown]

    def deferred_schemas(self) -> list[dict[str, Any]]:
        """The tools sent deferred to the provider's native search (none in the other tiers)."""
        if not self.active or self.tier != "native":
            return []
        return [s for s in self.mcp_schemas if schema_name(s) not in self.expanded]

    def expand(self, names: Iterable[str]) -> list[str]:
        """Make these MCP tools visible for the rest of the session; returns the newly added names."""
        added = [n for n in dict.fromkeys(names) if n in self._by_name and n not in self.expanded]
        self.expanded.update(added)
        return added

    def rebuild(self, mcp_schemas: list[dict[str, Any]]) -> None:
        """New MCP tool list (after a refresh): re-index, keep expanded names that still exist."""
        self.mcp_schemas = list(mcp_schemas)
        self._by_name = {schema_name(s): s for s in self.mcp_schemas}
        self.index = ToolSearchIndex(self.mcp_schemas)
        self.expanded &= set(self.index.names)

    def search(self, query: str, max_results: int | None = None) -> list[dict[str, Any]]:
        """The schemas of the best matching MCP tools."""
        k = max_results or self.max_results
        return [self._by_name[n] for n in self.index.search(query, k)]
