"""The ``oauth`` key of an HTTP server table: how turnstone-tui logs in to that server.

Every HTTP server may ask for OAuth (a 401 with ``WWW-Authenticate``); nothing needs configuring
for a server that offers dynamic client registration. The table is for the rest::

    [mcp.servers.remote]
    type = "http"
    url = "https://mcp.example.com/mcp"
    oauth = { client_id = "abc", client_secret = "s3cret", scope = "read write", redirect_port = 8765 }

``oauth = false`` turns it off (the server is then used with its ``headers`` only); a server whose
``headers`` carry an ``Authorization`` header is never sent an OAuth token either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse

from ...config import ConfigError

Grant = Literal["authorization_code", "client_credentials"]
AuthMethod = Literal["", "none", "client_secret_basic", "client_secret_post"]
_GRANTS = ("authorization_code", "client_credentials")
_METHODS = ("", "none", "client_secret_basic", "client_secret_post")
_KEYS = frozenset(
    {
        "client_id",
        "client_secret",
        "scope",
        "grant",
        "client_metadata_url",
        "redirect_port",
        "token_endpoint_auth_method",
        "issuer",
    }
)


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """What the config says about one server's OAuth (all optional)."""

    enabled: bool = True
    client_id: str = (
        ""  # pre-registered client (else: Client ID Metadata Document, else dynamic registration)
    )
    client_secret: str = ""
    scope: str = ""  # scopes to ask for besides the ones the server names
    grant: Grant = "authorization_code"  # "client_credentials": no browser, for non-interactive use
    client_metadata_url: str = ""  # an https URL used as client_id where the server supports CIMD
    redirect_port: int = 0  # loopback port of the redirect URI (0: a free one, kept per server)
    token_endpoint_auth_method: AuthMethod = ""  # "" : as the authorization server advertises
    issuer: str = ""  # client_credentials: the authorization server the secret belongs to

    def __repr__(self) -> str:  # the secret stays out of logs and tracebacks
        return (
            f"OAuthSettings(enabled={self.enabled}, client_id={self.client_id!r}, "
            f"client_secret={'***' if self.client_secret else ''!r}, grant={self.grant!r})"
        )


DEFAULT = OAuthSettings()
DISABLED = OAuthSettings(enabled=False)


def parse_oauth(value: Any, where: str) -> OAuthSettings:
    """An ``oauth`` value (true/false or a table) -> OAuthSettings; ConfigError naming the key if bad."""
    if value is None or value is True:
        return DEFAULT
    if value is False:
        return DISABLED
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected true, false or a table, got {value!r}")
    unknown = set(value) - _KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {}
    for key in _KEYS - {"redirect_port"}:
        if key in value:
            if not isinstance(value[key], str):
                raise ConfigError(f"{where}.{key}: expected a string, got {value[key]!r}")
            out[key] = value[key].strip()
    port = value.get("redirect_port", 0)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"{where}.redirect_port: expected a port number (0-65535), got {port!r}")
    out["redirect_port"] = port
    if out.get("grant", "authorization_code") not in _GRANTS:
        raise ConfigError(f"{where}.grant: must be one of {', '.join(_GRANTS)}, got {out['grant']!r}")
    if out.get("token_endpoint_auth_method", "") not in _METHODS:
        raise ConfigError(
            f"{where}.token_endpoint_auth_method: must be one of {', '.join(m for m in _METHODS if m)}, "
            f"got {out['token_endpoint_auth_method']!r}"
        )
    cimd = out.get("client_metadata_url", "")
    if cimd:
        parsed = urlparse(cimd)
        if parsed.scheme != "https" or parsed.path in ("", "/"):
            raise ConfigError(
                f"{where}.client_metadata_url: must be an https URL with a path (it becomes the client_id), "
                f"got {cimd!r}"
            )
    if out.get("grant") == "client_credentials" and not (out.get("client_id") and out.get("client_secret")):
        raise ConfigError(f'{where}: grant = "client_credentials" needs client_id and client_secret')
    if out.get("client_secret") and not out.get("client_id"):
        raise ConfigError(f"{where}: client_secret without client_id")
    return OAuthSettings(**out)
