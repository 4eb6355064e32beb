#!/usr/bin/env python3
"""A small authorization server that takes clients by their Client ID
Metadata Document (draft-ietf-oauth-client-id-metadata-document), as MCP
2026-07-28 servers do, in front of a protected resource at /mcp. The MCP
SDK's server has no such support yet, so this is a stub; it does what the
draft says:

- its metadata advertises client_id_metadata_document_supported (and, with
  --registration, an RFC 7591 registration endpoint too);
- at /authorize, a client id that is an https URL is fetched (over TLS, the
  CA given by --ca) and must be a JSON document whose client_id is that URL
  and whose redirect_uris list the redirect URI sent (a loopback one may
  differ in its port, RFC 8252); anything else is a 400 and no code;
- codes need PKCE S256; tokens are bound to the client id they were issued
  to; refresh tokens rotate.

A second listener serves --doc-dir over https (--cert, --key) on loopback:
the place a user would host the document. GET /info says its port.
GET /stats: requests (every one but /stats and /info), fetches, registrations, codes, refreshes, refused, last_client_id.
Usage: cimd_server.py --cert PEM --key PEM --doc-dir DIR [--registration] [--token-ttl S]
Prints "port N" once listening on 127.0.0.1.
"""
import argparse
import base64
import hashlib
import http.server
import json
import os
import secrets
import ssl
import threading
import urllib.parse
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("--cert", required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--doc-dir", required=True)
parser.add_argument("--registration", action="store_true")
parser.add_argument("--token-ttl", type=int, default=3600)
args = parser.parse_args()

lock = threading.Lock()
stats = {"requests": 0, "fetches": 0, "registrations": 0, "codes": 0, "refreshes": 0, "refused": 0, "last_client_id": ""}
codes, refresh_tokens, registered = {}, {}, set()


class Documents(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=args.doc_dir, **kw)

    def log_message(self, *a):
        pass


docs = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Documents)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(args.cert, args.key)
docs.socket = context.wrap_socket(docs.socket, server_side=True)
threading.Thread(target=docs.serve_forever, daemon=True).start()
fetch_context = ssl.create_default_context(cafile=args.cert)


def loopback_match(sent, listed):
    """RFC 8252: a loopback redirect URI matches whatever its port."""
    a, b = urllib.parse.urlsplit(sent), urllib.parse.urlsplit(listed)
    if a.hostname in ("127.0.0.1", "::1") and b.port is None:
        return (a.scheme, a.hostname, a.path, a.query) == (b.scheme, b.hostname, b.path, b.query)
    return sent == listed


def client_document(client_id):
    """The metadata document a client id names, checked as the draft says; None when it is refused."""
    parts = urllib.parse.urlsplit(client_id)
    if parts.scheme != "https" or parts.path in ("", "/") or parts.fragment:
        return None
    with lock:
        stats["fetches"] += 1
    try:
        with urllib.request.urlopen(client_id, context=fetch_context, timeout=5) as r:
            document = json.loads(r.read(65536))
    except Exception:
        return None
    if not isinstance(document, dict) or document.get("client_id") != client_id:
        return None
    if document.get("token_endpoint_auth_method", "none") != "none":
        return None
    return document


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server.server_port}"

    def answer(self, status, body=None, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, status, error, description):
        with lock:
            stats["refused"] += 1
        self.answer(status, {"error": error, "error_description": description})

    def count(self, url):
        if url.path not in ("/stats", "/info"):
            with lock:
                stats["requests"] += 1

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        self.count(url)
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/stats":
            with lock:
                return self.answer(200, dict(stats))
        if url.path == "/info":
            return self.answer(200, {"doc_port": docs.server_port})
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            return self.answer(200, {"resource": self.base + "/mcp", "authorization_servers": [self.base],
                                     "scopes_supported": ["mcp"]})
        if url.path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            meta = {"issuer": self.base, "authorization_endpoint": self.base + "/authorize",
                    "token_endpoint": self.base + "/token", "code_challenge_methods_supported": ["S256"],
                    "response_types_supported": ["code"], "grant_types_supported": ["authorization_code",
                                                                                   "refresh_token"],
                    "token_endpoint_auth_methods_supported": ["none"],
                    "client_id_metadata_document_supported": True}
            if args.registration:
                meta["registration_endpoint"] = self.base + "/register"
            return self.answer(200, meta)
        if url.path == "/authorize":
            client_id, redirect = q.get("client_id", ""), q.get("redirect_uri", "")
            with lock:
                stats["last_client_id"] = client_id
            if client_id in registered:
                pass
            else:
                document = client_document(client_id)
                if document is None:
                    return self.refuse(400, "invalid_client", "no client metadata document at that client id")
                if not any(loopback_match(redirect, r) for r in document.get("redirect_uris", [])):
                    return self.refuse(400, "invalid_request", "redirect_uri is not one the document lists")
            if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
                return self.refuse(400, "invalid_request", "PKCE with S256 is required")
            code = secrets.token_urlsafe(24)
            with lock:
                codes[code] = (client_id, redirect, q["code_challenge"], q.get("scope", ""))
            location = redirect + ("&" if "?" in redirect else "?") + urllib.parse.urlencode(
                {"code": code, "state": q.get("state", "")})
            return self.answer(302, headers=[("Location", location)])
        self.answer(404, {"error": "not_found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        url = urllib.parse.urlsplit(self.path)
        self.count(url)
        if url.path == "/mcp":
            metadata = self.base + "/.well-known/oauth-protected-resource/mcp"
            return self.answer(401, {"error": "invalid_token"},
                               [("WWW-Authenticate", f'Bearer resource_metadata="{metadata}"')])
        if url.path == "/register" and args.registration:
            with lock:
                stats["registrations"] += 1
                client_id = f"reg-{stats['registrations']}"
                registered.add(client_id)
            request = json.loads(body or b"{}")
            return self.answer(201, {**request, "client_id": client_id, "token_endpoint_auth_method": "none"})
        if url.path == "/token":
            f = dict(urllib.parse.parse_qsl(body.decode()))
            client_id = f.get("client_id", "")
            if f.get("grant_type") == "authorization_code":
                with lock:
                    found = codes.pop(f.get("code", ""), None)
                if found is None or found[0] != client_id or found[1] != f.get("redirect_uri"):
                    return self.refuse(400, "invalid_grant", "unknown code, or not this client's")
                verifier = f.get("code_verifier", "").encode()
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
                if challenge != found[2]:
                    return self.refuse(400, "invalid_grant", "PKCE verification failed")
                scope = found[3]
                with lock:
                    stats["codes"] += 1
            elif f.get("grant_type") == "refresh_token":
                with lock:
                    found = refresh_tokens.pop(f.get("refresh_token", ""), None)
                if found is None or found[0] != client_id:
                    return self.refuse(400, "invalid_grant", "unknown refresh token, or not this client's")
                scope = found[1]
                with lock:
                    stats["refreshes"] += 1
            else:
                return self.refuse(400, "unsupported_grant_type", "no")
            refresh = secrets.token_urlsafe(24)
            with lock:
                refresh_tokens[refresh] = (client_id, scope)
            return self.answer(200, {"access_token": secrets.token_urlsafe(24), "token_type": "Bearer",
                                     "expires_in": args.token_ttl, "refresh_token": refresh, "scope": scope})
        self.answer(404, {"error": "not_found"})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_port, flush=True)
server.serve_forever()
