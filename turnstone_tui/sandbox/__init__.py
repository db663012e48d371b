"""Where code the model runs is confined: the OS sandbox (bubblewrap) and the subprocess environment.

- ``policy.SandboxPolicy``: what the user configured (``[sandbox] mode``, ``network``, ``writable``,
  ``auto_approve``; ``--no-sandbox``) and ``plan``: how one command will run (sandboxed or not, why).
- ``bwrap``: the probe (can bubblewrap run on this machine?) and the profile.
- ``env``: subprocess environments built from an allowlist, never from the agent's whole environment.

Imports nothing else from turnstone_tui: executors (bash, math, watch) use it.
"""

from __future__ import annotations

from .bwrap import SandboxSupport, confine, support
from .env import child_env
from .policy import RunPlan, SandboxPolicy, plan

__all__ = ["RunPlan", "SandboxPolicy", "SandboxSupport", "child_env", "confine", "plan", "support"]
