"""The environment every child process gets: the user's, without secrets.

Every subprocess a tool, a watch or a stdio MCP server starts takes its environment from here.
"""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(
    r"(_KEY|_SECRET|_TOKEN|_PASSWORD|_PASSWD|_CREDENTIALS?)$|^(API_KEY|TOKEN|SECRET|PASSWORD)$", re.I
)
_PROVIDER_KEYS = frozenset(
    {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "TAVILY_API_KEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "GOOGLE_API_KEY",
        "AZURE_OPENAI_API_KEY",
    }
)


def is_secret_env_name(name: str) -> bool:
    return name.upper() in _PROVIDER_KEYS or bool(_SECRET_NAME.search(name))


def scrubbed_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The process environment without secrets, for every subprocess a tool starts."""
    env = {k: v for k, v in os.environ.items() if not is_secret_env_name(k)}
    if extra:
        env.update(extra)
    return env
