"""Where code the model runs is confined: the OS sandbox (bubblewrap) and the subprocess environment.

- ``policy.SandboxPolicy``: what the user configured (``[sandbox] mode``, ``network``, ``writable``,
  ``auto_approve``; ``--no-sandbox``) and ``plan``: how one command will run (sandboxed or not, why).
- ``bwrap``: the probe (can bubblewrap run on this machine?) and the profile.
- ``env``: subprocess environments built from an allowlist, never from the agent's whole environment.

Imports nothing else from turnstone_tui: executors (bash, math, watch) use it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bwrap import SandboxSupport, confine, support
    from .env import child_env
    from .policy import RunPlan, SandboxPolicy, plan

__all__ = ["RunPlan", "SandboxPolicy", "SandboxSupport", "child_env", "confine", "plan", "support"]

_HOME = {
    "SandboxSupport": "bwrap",
    "confine": "bwrap",
    "support": "bwrap",
    "child_env": "env",
    "RunPlan": "policy",
    "SandboxPolicy": "policy",
    "plan": "policy",
}


def __getattr__(name: str) -> Any:
    # Loaded on first use: the command line imports only ``process`` (make_undumpable) before the
    # app's first frame, and the profile builder is not needed until a command runs.
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
