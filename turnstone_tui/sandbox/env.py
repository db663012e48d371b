"""Subprocess environments from an allowlist: a secret the agent holds never reaches a tool's process.

Only the variables a shell session needs to work (``ALLOWED`` and ``LC_*``) are copied from the
agent's environment, plus the names the user lists in ``[env] pass = [...]``. Everything else
(``DATABASE_URL``, ``PGPASSWORD``, ``SENTRY_DSN``, provider keys ...) stays behind, whatever its name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

ALLOWED = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR",
        "FORCE_COLOR", "CLICOLOR", "TZ", "TMPDIR", "EDITOR", "VISUAL", "PAGER", "VIRTUAL_ENV", "PWD",
        "COLUMNS", "LINES", "HOSTNAME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "PYTHONIOENCODING", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "GIT_PAGER", "LESS", "MANPATH",
        "MANPAGER", "MANWIDTH", "DEBIAN_FRONTEND",
    }
)  # fmt: skip


def allowed_name(name: str, passthrough: Iterable[str] = ()) -> bool:
    return name in ALLOWED or name.startswith("LC_") or name in set(passthrough)


def child_env(
    extra: Mapping[str, str] | None = None,
    passthrough: Iterable[str] = (),
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The allowlisted part of ``source`` (default: this process's environment), then ``extra``."""
    names = set(passthrough)
    env = {k: v for k, v in (os.environ if source is None else source).items() if allowed_name(k, names)}
    if extra:
        env.update(extra)
    return env
