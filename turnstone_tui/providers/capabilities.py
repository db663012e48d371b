"""What a model can do natively, by its name: the defaults a ``[models.NAME]`` entry may override.

Native tool search (the spec's tiers 1 and 2): Anthropic's server-side BM25 tool search is on the
models Anthropic's documentation lists (Claude Haiku 4.5, Sonnet/Opus 4.5 and later, every 5.x
family); OpenAI's hosted tool search starts with GPT-5.4. Everything else (older models, local
models, unknown names behind a proxy) gets the client-side ``tool_search`` function.
"""

from __future__ import annotations

import re

_ANTHROPIC_TOOL_SEARCH = re.compile(
    r"claude-(?:"
    r"(?:opus|sonnet|haiku)-4-(?:[5-9]|[1-9]\d)(?!\d)"  # claude-sonnet-4-5-20250929, claude-opus-4-7
    r"|[a-z]+-(?:[5-9]|[1-9]\d)(?!\d)"  # claude-opus-5, claude-sonnet-5-5, claude-fable-5-1
    r"|[a-z]+-(?:mythos|fable)"  # research previews named by family
    r"|mythos|fable"
    r")",
    re.IGNORECASE,
)
_OPENAI_TOOL_SEARCH = re.compile(r"^(?:openai/)?gpt-(?:5\.(?:[4-9]|\d\d)|[6-9](?:\.\d+)?)(?:\b|-|$)", re.I)


def anthropic_native_tool_search(model: str) -> bool:
    """Does this Claude model take ``tool_search_tool_bm25_20251119`` and ``defer_loading``?"""
    return bool(_ANTHROPIC_TOOL_SEARCH.search(model or ""))


def openai_hosted_tool_search(model: str) -> bool:
    """Does this OpenAI model have hosted tool search (GPT-5.4 and later)?"""
    return bool(_OPENAI_TOOL_SEARCH.search(model or ""))
