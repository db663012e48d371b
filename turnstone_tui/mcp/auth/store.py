"""OAuth tokens and client registrations, one file per MCP server, readable by the user only.

``<user data dir>/mcp-auth/<server>.json`` (mode 0600, in a 0700 directory), written atomically.
A file names the server URL it was issued for: when the configured URL changes, the old tokens
are never sent to the new address (the file is treated as absent). Implements the mcp SDK's
``TokenStorage`` protocol; tokens are never logged (``__repr__`` hides them).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import Any

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from ...config import data_dir

log = logging.getLogger(__name__)

EXPIRY_MARGIN = 30.0  # seconds: a token this close to its expiry is refreshed before use


def default_auth_dir() -> Path:
    return data_dir() / "mcp-auth"


class TokenStore:
    """One server's stored OAuth state."""

    def __init__(self, server: str, url: str, directory: Path | None = None) -> None:
        self.server = server
        self.url = url
        self.directory = Path(directory) if directory is not None else default_auth_dir()
        self.path = self.directory / f"{server}.json"

    def __repr__(self) -> str:
        return f"TokenStore({self.server!r}, {str(self.path)!r})"

    # --- the file ------------------------------------------------------------------------------

    def _read(self) -> dict[str, Any]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {}
        if stat.S_IMODE(st.st_mode) & 0o077:
            with contextlib.suppress(OSError):  # someone loosened it: tighten before reading
                os.chmod(self.path, 0o600)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning(
                "MCP server %s: unreadable token file %s (%s); ignoring it", self.server, self.path, exc
            )
            return {}
        if not isinstance(data, dict) or data.get("url") != self.url:
            return {}  # issued for another URL: never sent there
        return data

    def _write(self, data: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(self.directory, 0o700)
        data = {**data, "server": self.server, "url": self.url, "version": 1}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def _update(self, **fields: Any) -> None:
        data = self._read()
        data.update(fields)
        self._write(data)

    # --- the SDK's TokenStorage ----------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._read().get("tokens")
        if not isinstance(raw, dict):
            return None
        try:
            return OAuthToken.model_validate(raw)
        except ValueError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        self._update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self._read().get("client_info")
        if not isinstance(raw, dict):
            return None
        try:
            return OAuthClientInformationFull.model_validate(raw)
        except ValueError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._update(client_info=client_info.model_dump(mode="json", exclude_none=True))

    # --- ours ----------------------------------------------------------------------------------

    def expires_at(self) -> float | None:
        """When the stored access token expires (epoch seconds), None when it did not say."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    def discovery(self) -> dict[str, Any]:
        """What the last login discovered (resource and authorization server metadata), so a
        refresh after a restart goes to the right token endpoint."""
        value = self._read().get("discovery")
        return value if isinstance(value, dict) else {}

    def set_discovery(self, discovery: dict[str, Any]) -> None:
        self._update(discovery=discovery)

    def has_tokens(self) -> bool:
        return isinstance(self._read().get("tokens"), dict)

    def redirect_port(self) -> int:
        value = self._read().get("redirect_port")
        return value if isinstance(value, int) else 0

    def set_redirect_port(self, port: int) -> None:
        self._update(redirect_port=port)

    def wanted_scope(self) -> str:
        """Scopes the server asked for in a 403 insufficient_scope that no login granted yet."""
        value = self._read().get("wanted_scope")
        return value if isinstance(value, str) else ""

    def add_wanted_scope(self, scope: str) -> None:
        have = self.wanted_scope().split()
        merged = have + [s for s in scope.split() if s not in have]
        self._update(wanted_scope=" ".join(merged))

    def clear_wanted_scope(self) -> None:
        if self.wanted_scope():
            self._update(wanted_scope="")

    def forget_client(self) -> None:
        """Drop the client registration (its redirect URI no longer fits)."""
        data = self._read()
        if data.pop("client_info", None) is not None:
            self._write(data)

    def clear(self) -> bool:
        """Log out: delete the file. True when there was something to delete."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True
