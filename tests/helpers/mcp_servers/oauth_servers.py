"""An OAuth authorization server and an MCP server it protects, written for the tests (127.0.0.1 only).

Run as a script: ``python oauth_servers.py --as-port A --rs-port R [--token-ttl S] [--no-dcr]
[--client-id ID --client-secret S --client-auth-method M] [--auth-methods none,client_secret_basic,...]
[--grantable mcp:read,...] [--cimd] [--json-response]``.

The authorization server (Starlette) publishes RFC 8414 metadata, registers clients (RFC 7591),
authorizes without asking anyone (the test follows the authorize URL with httpx, as a browser
would: it redirects to the client's loopback URI with a code), and issues tokens: authorization
code with PKCE S256 verified, refresh (rotating), client credentials; client authentication none /
client_secret_basic / client_secret_post as registered; every token is bound to the ``resource``
(RFC 8707) it was asked for, and only the protected server's URL is a known resource.

The protected server is the mcp SDK's ``MCPServer`` over streamable HTTP with the SDK's bearer auth:
a token it does not know, that expired, or that was issued for another resource gets 401 with
``WWW-Authenticate: Bearer ... resource_metadata=...``; it serves RFC 9728 metadata. The tool
``admin_reset`` needs the scope ``mcp:admin`` besides ``mcp:read``: without it a call is answered
403 ``insufficient_scope`` (a step-up).

Test hooks on the authorization server: ``GET /test/events`` (what happened, in order, without
secrets), ``POST /test/expire`` (every access token expires now), ``POST /test/revoke`` (every access and
refresh token is forgotten), ``POST /test/mint?resource=&scope=``
(a token for any resource, to show the protected server refuses tokens for others).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

SCOPES = ["mcp:read", "mcp:admin", "offline_access"]


class AuthState:
    def __init__(
        self, issuer: str, resource: str, ttl: int, methods: list[str], dcr: bool, grantable: list[str]
    ) -> None:
        self.grantable = grantable  # scopes this server ever grants (a step-up past them fails)
        self.cimd = False  # Client ID Metadata Documents: an https client_id is accepted
        self.issuer = issuer
        self.resource = resource
        self.ttl = ttl
        self.methods = methods
        self.dcr = dcr
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []

    def issue(self, client_id: str, scope: str, resource: str, *, refresh: bool) -> dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(24)
        self.tokens[access] = {
            "client_id": client_id,
            "scopes": scope.split(),
            "resource": resource,
            "expires_at": int(time.time()) + self.ttl,
        }
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.ttl,
            "scope": scope,
        }
        if refresh:
            rt = "rt-" + secrets.token_urlsafe(24)
            self.refresh[rt] = {"client_id": client_id, "scope": scope, "resource": resource}
            body["refresh_token"] = rt
        return body


def _error(error: str, description: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


def authorization_server(state: AuthState) -> Starlette:
    async def metadata(request: Request) -> JSONResponse:
        body: dict[str, Any] = {
            "issuer": state.issuer,
            "authorization_endpoint": f"{state.issuer}/authorize",
            "token_endpoint": f"{state.issuer}/token",
            "scopes_supported": SCOPES,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": state.methods,
        }
        if state.dcr:
            body["registration_endpoint"] = f"{state.issuer}/register"
        if state.cimd:
            body["client_id_metadata_document_supported"] = True
        state.events.append({"event": "metadata"})
        return JSONResponse(body)

    async def register(request: Request) -> JSONResponse:
        if not state.dcr:
            return _error("invalid_request", "registration is closed", 404)
        data = await request.json()
        uris = data.get("redirect_uris") or []
        if not uris or not all(urlsplit(u).hostname == "127.0.0.1" for u in uris):
            return _error("invalid_redirect_uri", "loopback redirect URIs only")
        method = data.get("token_endpoint_auth_method") or "client_secret_basic"
        if method not in state.methods:
            return _error("invalid_client_metadata", f"token_endpoint_auth_method {method} not supported")
        client_id = "client-" + secrets.token_hex(6)
        client: dict[str, Any] = {"redirect_uris": uris, "auth_method": method, "secret": None}
        body = {**data, "client_id": client_id, "client_id_issued_at": int(time.time())}
        if method != "none":
            client["secret"] = body["client_secret"] = secrets.token_urlsafe(16)
        state.clients[client_id] = client
        state.events.append({"event": "register", "client_id": client_id, "auth_method": method})
        return JSONResponse(body, status_code=201)

    def cimd_client(client_id: str) -> dict[str, Any] | None:
        """A client known by its metadata document URL. A real server fetches the document (it
        names the redirect URIs); this one runs offline, so it takes loopback redirects on trust."""
        if not state.cimd or not client_id.startswith("https://"):
            return None
        return {"redirect_uris": ["http://127.0.0.1/callback"], "auth_method": "none", "secret": None}

    async def authorize(request: Request) -> Response:
        q = dict(request.query_params)
        client = state.clients.get(q.get("client_id", "")) or cimd_client(q.get("client_id", ""))
        state.events.append({"event": "authorize", **{k: v for k, v in q.items() if k != "state"}})
        if client is None:
            return _error("invalid_client", "unknown client")
        redirect = q.get("redirect_uri", "")
        ok = urlsplit(redirect)
        if not any(
            urlsplit(u).hostname == ok.hostname == "127.0.0.1" and urlsplit(u).path == ok.path
            for u in client["redirect_uris"]
        ):  # RFC 8252 §7.3: any port on the loopback interface
            return _error("invalid_request", "redirect_uri not registered")
        if (
            q.get("response_type") != "code"
            or q.get("code_challenge_method") != "S256"
            or not q.get("code_challenge")
        ):
            return _error("invalid_request", "PKCE S256 required")
        if q.get("resource") != state.resource:
            return RedirectResponse(
                f"{redirect}?{urlencode({'error': 'invalid_target', 'state': q.get('state', '')})}"
            )
        code = "code-" + secrets.token_urlsafe(16)
        state.codes[code] = {
            "client_id": q["client_id"],
            "redirect_uri": redirect,
            "challenge": q["code_challenge"],
            "scope": " ".join(s for s in q.get("scope", "mcp:read").split() if s in state.grantable),
            "resource": q["resource"],
            "expires": time.time() + 120,
        }
        params = {"code": code, "state": q.get("state", ""), "iss": state.issuer}
        return RedirectResponse(f"{redirect}?{urlencode(params)}", status_code=302)

    def client_auth(request: Request, form: dict[str, str]) -> tuple[str, str] | JSONResponse:
        """(client_id, how it authenticated) or an error response."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            raw = base64.b64decode(header[6:]).decode()
            client_id, _, secret = raw.partition(":")
            how = "client_secret_basic"
        elif "client_secret" in form:
            client_id, secret, how = form.get("client_id", ""), form["client_secret"], "client_secret_post"
        else:
            client_id, secret, how = form.get("client_id", ""), "", "none"
        client = state.clients.get(client_id) or cimd_client(client_id)
        if client is None:
            return _error("invalid_client", "unknown client", 401)
        if how != client["auth_method"] or (client["secret"] is not None and secret != client["secret"]):
            return _error("invalid_client", f"client authentication failed ({how})", 401)
        return client_id, how

    async def token(request: Request) -> JSONResponse:
        form = {k: str(v) for k, v in (await request.form()).items()}
        authed = client_auth(request, form)
        if isinstance(authed, JSONResponse):
            state.events.append(
                {"event": "token", "grant": form.get("grant_type"), "error": "invalid_client"}
            )
            return authed
        client_id, how = authed
        grant = form.get("grant_type")
        event: dict[str, Any] = {
            "event": "token",
            "grant": grant,
            "auth": how,
            "resource": form.get("resource"),
        }
        state.events.append(event)
        if grant == "authorization_code":
            code = state.codes.pop(form.get("code", ""), None)
            if code is None or code["expires"] < time.time() or code["client_id"] != client_id:
                event["error"] = "invalid_grant"
                return _error("invalid_grant", "unknown or used code")
            if form.get("redirect_uri") != code["redirect_uri"]:
                event["error"] = "invalid_grant"
                return _error("invalid_grant", "redirect_uri differs")
            verifier = form.get("code_verifier", "")
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
            )
            event["pkce"] = challenge == code["challenge"]
            if not event["pkce"]:
                event["error"] = "invalid_grant"
                return _error("invalid_grant", "PKCE verification failed")
            if form.get("resource") != code["resource"]:
                event["error"] = "invalid_target"
                return _error("invalid_target", "resource differs from the authorization")
            return JSONResponse(state.issue(client_id, code["scope"], code["resource"], refresh=True))
        if grant == "refresh_token":
            old = state.refresh.pop(form.get("refresh_token", ""), None)
            if old is None or old["client_id"] != client_id:
                event["error"] = "invalid_grant"
                return _error("invalid_grant", "unknown refresh token")
            resource = form.get("resource") or old["resource"]
            if resource != old["resource"]:
                event["error"] = "invalid_target"
                return _error("invalid_target", "resource differs")
            return JSONResponse(state.issue(client_id, old["scope"], resource, refresh=True))
        if grant == "client_credentials":
            resource = form.get("resource") or state.resource
            return JSONResponse(
                state.issue(client_id, form.get("scope") or "mcp:read", resource, refresh=False)
            )
        event["error"] = "unsupported_grant_type"
        return _error("unsupported_grant_type", str(grant))

    async def events(request: Request) -> JSONResponse:
        return JSONResponse(state.events)

    async def expire(request: Request) -> JSONResponse:
        for info in state.tokens.values():
            info["expires_at"] = int(time.time()) - 1
        return JSONResponse({"expired": len(state.tokens)})

    async def revoke(request: Request) -> JSONResponse:
        count = len(state.tokens) + len(state.refresh)
        state.tokens.clear()
        state.refresh.clear()
        return JSONResponse({"revoked": count})

    async def mint(request: Request) -> JSONResponse:
        q = request.query_params
        return JSONResponse(
            state.issue("minted", q.get("scope", "mcp:read"), q.get("resource", ""), refresh=False)
        )

    return Starlette(
        routes=[
            Route("/.well-known/oauth-authorization-server", metadata),
            Route("/register", register, methods=["POST"]),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Route("/test/events", events),
            Route("/test/expire", expire, methods=["POST"]),
            Route("/test/mint", mint, methods=["POST"]),
            Route("/test/revoke", revoke, methods=["POST"]),
        ]
    )


class TableVerifier:
    """The protected server's view of the authorization server's tokens (an in-process lookup)."""

    def __init__(self, state: AuthState) -> None:
        self.state = state

    async def verify_token(self, token: str) -> AccessToken | None:
        info = self.state.tokens.get(token)
        if info is None:
            return None
        return AccessToken(
            token=token,
            client_id=info["client_id"],
            scopes=info["scopes"],
            expires_at=info["expires_at"],
            resource=info["resource"],
        )


class StepUp:
    """ASGI middleware: ``tools/call admin_reset`` needs ``mcp:admin`` (else 403 insufficient_scope)."""

    def __init__(self, app: Any, state: AuthState, metadata_url: str) -> None:
        self.app = app
        self.state = state
        self.metadata_url = metadata_url

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("method") == "tools/call":
            name = (data.get("params") or {}).get("name")
            headers = dict(scope["headers"])
            token = headers.get(b"authorization", b"").decode()[7:]
            info = self.state.tokens.get(token) or {}
            if name == "admin_reset" and "mcp:admin" not in info.get("scopes", []):
                challenge = (
                    f'Bearer error="insufficient_scope", scope="mcp:read mcp:admin", '
                    f'resource_metadata="{self.metadata_url}"'
                )
                payload = b'{"error": "insufficient_scope"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()),
                            (b"www-authenticate", challenge.encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": payload})
                return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def protected_server(state: AuthState, rs_url: str, json_response: bool = False) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = MCPServer(
            "protected",
            token_verifier=TableVerifier(state),
            auth=AuthSettings(
                issuer_url=state.issuer,
                resource_server_url=f"{rs_url}/mcp",
                required_scopes=["mcp:read"],
                validate_token_resource=True,
            ),
        )

    @server.tool(description="Say who is calling (needs mcp:read).")
    def whoami() -> str:
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return f"protected hello to {token.client_id if token else 'nobody'}"

    arrived: list[asyncio.Event] = []

    @server.tool(description="Wait (up to 20 s) until another call of this tool is running too.")
    async def rendezvous() -> str:
        mine = asyncio.Event()
        others = list(arrived)
        arrived.append(mine)
        for event in others:
            event.set()
        if others:
            return "met"
        try:
            await asyncio.wait_for(mine.wait(), 20)
        except TimeoutError:
            return "alone"
        finally:
            arrived.remove(mine)
        return "met"

    @server.tool(description="An admin action (needs mcp:admin: a step-up).")
    def admin_reset() -> str:
        return "admin reset done"

    app = server.streamable_http_app(host="127.0.0.1", json_response=json_response)
    return StepUp(app, state, f"{rs_url}/.well-known/oauth-protected-resource/mcp")


async def serve(args: argparse.Namespace) -> None:
    issuer = f"http://127.0.0.1:{args.as_port}"
    rs_url = f"http://127.0.0.1:{args.rs_port}"
    state = AuthState(
        issuer,
        f"{rs_url}/mcp",
        args.token_ttl,
        args.auth_methods.split(","),
        not args.no_dcr,
        args.grantable.split(","),
    )
    state.cimd = args.cimd
    if args.client_id:
        state.clients[args.client_id] = {
            "redirect_uris": ["http://127.0.0.1/callback"],
            "auth_method": args.client_auth_method,
            "secret": args.client_secret or None,
        }
    servers = [
        uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
        for app, port in (
            (authorization_server(state), args.as_port),
            (protected_server(state, rs_url, args.json_response), args.rs_port),
        )
    ]
    await asyncio.gather(*(s.serve() for s in servers))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--as-port", type=int, required=True)
    p.add_argument("--rs-port", type=int, required=True)
    p.add_argument("--token-ttl", type=int, default=3600)
    p.add_argument("--no-dcr", action="store_true")
    p.add_argument("--auth-methods", default="none,client_secret_basic,client_secret_post")
    p.add_argument("--grantable", default=",".join(SCOPES))
    p.add_argument("--cimd", action="store_true", help="advertise Client ID Metadata Document support")
    p.add_argument("--json-response", action="store_true", help="the MCP server answers JSON, not SSE")
    p.add_argument("--client-id", default="")
    p.add_argument("--client-secret", default="")
    p.add_argument("--client-auth-method", default="client_secret_basic")
    asyncio.run(serve(p.parse_args()))


if __name__ == "__main__":
    main()
