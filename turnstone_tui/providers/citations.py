"""Sources a provider-side web search cited, shown as links after the answer."""

from __future__ import annotations

from ..core.provider import ContentDelta


def cited_sources(sources: dict[str, str]) -> ContentDelta:
    """The pages a provider-side web search cited (url -> title), as links after the answer."""
    links = "\n".join(f"- [{title}]({url})" for url, title in sources.items())
    return ContentDelta(f"\n\nSources:\n\n{links}\n")
