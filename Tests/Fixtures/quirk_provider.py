#!/usr/bin/env python3
"""Small token endpoints with the quirks real providers have (PROVIDERS.md),
for what a standards-following server library will not do. Each path is a
token endpoint; every answer counts in /stats.

  /textplain       Weibo: JSON sent as text/plain, numbers as strings, uid
  /form            GitHub: form-encoded unless Accept says otherwise... always form here
  /keep-refresh    Google: a refresh answer without a new refresh token
  /invalid-grant   400 invalid_grant
  /invalid-client  401 invalid_client with a description
  /html502         a proxy's HTML 502 page
  /hang            answers nothing for 60 s, or until GET /unhang: then drops the connection
  /held            a new access and refresh token, once GET /release was asked (60 s at most)
  /markup-refusal  400 invalid_grant whose description is notification markup (a link, bold)
  /huge            a 5 MiB body
  /rotate          a new access and refresh token on every call
  /secret-rotate   the same for client cid with secret csecret (post or basic), else 401 invalid_client
  /slow-rotate     the same, answered after 6 s
  /nan-rotate      a new refresh token, but expires_in "nan"
  /echo-secret     400 invalid_request whose description repeats the request body
  /device-5000, /device-neg   a device authorization with interval 5000 or -1
  /device-escape   a device authorization whose verification_uri carries an escape sequence
  /device-bidi     a device authorization whose URLs carry U+202E and U+2028
  /escape-token    a token whose scope and token_type carry escape sequences
  GET /escape-userinfo   a userinfo whose name carries escape sequences and U+2028
  GET /esc/.well-known/openid-configuration    an authorization_endpoint with an escape sequence
  GET /bidi/.well-known/openid-configuration   an authorization_endpoint with U+202E
  GET /iss/.well-known/openid-configuration    a plain issuer whose token endpoint is /rotate

Usage: quirk_provider.py [--tls CERT KEY]   (prints "port N" once listening on 127.0.0.1)
With --tls it speaks HTTPS with that (self-signed) certificate.
"""
import base64
import json
import urllib.parse
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
counts = {}
released = threading.Event()
# The hangs under way end when it is set (GET /unhang), as a provider that gives up does.
hang_over = [threading.Event()]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, status, body, content_type):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                return self.send(200, json.dumps(counts), "application/json")
        with lock:
            counts[self.path] = counts.get(self.path, 0) + 1
        base = f"http://127.0.0.1:{self.server.server_port}"
        if self.path == "/release":
            released.set()
            return self.send(200, "{}", "application/json")
        if self.path == "/unhang":
            with lock:
                hang_over[0].set()
                hang_over[0] = threading.Event()
            return self.send(200, "{}", "application/json")
        if self.path.startswith("/fail500/"):
            return self.send(500, "internal error", "text/plain")
        if self.path.startswith("/signin-first/authorize"):
            # As django-oauth-toolkit does: a visitor not signed in goes to the sign-in
            # page before the client is looked at, whatever the client_id.
            self.send_response(302)
            self.send_header("Location", "/accounts/login/?next=" + urllib.parse.quote(self.path))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/escape-userinfo":
            return self.send(200, json.dumps({"name": "Mallory\x1b]0;pwned\x07\x1b[2J\u2028\u202eEve"}), "application/json")
        for name, endpoint, token in (("esc", "/authorize\x1b[2J\x1b]0;pwned\x07", "/escape-token"),
                                      ("bidi", "/authorize/\u202eevil", "/escape-token"), ("iss", "/authorize", "/rotate")):
            if self.path == f"/{name}/.well-known/openid-configuration":
                return self.send(200, json.dumps({"issuer": f"{base}/{name}", "authorization_endpoint": base + endpoint,
                                                  "token_endpoint": base + token}), "application/json")
        self.send(404, "not found", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        path = self.path
        with lock:
            counts[path] = counts.get(path, 0) + 1
            n = counts[path]
        if path == "/textplain":
            self.send(200, json.dumps({"access_token": f"2.00weibo{n}", "expires_in": "157679999",
                                       "remind_in": "157679999", "uid": "1404376560"}), "text/plain;charset=UTF-8")
        elif path == "/form":
            self.send(200, f"access_token=gho_form{n}&scope=repo%2Cgist&token_type=bearer&expires_in=28800",
                      "application/x-www-form-urlencoded")
        elif path == "/keep-refresh":
            self.send(200, json.dumps({"access_token": f"ya29.kept{n}", "expires_in": 3599, "token_type": "Bearer"}),
                      "application/json")
        elif path == "/invalid-grant":
            self.send(400, json.dumps({"error": "invalid_grant", "error_description": "Token has been expired or revoked."}),
                      "application/json")
        elif path == "/invalid-client":
            self.send(401, json.dumps({"error": "invalid_client", "error_description": "Client authentication failed"}),
                      "application/json")
        elif path == "/html502":
            self.send(502, "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>",
                      "text/html")
        elif path == "/markup-refusal":
            self.send(400, json.dumps({"error": "invalid_grant",
                                       "error_description": '<a href="https://evil.example/">renew here</a> & <b>now</b>'}),
                      "application/json")
        elif path == "/hang":
            with lock:
                over = hang_over[0]
            if over.wait(60):
                self.close_connection = True  # no answer at all
                return
            self.send(200, "{}", "application/json")
        elif path == "/held":
            released.wait(60)
            self.send(200, json.dumps({"access_token": f"held-at-{n}", "refresh_token": f"held-rt-{n}",
                                       "expires_in": 3600}), "application/json")
        elif path == "/secret-rotate":
            basic = "Basic " + base64.b64encode(b"cid:csecret").decode()
            if "client_secret=csecret" in body.split("&") or self.headers.get("Authorization") == basic:
                self.send(200, json.dumps({"access_token": f"sr-at-{n}", "refresh_token": f"sr-rt-{n}",
                                           "expires_in": 3600}), "application/json")
            else:
                self.send(401, json.dumps({"error": "invalid_client"}), "application/json")
        elif path == "/rotate":
            self.send(200, json.dumps({"access_token": f"rot-at-{n}", "refresh_token": f"rot-rt-{n}", "expires_in": 3600}),
                      "application/json")
        elif path == "/slow-rotate":
            time.sleep(6)
            self.send(200, json.dumps({"access_token": f"slow-at-{n}", "refresh_token": f"slow-rt-{n}",
                                       "expires_in": 3600}), "application/json")
        elif path == "/nan-rotate":
            self.send(200, json.dumps({"access_token": f"nan-at-{n}", "refresh_token": f"nan-rt-{n}", "expires_in": "nan"}),
                      "application/json")
        elif path == "/echo-secret":
            self.send(400, json.dumps({"error": "invalid_request", "error_description": "bad request: " + body}),
                      "application/json")
        elif path == "/escape-token":
            self.send(200, json.dumps({"access_token": f"esc-at-{n}", "expires_in": 3600, "token_type": "Bearer\x1b[2J",
                                       "scope": "read\x1b]0;pwned\x07\u202e write\u2028"}), "application/json")
        elif path == "/device-bidi":
            self.send(200, json.dumps({"device_code": "dc", "user_code": "ABCD-EFGH",
                                       "verification_uri": "https://example.com/device\u202e/lave",
                                       "verification_uri_complete": "https://example.com/device?code=1\u2028x",
                                       "interval": 1, "expires_in": 2}), "application/json")
        elif path in ("/device-5000", "/device-neg", "/device-escape"):
            interval = {"/device-5000": 5000, "/device-neg": -1}.get(path, 1)
            uri = "https://example.com/device\x1b]0;pwned\x07\x1b[2J" if path == "/device-escape" else "https://example.com/device"
            self.send(200, json.dumps({"device_code": "dc", "user_code": "ABCD-EFGH", "verification_uri": uri,
                                       "interval": interval, "expires_in": 600}), "application/json")
        elif path == "/huge":
            self.send(200, b'{"access_token":"' + b"x" * (5 << 20) + b'"}', "application/json")
        else:
            self.send(404, "not found", "text/plain")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"port {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
