#!/usr/bin/env python3
"""An authorization server that requires pushed authorization requests
(RFC 9126) and DPoP (RFC 9449) of its client, with a userinfo endpoint that
takes only DPoP-bound tokens. authlib 1.2 (Debian's) has neither on the
server side, so this is a stub; every proof is checked as dpop_proof.py does
(authlib's JOSE), and this is what RFC 9449 and RFC 9126 ask of it here:

- metadata lists pushed_authorization_request_endpoint with
  require_pushed_authorization_requests, and dpop_signing_alg_values_supported;
- /par takes the authorization request (client_id, PKCE S256, dpop_jkt),
  with a proof when one is sent (its key must be the dpop_jkt), and answers
  a request_uri; /authorize takes only client_id and a request_uri, once;
- /token needs a proof for every grant (htm POST, htu the token URL, iat
  within 60 s, a jti never seen); with --nonce, a proof without the
  server's current nonce gets 400 use_dpop_nonce and a DPoP-Nonce header;
  a code is bound to its dpop_jkt, tokens and refresh tokens to the proof's
  key: a refresh with another key's proof is refused (invalid_dpop_proof);
  refresh tokens rotate;
- /userinfo needs "Authorization: DPoP" and a proof with ath, of the key the
  token is bound to; a Bearer token is refused (401, WWW-Authenticate: DPoP);
  with --rs-nonce, a proof without its nonce gets 401 use_dpop_nonce.
GET /stats: par, codes, tokens, refreshes, nonce_challenges (token), rs_nonce_challenges,
userinfo_ok, refused (each error code), jkts (the keys seen at /token).
With --par-nonce, /par wants a proof with the nonce as /token does.
Usage: dpop_server.py [--token-ttl S] [--nonce] [--rs-nonce] [--par-nonce] [--no-par-required]
                      [--algs ES256,EdDSA]
Prints "port N" once listening on 127.0.0.1.
"""
import argparse
import base64
import hashlib
import http.server
import json
import secrets
import threading
import time
import urllib.parse

from dpop_proof import b64url
from dpop_proof import check as check_proof

parser = argparse.ArgumentParser()
parser.add_argument("--token-ttl", type=int, default=3600)
parser.add_argument("--nonce", action="store_true")
parser.add_argument("--rs-nonce", action="store_true")
parser.add_argument("--par-nonce", action="store_true", help="/par wants a proof with the nonce too")
parser.add_argument("--no-par-required", action="store_true")
parser.add_argument("--algs", default="ES256", help="dpop_signing_alg_values_supported, comma-separated")
args = parser.parse_args()

CLIENT_ID, CLIENT_SECRET = "dpop-client", "dpop-secret"
lock = threading.Lock()
stats = {"par": 0, "par_nonce_challenges": 0, "codes": 0, "tokens": 0, "refreshes": 0, "nonce_challenges": 0, "rs_nonce_challenges": 0,
         "userinfo_ok": 0, "refused": {}, "jkts": []}
pushed, codes, access, refresh = {}, {}, {}, {}
AS_NONCE, RS_NONCE = "as-nonce-" + secrets.token_hex(4), "rs-nonce-" + secrets.token_hex(4)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def send(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, status, error, description, headers=()):
        with lock:
            stats["refused"][error] = stats["refused"].get(error, 0) + 1
        self.send(status, {"error": error, "error_description": description}, headers)

    def as_proof(self, path, nonce_required, challenges):
        """The key thumbprint of the DPoP proof of a POST to `path`; None once
        the request was refused (no proof, a bad one, or a nonce asked for:
        counted in stats[challenges])."""
        try:
            jkt, claims = check_proof(self.headers.get("DPoP"), "POST", self.base() + path)
        except Exception as e:
            self.refuse(400, "invalid_dpop_proof", str(e))
            return None
        if nonce_required and claims.get("nonce") != AS_NONCE:
            with lock:
                stats[challenges] += 1
            self.send(400, {"error": "use_dpop_nonce", "error_description": "a nonce is required"},
                      [("DPoP-Nonce", AS_NONCE)])
            return None
        return jkt

    def form(self):
        n = int(self.headers.get("Content-Length") or 0)
        return dict(urllib.parse.parse_qsl(self.rfile.read(n).decode()))

    def client_ok(self, form):
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            cid, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            return urllib.parse.unquote(cid) == CLIENT_ID and urllib.parse.unquote(secret) == CLIENT_SECRET
        return form.get("client_id") == CLIENT_ID and form.get("client_secret") == CLIENT_SECRET

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/.well-known/oauth-authorization-server":
            b = self.base()
            return self.send(200, {
                "issuer": b, "authorization_endpoint": b + "/authorize", "token_endpoint": b + "/token",
                "pushed_authorization_request_endpoint": b + "/par",
                "require_pushed_authorization_requests": not args.no_par_required,
                "dpop_signing_alg_values_supported": args.algs.split(","), "code_challenge_methods_supported": ["S256"],
                "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "userinfo_endpoint": b + "/userinfo"})
        if url.path == "/stats":
            with lock:
                return self.send(200, stats)
        if url.path == "/authorize":
            with lock:
                request = pushed.pop(q.get("request_uri", ""), None)
            if request is None:
                if not args.no_par_required or "redirect_uri" not in q:
                    return self.refuse(400, "invalid_request", "a pushed request_uri is required")
                request = q
            if q.get("client_id") != CLIENT_ID or set(q) - {"client_id", "request_uri"} and "request_uri" in q:
                return self.refuse(400, "invalid_request", "only client_id and request_uri may be sent")
            code = secrets.token_urlsafe(16)
            with lock:
                codes[code] = request
                stats["codes"] += 1
            target = request["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": request.get("state", ""), "iss": self.base()})
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if url.path == "/userinfo":
            return self.userinfo()
        self.send(404, {"error": "not_found"})

    def userinfo(self):
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "dpop":
            return self.refuse(401, "invalid_token", "a DPoP-bound token is required",
                               [("WWW-Authenticate", 'DPoP algs="ES256", error="invalid_token"')])
        with lock:
            bound = access.get(token)
        if bound is None or bound[1] < time.time():
            return self.refuse(401, "invalid_token", "unknown or expired token",
                               [("WWW-Authenticate", 'DPoP error="invalid_token"')])
        try:
            jkt, claims = check_proof(self.headers.get("DPoP"), "GET", self.base() + "/userinfo", token)
        except Exception as e:
            return self.refuse(401, "invalid_dpop_proof", str(e), [("WWW-Authenticate", 'DPoP error="invalid_dpop_proof"')])
        if jkt != bound[0]:
            return self.refuse(401, "invalid_dpop_proof", "the proof's key is not the token's",
                               [("WWW-Authenticate", 'DPoP error="invalid_dpop_proof"')])
        if args.rs_nonce and claims.get("nonce") != RS_NONCE:
            with lock:
                stats["rs_nonce_challenges"] += 1
            return self.send(401, {"error": "use_dpop_nonce"}, [
                ("WWW-Authenticate", 'DPoP error="use_dpop_nonce"'), ("DPoP-Nonce", RS_NONCE)])
        with lock:
            stats["userinfo_ok"] += 1
        self.send(200, {"sub": "dpop-user", "preferred_username": "dpop-user"})

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        form = self.form()
        if path == "/par":
            return self.par(form)
        if path == "/token":
            return self.token(form)
        self.send(404, {"error": "not_found"})

    def par(self, form):
        if not self.client_ok(form):
            return self.refuse(401, "invalid_client", "client authentication failed")
        if "request_uri" in form or form.get("code_challenge_method") != "S256" or not form.get("code_challenge"):
            return self.refuse(400, "invalid_request", "PKCE S256 is required and request_uri is not allowed")
        if "DPoP" in self.headers or args.par_nonce:
            jkt = self.as_proof("/par", args.par_nonce, "par_nonce_challenges")
            if jkt is None:
                return
            if form.get("dpop_jkt", jkt) != jkt:
                return self.refuse(400, "invalid_dpop_proof", "dpop_jkt is not the proof's key")
        uri = "urn:ietf:params:oauth:request_uri:" + secrets.token_urlsafe(12)
        with lock:
            pushed[uri] = form
            stats["par"] += 1
        self.send(201, {"request_uri": uri, "expires_in": 60})

    def token(self, form):
        if not self.client_ok(form):
            return self.refuse(401, "invalid_client", "client authentication failed")
        jkt = self.as_proof("/token", args.nonce, "nonce_challenges")
        if jkt is None:
            return
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with lock:
                request = codes.pop(form.get("code", ""), None)
            if request is None:
                return self.refuse(400, "invalid_grant", "unknown code")
            verifier = form.get("code_verifier", "")
            if b64url(hashlib.sha256(verifier.encode()).digest()) != request.get("code_challenge"):
                return self.refuse(400, "invalid_grant", "PKCE verification failed")
            if request.get("dpop_jkt", jkt) != jkt:
                return self.refuse(400, "invalid_dpop_proof", "the code is bound to another key")
        elif grant == "refresh_token":
            with lock:
                bound = refresh.pop(form.get("refresh_token", ""), None)
                if bound is not None and bound != jkt:
                    refresh[form["refresh_token"]] = bound  # kept for its own key
            if bound is None:
                return self.refuse(400, "invalid_grant", "unknown refresh token")
            if bound != jkt:
                return self.refuse(400, "invalid_dpop_proof", "the refresh token is bound to another key")
            with lock:
                stats["refreshes"] += 1
        else:
            return self.refuse(400, "unsupported_grant_type", grant or "none")
        token, rotated = "dpop-at-" + secrets.token_urlsafe(12), "dpop-rt-" + secrets.token_urlsafe(12)
        with lock:
            access[token] = (jkt, time.time() + args.token_ttl)
            refresh[rotated] = jkt
            stats["tokens"] += 1
            stats["jkts"].append(jkt)
        self.send(200, {"access_token": token, "token_type": "DPoP", "expires_in": args.token_ttl,
                        "refresh_token": rotated, "scope": "profile"})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port %d" % server.server_address[1], flush=True)
server.serve_forever()
