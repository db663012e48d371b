"""The mcp SDK's OAuth providers, fitted to turnstone-tui: stored tokens, no surprise browser, limits.

The SDK's ``OAuthClientProvider`` (an ``httpx2.Auth``) does the protocol: on a 401 it reads
``WWW-Authenticate``, discovers protected resource metadata (RFC 9728, with the well-known
fallbacks) and the authorization server's metadata (RFC 8414 / OpenID, with the 2025-03-26
fallback), registers (Client ID Metadata Document when the server supports it and one is
configured, else RFC 7591 dynamic registration), runs authorization code + PKCE S256 with the
``resource`` parameter (RFC 8707), chooses scopes (challenge, then ``scopes_supported``, plus
``offline_access`` when advertised), refreshes, and re-authorizes on a 403 ``insufficient_scope``.
``ClientCredentialsOAuthProvider`` does the client-credentials grant.

What this module adds around it (``_Fitted``):

- A connection never starts a browser login by itself: without a usable token a 401 is handed back
  to the transport (the server shows "needs login"); only ``login()`` runs the authorization flow.
- A 401 for a token that looked valid is answered with the refresh token first (the SDK would go
  straight to a new login); the stored expiry survives a restart (the SDK forgets it), so an
  expired token is refreshed before it is sent; so does the discovered metadata (after a restart
  the SDK would refresh at the MCP server's own ``/token``). A refresh refused because another
  process already rotated the refresh token takes that process's stored tokens.
- Pre-registered credentials from the config (``oauth.client_id``/``client_secret``) take precedence
  over CIMD and dynamic registration, with the token endpoint auth method the server advertises
  (client_secret_basic, else client_secret_post; none without a secret).
- Dynamic registration asks for the auth method the server advertises (none when it can).
- A request with a valid token goes out without the SDK's lock (held until the answer's headers,
  it would make a JSON-answering server take one call at a time).
- Step-up (403 ``insufficient_scope``) is limited: each challenged scope set is tried once and at
  most ``STEP_UP_LIMIT`` times per provider; a connection that may not log in remembers the scope
  so the next login asks for it.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any
from urllib.parse import urljoin

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.utils import (
    create_client_registration_request,
    extract_field_from_www_auth,
    union_scopes,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)

from .settings import OAuthSettings
from .store import EXPIRY_MARGIN, TokenStore

STEP_UP_LIMIT = 3
CLIENT_NAME = "turnstone-tui"

ShowUrl = Callable[[str], Awaitable[None]]
WaitForCode = Callable[[], Awaitable[AuthorizationCodeResult]]


def choose_auth_method(supported: list[str] | None, has_secret: bool) -> str:
    """The token endpoint auth method to use with what the server advertises (RFC 8414 §2)."""
    if not has_secret:
        return "none"
    if supported and "client_secret_basic" not in supported and "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"  # RFC 8414's default when the server lists nothing


def registration_auth_method(supported: list[str] | None) -> str:
    """What a dynamically registered (public, PKCE) client asks for: none when the server allows it."""
    if not supported or "none" in supported:
        return "none"
    if "client_secret_basic" in supported:
        return "client_secret_basic"
    return "client_secret_post" if "client_secret_post" in supported else "none"


def _is_step_up(response: httpx2.Response) -> bool:
    return (
        response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


class _Fitted:
    """Mixed in before one of the SDK's providers (see the module docstring)."""

    context: Any
    _store: TokenStore
    _settings: OAuthSettings
    _may_login: bool
    _fresh: bool
    _step_ups: int
    _tried_scopes: set[str]

    def _fit(self, store: TokenStore, settings: OAuthSettings, *, may_login: bool, fresh: bool) -> None:
        self._store = store
        self._settings = settings
        self._may_login = may_login
        self._fresh = fresh
        self._step_ups = 0
        self._tried_scopes = set()

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        if self._fresh:  # an explicit login: ask again even if a token is stored
            self.context.current_tokens = None
            self.context.token_expiry_time = None
        elif self.context.current_tokens is not None:
            expires_at = self._store.expires_at()
            self.context.token_expiry_time = expires_at - EXPIRY_MARGIN if expires_at is not None else None
        self._load_discovery()
        settings = self._settings
        if settings.client_id and settings.grant == "authorization_code":
            self.context.client_info = OAuthClientInformationFull(
                client_id=settings.client_id,
                client_secret=settings.client_secret or None,
                redirect_uris=self.context.client_metadata.redirect_uris,
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method=settings.token_endpoint_auth_method or None,
            )

    def _load_discovery(self) -> None:
        """The metadata the last login found: the SDK would otherwise refresh at the MCP server's
        origin (``/token``) after a restart, and leave out the ``resource`` parameter."""
        found = self._store.discovery()
        try:
            if self.context.oauth_metadata is None and isinstance(found.get("oauth_metadata"), dict):
                self.context.oauth_metadata = OAuthMetadata.model_validate(found["oauth_metadata"])
            if self.context.protected_resource_metadata is None and isinstance(
                found.get("resource_metadata"), dict
            ):
                self.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    found["resource_metadata"]
                )
            if self.context.auth_server_url is None and isinstance(found.get("auth_server_url"), str):
                self.context.auth_server_url = found["auth_server_url"]
        except ValueError:
            pass  # a damaged record: discovery runs again on the next 401

    def _save_discovery(self) -> None:
        ctx = self.context
        found: dict[str, Any] = {}
        if ctx.oauth_metadata is not None:
            found["oauth_metadata"] = ctx.oauth_metadata.model_dump(mode="json", exclude_none=True)
        if ctx.protected_resource_metadata is not None:
            found["resource_metadata"] = ctx.protected_resource_metadata.model_dump(
                mode="json", exclude_none=True
            )
        if ctx.auth_server_url:
            found["auth_server_url"] = ctx.auth_server_url
        if found and found != self._store.discovery():
            self._store.set_discovery(found)

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        held = self.context.current_tokens
        if await super()._handle_refresh_response(response):  # type: ignore[misc]
            return True
        # Another turnstone-tui (a second window) may have refreshed first, and the server rotated
        # the refresh token we hold: take what that one stored.
        stored = await self._store.get_tokens()
        if stored is None or held is None or stored.access_token == held.access_token:
            return False
        self.context.current_tokens = stored
        expires_at = self._store.expires_at()
        self.context.token_expiry_time = expires_at - EXPIRY_MARGIN if expires_at is not None else None
        return True

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)  # type: ignore[misc]
        self._save_discovery()

    def _settle_auth_method(self) -> None:
        """A pre-registered client without a configured method: use what the server advertises."""
        info = self.context.client_info
        settings = self._settings
        if info is None or not settings.client_id or info.client_id != settings.client_id:
            return
        if settings.token_endpoint_auth_method:
            return
        metadata = self.context.oauth_metadata
        supported = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
        info.token_endpoint_auth_method = choose_auth_method(supported, bool(settings.client_secret))

    async def _exchange_token_authorization_code(self, auth_code: str, code_verifier: str) -> httpx2.Request:
        self._settle_auth_method()
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)  # type: ignore[misc]

    async def _refresh_token(self) -> httpx2.Request:
        self._settle_auth_method()
        return await super()._refresh_token()  # type: ignore[misc]

    async def _perform_authorization(self) -> httpx2.Request:
        metadata = self.context.client_metadata
        scope = union_scopes(metadata.scope, self._settings.scope or None)
        metadata.scope = union_scopes(scope, self._store.wanted_scope() or None)
        return await super()._perform_authorization()  # type: ignore[misc]

    def _fit_registration(self, outgoing: httpx2.Request) -> httpx2.Request:
        """Rebuild a dynamic registration request with the auth method the server allows."""
        if outgoing.method != "POST" or self.context.client_info is not None:
            return outgoing
        metadata = self.context.oauth_metadata
        base = self.context.get_authorization_base_url(self.context.server_url)
        if metadata is not None and metadata.registration_endpoint:
            registration_url = str(metadata.registration_endpoint)
        else:
            registration_url = urljoin(base, "/register")
        if str(outgoing.url) != registration_url:
            return outgoing
        supported = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
        method = self._settings.token_endpoint_auth_method or registration_auth_method(supported)
        self.context.client_metadata.token_endpoint_auth_method = method
        return create_client_registration_request(metadata, self.context.client_metadata, base)

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # The SDK's flow holds its lock from sending the request until the answer's headers: a
        # server that answers JSON would get one call at a time. With a token that is still valid
        # the request goes out without the lock; only a 401/403 takes the full flow (which sends
        # the request again after it has dealt with the refusal).
        if self._initialized and self.context.is_token_valid():  # type: ignore[attr-defined]
            self._add_auth_header(request)  # type: ignore[attr-defined]
            response = yield request
            if response.status_code not in (401, 403):
                return
        flow = self._full_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                outgoing = await flow.asend((yield outgoing))
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _full_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)  # type: ignore[misc]
        first_answer = True
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    outgoing = self._fit_registration(outgoing)
                response = yield outgoing
                if outgoing is request and first_answer:
                    first_answer = False
                    if response.status_code == 401 and self.context.can_refresh_token():
                        # The server refused a token we held: the refresh token before any login.
                        refresh = await self._refresh_token()
                        if await self._handle_refresh_response((yield refresh)):  # type: ignore[attr-defined]
                            self._add_auth_header(request)  # type: ignore[attr-defined]
                            response = yield request
                        else:
                            self.context.clear_tokens()
                    if response.status_code == 401 and not self._may_login:
                        return  # the transport sees the 401: "needs login"
                    if _is_step_up(response) and not self._step_up_allowed(response):
                        return  # the caller sees the 403
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _step_up_allowed(self, response: httpx2.Response) -> bool:
        scope = extract_field_from_www_auth(response, "scope") or ""
        if not self._may_login:
            if scope:
                self._store.add_wanted_scope(scope)
            return False
        key = " ".join(sorted(scope.split()))
        if key in self._tried_scopes or self._step_ups >= STEP_UP_LIMIT:
            return False
        self._tried_scopes.add(key)
        self._step_ups += 1
        return True


class BrowserOAuth(_Fitted, OAuthClientProvider):
    """Authorization code + PKCE; the browser part only when ``show_url`` and ``wait_for_code`` are given."""

    def __init__(
        self,
        server_url: str,
        settings: OAuthSettings,
        store: TokenStore,
        *,
        redirect_uri: str = "http://127.0.0.1/callback",
        show_url: ShowUrl | None = None,
        wait_for_code: WaitForCode | None = None,
        fresh: bool = False,
    ) -> None:
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
            scope=settings.scope or None,
        )
        super().__init__(
            server_url,
            metadata,
            store,
            redirect_handler=show_url,
            callback_handler=wait_for_code,
            client_metadata_url=settings.client_metadata_url or None,
        )
        self._fit(store, settings, may_login=show_url is not None and wait_for_code is not None, fresh=fresh)


class ClientCredentialsOAuth(_Fitted, ClientCredentialsOAuthProvider):
    """The client-credentials grant: no person involved, so a connection may always run it."""

    def __init__(
        self, server_url: str, settings: OAuthSettings, store: TokenStore, *, fresh: bool = False
    ) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no issuer configured: the SDK warns, discovery decides
            super().__init__(
                server_url,
                store,
                settings.client_id,
                settings.client_secret,
                token_endpoint_auth_method=settings.token_endpoint_auth_method or "client_secret_basic",  # type: ignore[arg-type]
                scope=settings.scope or None,
                issuer=settings.issuer or None,
            )
        self._fit(store, settings, may_login=True, fresh=fresh)


def connection_auth(server_url: str, settings: OAuthSettings, store: TokenStore) -> httpx2.Auth:
    """The auth a server connection uses: stored tokens, refresh, never a browser."""
    if settings.grant == "client_credentials":
        return ClientCredentialsOAuth(server_url, settings, store)
    return BrowserOAuth(server_url, settings, store)
