"""The environment and the sandbox policy every child process gets.

Every subprocess a tool, a watch or a stdio MCP server starts takes its environment from here:
an allowlist (PATH, HOME, LANG, ...) plus ``[env] pass`` names plus what the caller adds; never
the agent's secrets. Each also carries a marker (``child_marker``) so it dies with the agent, whatever
kills the agent (sandbox/guardian.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..sandbox import RunPlan, SandboxPolicy, child_env, plan
from ..sandbox.lifetime import child_marker, ensure_guardian_async
from ..sandbox.policy import describe

__all__ = [
    "RunPlan",
    "SandboxPolicy",
    "child_marker",
    "ensure_guardian_async",
    "is_secret_env_name",
    "plan",
    "sandbox_label",
    "sandbox_policy",
    "scrubbed_env",
]

if TYPE_CHECKING:
    from ..config import Config

_SECRET_NAME = re.compile(
    r"(_KEY|_SECRET|_TOKEN|_PASSWORD|_PASSWD|_CREDENTIALS?)$|^(API_KEY|TOKEN|SECRET|PASSWORD)$", re.I
)


def is_secret_env_name(name: str) -> bool:
    """A name that looks like a secret (used to redact; subprocess environments use an allowlist)."""
    return bool(_SECRET_NAME.search(name))


def scrubbed_env(extra: dict[str, str] | None = None, passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The environment for every subprocess a tool starts (see the module docstring)."""
    return child_env(extra, passthrough)


def sandbox_label(config: Config) -> str:
    """The status bar's word for the sandbox: "sandbox", "no sandbox" or "sandbox unavailable".
    Blocking the first time (it probes bubblewrap): call it off the event loop."""
    return describe(sandbox_policy(config))


def sandbox_policy(config: Config) -> SandboxPolicy:
    sb = config.sandbox
    db = config.resolved_db_path()
    files = (config.path, db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))
    hidden = tuple(str(p) for p in files if p is not None)
    return SandboxPolicy(sb.mode, sb.network == "on", tuple(sb.writable), sb.auto_approve, hidden)
