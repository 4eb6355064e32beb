#!/usr/bin/env python3
"""The client authorization scenarios of the MCP conformance suite
(github modelcontextprotocol/conformance, src/scenarios/client/auth/), ported
to one small server per scenario: an MCP resource at /mcp and its
authorization server on the same port (the suite runs two; one origin serves
here, with the suite's paths). What the client does is recorded as the
suite's checks, under the suite's check ids, at GET /checks (a list of
{"id", "status", "description"}); a FAILURE names what the suite would fail.

Scenarios (--scenario NAME; what the suite checks):
  metadata-default  PRM at /.well-known/oauth-protected-resource/mcp, named in
                    WWW-Authenticate; AS metadata at the root RFC 8414 path; a
                    request for the root PRM is prm-priority-order FAILURE
  metadata-var1     PRM path-based, not in WWW-Authenticate; AS metadata only
                    at /.well-known/openid-configuration
  metadata-var2     PRM only at the root, resource = the origin; the AS is
                    ORIGIN/tenant1, its metadata at
                    /.well-known/oauth-authorization-server/tenant1; a request
                    for the root AS metadata is
                    authorization-server-metadata-wrong-path FAILURE
  metadata-var3     PRM at /custom/metadata/location.json (in WWW-Authenticate);
                    AS ORIGIN/tenant1, metadata at /tenant1/.well-known/openid-configuration
  token-endpoint-auth-basic|post|none
                    the AS lists only that method and registers clients with
                    it (a secret for basic and post): token-endpoint-auth-method
  pre-registration  no registration endpoint; the AS lists client_secret_basic
                    only; the client is pre-registered as
                    conformance-client / conformance-secret
  resource-mismatch the PRM names another origin's resource: the client must
                    not go on to authorize (resource-mismatch-authorization)
Every scenario: the MCP endpoint takes any JSON-RPC request with a token the
AS issued (either era: with or without a session) and answers it; the
authorization request and the token request are checked for PKCE (S256),
the resource parameter (RFC 8707) and the redirect.

Usage: conformance_server.py --scenario NAME; prints "port N" once listening.
"""
import argparse
import base64
import hashlib
import json
import secrets
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
checks = []
clients = {}  # client_id -> (secret or None, auth method)
codes = {}  # code -> (client_id, challenge, redirect_uri, resource)
tokens = set()
state = {"base": "", "scenario": "", "authorized": 0}

PRE_REGISTERED = ("conformance-client", "conformance-secret")


def check(check_id, ok, description, **details):
    with lock:
        checks.append({"id": check_id, "status": "SUCCESS" if ok else "FAILURE", "description": description,
                       "details": details})


def scenario():
    return state["scenario"]


def issuer():
    s = scenario()
    return state["base"] + ("/tenant1" if s in ("metadata-var2", "metadata-var3") else "")


def resource_url():
    if scenario() == "metadata-var2":
        return state["base"]
    if scenario() == "resource-mismatch":
        return "https://other.example.com/mcp"
    return state["base"] + "/mcp"


def prm_path():
    return {"metadata-var2": "/.well-known/oauth-protected-resource",
            "metadata-var3": "/custom/metadata/location.json"}.get(scenario(),
                                                                  "/.well-known/oauth-protected-resource/mcp")


def as_metadata_path():
    return {"metadata-var1": "/.well-known/openid-configuration",
            "metadata-var2": "/.well-known/oauth-authorization-server/tenant1",
            "metadata-var3": "/tenant1/.well-known/openid-configuration"}.get(
        scenario(), "/.well-known/oauth-authorization-server")


def auth_methods():
    s = scenario()
    if s.startswith("token-endpoint-auth-"):
        return [{"basic": "client_secret_basic", "post": "client_secret_post", "none": "none"}[s.rsplit("-", 1)[1]]]
    if s == "pre-registration":
        return ["client_secret_basic"]
    return ["client_secret_post", "none"]


def as_metadata():
    i = issuer()
    doc = {"issuer": i, "authorization_endpoint": i + "/authorize", "token_endpoint": i + "/token",
           "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token"],
           "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": auth_methods()}
    if scenario() != "pre-registration":
        doc["registration_endpoint"] = i + "/register"
    return doc


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", headers=(), content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        if path == "/checks":
            with lock:
                return self.send(200, list(checks))
        if path == "/.well-known/oauth-protected-resource" and scenario() == "metadata-default":
            check("prm-priority-order", False, "Client requested PRM metadata at root location on a server with "
                                               "path-based PRM")
            return self.send(404, {"error": "not_found"})
        if path == prm_path():
            return self.send(200, {"resource": resource_url(), "authorization_servers": [issuer()]})
        if path == as_metadata_path():
            return self.send(200, as_metadata())
        if path == "/.well-known/oauth-authorization-server" and scenario() in ("metadata-var2", "metadata-var3"):
            check("authorization-server-metadata-wrong-path", False,
                  "Client requested authorization server at the root path when the AS URL has a path-based location")
            return self.send(404, {"error": "not_found"})
        if path == urllib.parse.urlsplit(issuer()).path + "/authorize":
            return self.authorize(urllib.parse.parse_qs(url.query))
        self.send(404, {"error": "not_found"})

    def authorize(self, q):
        one = {k: v[0] for k, v in q.items()}
        with lock:
            state["authorized"] += 1
        if scenario() == "resource-mismatch":
            check("resource-mismatch-authorization", False, "Client went on to authorize for a resource whose "
                                                            "metadata names another resource")
        check("authorization-pkce", one.get("code_challenge_method") == "S256" and bool(one.get("code_challenge")),
              "PKCE with S256 on the authorization request")
        check("authorization-resource", one.get("resource") == resource_url(),
              "RFC 8707 resource on the authorization request", resource=one.get("resource"))
        client = one.get("client_id", "")
        if client not in clients and client != PRE_REGISTERED[0]:
            return self.send(400, {"error": "invalid_client"})
        code = "code-" + secrets.token_hex(8)
        with lock:
            codes[code] = (client, one.get("code_challenge"), one.get("redirect_uri"), one.get("resource"))
        target = one["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": one.get("state", "")})
        self.send(302, b"", [("Location", target)])

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        data = self.body()
        as_path = urllib.parse.urlsplit(issuer()).path
        if path == as_path + "/register" and scenario() != "pre-registration":
            method = auth_methods()[0] if scenario().startswith("token-endpoint-auth-") else "client_secret_post"
            client_id = "client-" + secrets.token_hex(4)
            secret = None if method == "none" else "secret-" + secrets.token_hex(8)
            with lock:
                clients[client_id] = (secret, method)
            answer = dict(json.loads(data or b"{}"), client_id=client_id, token_endpoint_auth_method=method)
            if secret:
                answer["client_secret"] = secret
            return self.send(201, answer)
        if path == as_path + "/token":
            return self.token(urllib.parse.parse_qs(data.decode()))
        if path == "/mcp":
            return self.mcp(data)
        self.send(404, {"error": "not_found"})

    def client_auth(self, form):
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            try:
                decoded = base64.b64decode(header[6:]).decode()
            except Exception:
                return None, None, "client_secret_basic", "base64 decoding failed"
            if ":" not in decoded:
                return None, None, "client_secret_basic", "missing colon separator"
            cid, secret = decoded.split(":", 1)
            return urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(secret), "client_secret_basic", None
        if form.get("client_secret"):
            return form.get("client_id"), form.get("client_secret"), "client_secret_post", None
        return form.get("client_id"), None, "none", None

    def token(self, q):
        form = {k: v[0] for k, v in q.items()}
        cid, secret, used, malformed = self.client_auth(form)
        if scenario().startswith("token-endpoint-auth-") or scenario() == "pre-registration":
            expected = auth_methods()[0]
            check("token-endpoint-auth-method", used == expected and malformed is None,
                  f"Client used {used} where the server supports only {expected}", formatError=malformed)
        with lock:
            known = clients.get(cid)
        if cid == PRE_REGISTERED[0]:
            ok = secret == PRE_REGISTERED[1] and used == "client_secret_basic"
        else:
            ok = known is not None and (known[0] is None or secret == known[0])
        if not ok:
            return self.send(401, {"error": "invalid_client", "error_description": "client authentication failed"})
        check("token-resource", form.get("resource") == resource_url(), "RFC 8707 resource on the token request",
              resource=form.get("resource"))
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with lock:
                entry = codes.pop(form.get("code", ""), None)
            if entry is None:
                return self.send(400, {"error": "invalid_grant"})
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            check("token-pkce-verifier", digest == entry[1], "The code verifier matches the challenge")
        elif grant != "refresh_token":
            return self.send(400, {"error": "unsupported_grant_type"})
        access = "at-" + secrets.token_hex(8)
        with lock:
            tokens.add(access)
        self.send(200, {"access_token": access, "refresh_token": "rt-" + secrets.token_hex(8), "token_type": "Bearer",
                        "expires_in": 3600})

    def mcp(self, data):
        header = self.headers.get("Authorization", "")
        with lock:
            known = header.startswith("Bearer ") and header[7:] in tokens
        if not known:
            meta = state["base"] + prm_path()
            challenge = 'Bearer error="invalid_token"'
            if scenario() in ("metadata-default", "metadata-var3", "token-endpoint-auth-basic",
                              "token-endpoint-auth-post", "token-endpoint-auth-none", "pre-registration",
                              "resource-mismatch"):
                challenge += f', resource_metadata="{meta}"'
            return self.send(401, {"error": "invalid_token"}, [("WWW-Authenticate", challenge)])
        message = json.loads(data or b"null")
        if not isinstance(message, dict) or message.get("id") is None:
            return self.send(202, b"", content_type="text/plain")
        method = message.get("method")
        result = {"echo": method}
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "conformance", "version": "1"}}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        self.send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state["base"] = f"http://127.0.0.1:{server.server_address[1]}"
    state["scenario"] = args.scenario
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
