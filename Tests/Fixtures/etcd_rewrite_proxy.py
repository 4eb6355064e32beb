#!/usr/bin/env python3
"""A hostile member in front of a real one: plain HTTP on loopback, each
request sent on to TARGET (an etcd member's HTTPS gateway, with the CA and
the client certificate) and its answer changed.

  --max-version  every key's version becomes 9223372036854775807 (int64's largest)
  --escapes      the status's version carries terminal escapes and a bidi
                 override, and every key request is refused with a message
                 that carries them too
  --count        nothing changed; GET /proxy-stats counts the sign-ins
                 (/v3/auth/authenticate) and the refused tokens
  --crlf-token   the sign-in's token carries CR LF and a header line of its own;
                 /proxy-stats counts the requests that arrived with that header

Usage: etcd_rewrite_proxy.py TARGET CA CERT KEY MODE; prints `port N`."""
import json
import ssl
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

target, ca, cert, key, mode = sys.argv[1:6]
context = ssl.create_default_context(cafile=ca)
context.load_cert_chain(cert, key)
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202e\u2028"
lock = threading.Lock()
counts = {"signins": 0, "refused_tokens": 0, "injected": 0}


def max_versions(value):
    if isinstance(value, dict):
        if "key" in value and "mod_revision" in value:
            value["version"] = "9223372036854775807"
        for v in value.values():
            max_versions(v)
    elif isinstance(value, list):
        for v in value:
            max_versions(v)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/proxy-stats":
            with lock:
                return self.answer(200, dict(counts))
        self.answer(404, {})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/v3/auth/authenticate":
            with lock:
                counts["signins"] += 1
        if self.headers.get("X-Injected"):
            with lock:
                counts["injected"] += 1
        if mode == "--escapes" and self.path.startswith("/v3/kv/"):
            return self.answer(400, {"error": "refused", "code": 3, "message": "no such thing" + HOSTILE})
        headers = {"Content-Type": "application/json"}
        if self.headers.get("Authorization"):
            headers["Authorization"] = self.headers["Authorization"]
        request = urllib.request.Request(target + self.path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as r:
                status, answer = r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            status, answer = e.code, json.loads(e.read() or b"{}")
        if "invalid auth token" in json.dumps(answer):
            with lock:
                counts["refused_tokens"] += 1
        if mode == "--max-version":
            max_versions(answer)
        if mode == "--crlf-token" and self.path == "/v3/auth/authenticate" and "token" in answer:
            answer["token"] = answer["token"] + "\r\nX-Injected: yes"
        if mode == "--escapes" and self.path == "/v3/maintenance/status":
            answer["version"] = answer.get("version", "3.4") + HOSTILE
        self.answer(status, answer)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"port {server.server_port}", flush=True)
server.serve_forever()
