#!/usr/bin/env python3
"""Resource servers for the adapter tests that take only a token the local
OAuth provider honours, checked per request by RFC 7662 introspection
(client tv-rs) at oauth_provider.py.

  gated_server.py --provider PORT --git ROOT
      git's smart HTTP: git http-backend (the real one, as CGI) over the bare
      repositories under ROOT, for HTTP Basic credentials whose password is an
      active token; anything else answers 401 with a Basic challenge.
  gated_server.py --provider PORT --kube DIR
      A Kubernetes API endpoint over HTTPS (a certificate for 127.0.0.1 made
      with openssl; DIR/ca.pem is what a kubeconfig trusts): /api and /version
      for a valid Bearer token, 401 otherwise.

/stats (no credentials) counts accepted and rejected requests. Prints
"port N" once listening on 127.0.0.1.
"""
import argparse
import base64
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

stats = Counter()
lock = threading.Lock()
args = None


def count(key):
    with lock:
        stats[key] += 1


def token_active(token):
    """Asks the provider (RFC 7662) whether the token is active."""
    data = urllib.parse.urlencode({"token": token}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{args.provider}/introspect", data=data, method="POST")
    req.add_header("Authorization", "Basic " + base64.b64encode(b"tv-rs:rs-secret").decode())
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r).get("active") is True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def handle_any(self):
        data = self.body() if self.command == "POST" else b""
        if self.path == "/stats":
            with lock:
                return self.send(200, json.dumps(dict(stats)).encode(), [("Content-Type", "application/json")])
        if args.git:
            self.git(data)
        else:
            self.kube()

    def git(self, data):
        auth = self.headers.get("Authorization", "")
        user = token = None
        if auth.startswith("Basic "):
            user, _, token = base64.b64decode(auth[6:]).decode().partition(":")
        if not token:
            count("git_anonymous")
            return self.send(401, b"credentials required\n", [("WWW-Authenticate", 'Basic realm="tokenvault-test"')])
        if not user or not token_active(token):
            count("git_rejected")
            return self.send(401, b"token rejected\n", [("WWW-Authenticate", 'Basic realm="tokenvault-test"')])
        count("git_accepted")
        path, _, query = self.path.partition("?")
        env = {"PATH": "/usr/bin:/bin", "GIT_PROJECT_ROOT": args.git, "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": urllib.parse.unquote(path), "QUERY_STRING": query, "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(data)),
               "REMOTE_USER": user, "REMOTE_ADDR": "127.0.0.1", "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", "")}
        r = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True)
        head, _, body = r.stdout.partition(b"\r\n\r\n")
        code, headers = 200, []
        for line in head.decode().split("\r\n"):
            k, _, v = line.partition(":")
            if k.lower() == "status":
                code = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send(code, body, headers)

    def kube(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or not token_active(auth[7:]):
            count("kube_rejected")
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "Unauthorized",
                      "reason": "Unauthorized", "code": 401}
            return self.send(401, json.dumps(status).encode(), [("Content-Type", "application/json")])
        count("kube_accepted")
        if self.path.startswith("/version"):
            body = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-tokenvault-test"}
        else:
            body = {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.server.server_port}"}]}
        self.send(200, json.dumps(body).encode(), [("Content-Type", "application/json")])


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("--provider", type=int, required=True)
    ap.add_argument("--git")
    ap.add_argument("--kube")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if args.kube:
        cert, key = os.path.join(args.kube, "ca.pem"), os.path.join(args.kube, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"port {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
