#!/usr/bin/env python3
"""A remote MCP server built on the official MCP Python SDK (`mcp` on PyPI),
with the SDK's own authorization-server routes over an in-memory provider:
dynamic client registration, codes with PKCE, tokens bound to the resource
(RFC 8707, validate_token_resource on), refresh tokens rotated on every use,
and a refresh token used twice revoking its whole family.

GET /stats: the counters (registrations, codes, refreshes, replays, and
waits_cancelled: calls of the tool `wait` whose request went away) as JSON.
GET /last-registration: the JSON body of the last registration request.
GET /last-routing: the routing headers (MCP-Protocol-Version, Mcp-Method,
Mcp-Name, Mcp-Param-*) and Mcp-Session-Id of the last POST to a resource,
and the method of its body.
POST /liar: answers 401 naming the first resource's metadata (a resource
that points at another resource's document).
POST /tools-changed: a tools-list-changed event for every subscriptions/listen stream.
POST /forget-sessions: every MCP session is forgotten (a restart, an idle
expiry): its id then answers 404.
POST /forget-access: every access token is forgotten (a server restarted
without its token store): the next request with one gets a 401.
--also PATH: a second resource on the same host, at PATH, that asks for the
scopes files:read and files:write (a token with fewer gets a 403
insufficient_scope); every other path is the first resource's.
--offline-access: as an OpenID Connect server (Keycloak, Auth0, Okta) does,
the authorization server lists offline_access in its scopes_supported and
issues a refresh token only when that scope was granted.
--legacy-only: a server of the handshake era alone, as servers built before
2026-07-28 are: a request of the per-request era reaches its session path
and is refused ("Missing session ID").
Usage: mcp_server.py [--path /mcp] [--also PATH] [--token-ttl SECONDS] [--port N] [--legacy-only]
Prints "port N" once listening on 127.0.0.1. Run with the SDK's venv
(.build/mcp-venv, made by scripts/deps.sh).
"""
import argparse
import contextlib
import json
import secrets
import socket
import time

from typing import Annotated

import anyio
import uvicorn
from pydantic import Field
from starlette.responses import JSONResponse
from mcp.server.auth.provider import (AccessToken, AuthorizationCode, RefreshToken, TokenError,
                                      construct_redirect_uri)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthToken

parser = argparse.ArgumentParser()
parser.add_argument("--path", default="/mcp")
parser.add_argument("--also")
parser.add_argument("--token-ttl", type=int, default=3600)
parser.add_argument("--port", type=int, default=0, help="listen on this port (a restart keeps its address)")
parser.add_argument("--legacy-only", action="store_true")
parser.add_argument("--offline-access", action="store_true",
                    help="list offline_access in scopes_supported and issue a refresh token only for it")
args = parser.parse_args()

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", args.port))
port = sock.getsockname()[1]
base = f"http://127.0.0.1:{port}"
resource = base + args.path


class Provider:
    """Auto-approves every authorization; counts what happens."""

    def __init__(self):
        self.clients, self.codes, self.refresh, self.access = {}, {}, {}, {}
        self.family_of, self.revoked_families, self.used = {}, set(), set()
        self.stats = {"registrations": 0, "codes": 0, "refreshes": 0, "replays": 0, "waits_cancelled": 0,
                      "sessions_forgotten": 0}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, info):
        self.stats["registrations"] += 1
        self.clients[info.client_id] = info

    async def authorize(self, client, params):
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject="alice")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    def issue(self, client_id, scopes, resource, family):
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires = int(time.time()) + args.token_ttl
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, expires_at=expires,
                                          resource=resource, subject="alice")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource,
                                             subject="alice")
        self.family_of[refresh] = family
        if args.offline_access and "offline_access" not in scopes:
            self.refresh.pop(refresh)
            refresh = None
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=args.token_ttl,
                          refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client, code):
        self.codes.pop(code.code, None)
        self.stats["codes"] += 1
        return self.issue(client.client_id, code.scopes, code.resource, secrets.token_hex(8))

    async def load_refresh_token(self, client, token):
        if token in self.used:
            # A rotated refresh token came back: someone else has the new one. Revoke the family.
            self.stats["replays"] += 1
            self.revoked_families.add(self.family_of.get(token))
            return None
        found = self.refresh.get(token)
        if found is None or self.family_of.get(token) in self.revoked_families:
            return None
        return found

    async def exchange_refresh_token(self, client, token, scopes):
        self.used.add(token.token)
        self.refresh.pop(token.token, None)
        self.stats["refreshes"] += 1
        return self.issue(client.client_id, scopes or token.scopes, token.resource, self.family_of[token.token])

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()


def make_server(path, required):
    return MCPServer(
        name="tokenvault-test", auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base, resource_server_url=base + path, validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, default_scopes=["files:read"],
                valid_scopes=["files:read", "files:write"] + (["offline_access"] if args.offline_access else [])),
            revocation_options=RevocationOptions(enabled=True), required_scopes=required))


server = make_server(args.path, ["files:read"])


@server.custom_route("/stats", methods=["GET"])
async def stats(request):
    return JSONResponse(provider.stats)


last_registration = {}


@server.custom_route("/last-registration", methods=["GET"])
async def registration(request):
    return JSONResponse(last_registration)


last_routing = {}


@server.custom_route("/last-routing", methods=["GET"])
async def routing(request):
    return JSONResponse(last_routing)


@server.custom_route("/liar", methods=["GET", "POST"])
async def liar(request):
    metadata = base + "/.well-known/oauth-protected-resource" + args.path
    return JSONResponse({"error": "invalid_token"}, status_code=401,
                        headers={"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})


@server.custom_route("/tools-changed", methods=["POST"])
async def tools_changed(request):
    """Tells every subscriptions/listen stream that asked for it that the tools changed."""
    from mcp.server.subscriptions import ToolsListChanged
    await server._subscriptions.publish(ToolsListChanged())
    return JSONResponse({})


@server.custom_route("/forget-sessions", methods=["POST"])
async def forget_sessions(request):
    """Every session is forgotten, as a restart or an idle expiry does: its id then answers 404."""
    forgotten = 0
    for s in servers:
        manager = s.session_manager
        for sid, transport in list(manager._server_instances.items()):
            await manager._discard_session(sid, transport)
            forgotten += 1
    provider.stats["sessions_forgotten"] += forgotten
    return JSONResponse({"forgotten": forgotten})


@server.custom_route("/forget-access", methods=["POST"])
async def forget_access(request):
    provider.access.clear()
    return JSONResponse({})


def tools(s):
    @s.tool()
    def echo(text: str) -> str:
        """Says the text back."""
        return text

    @s.tool()
    async def wait(seconds: int) -> str:
        """Waits that long; a wait whose request went away is counted (stats: waits_cancelled)."""
        try:
            await anyio.sleep(seconds)
        except BaseException:
            provider.stats["waits_cancelled"] += 1
            raise
        return "waited"

    @s.tool()
    def locate(text: str, region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """Says the text back with its region (mirrored in the Mcp-Param-Region header at 2026-07-28)."""
        return f"{text} @ {region}"


tools(server)
app = server.streamable_http_app(streamable_http_path=args.path)
servers = [server]

if args.also:
    second = make_server(args.also, ["files:read", "files:write"])
    tools(second)
    second_app = second.streamable_http_app(streamable_http_path=args.also)
    servers.append(second)
    first_app = app
    second_paths = (args.also, "/.well-known/oauth-protected-resource" + args.also)

    async def app(scope, receive, send):
        """Requests for the second resource go to its app; the lifespan runs both session managers."""
        if scope["type"] == "lifespan":
            async with contextlib.AsyncExitStack() as stack:
                for s in servers:
                    await stack.enter_async_context(s.session_manager.run())
                await receive()
                await send({"type": "lifespan.startup.complete"})
                await receive()
                await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope.get("path", "")
        target = second_app if any(path == p or path.startswith(p + "/") for p in second_paths) else first_app
        await target(scope, receive, send)



def recording(inner):
    """Keeps the body of each registration request for /last-registration,
    and the routing headers of each POST to a resource for /last-routing."""
    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] != "/register" \
                and not scope["path"].startswith(("/token", "/revoke", "/forget", "/liar", "/tools-changed")):
            wanted = ("mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id")
            last_routing.clear()
            for name, value in scope["headers"]:
                key = name.decode("latin-1").lower()
                if key in wanted or key.startswith("mcp-param-"):
                    last_routing[key] = value.decode("latin-1")
        if scope["type"] != "http" or scope["path"] != "/register":
            return await inner(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        last_registration.clear()
        with contextlib.suppress(ValueError):
            last_registration.update(json.loads(body))
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await inner(scope, replay, send)
    return wrapped


app = recording(app)

if args.legacy_only:
    handshake = {b"2024-11-05", b"2025-03-26", b"2025-06-18", b"2025-11-25"}
    modern_app = app

    async def app(scope, receive, send):
        """Drops a protocol version of the per-request era: the request then goes the session's way."""
        if scope["type"] == "http":
            scope = dict(scope, headers=[(k, v) for k, v in scope["headers"]
                                         if k != b"mcp-protocol-version" or v in handshake])
        await modern_app(scope, receive, send)
sock.listen(128)  # connections wait in the backlog until uvicorn serves them
print("port", port, flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
