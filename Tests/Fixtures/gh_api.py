"""GitHub Enterprise's API as much as `gh auth login --with-token` asks of
it (gh validates a token before it keeps it: the scopes of GET /api/v3/, the
login of a GraphQL viewer query), over HTTPS on 127.0.0.1:443 for the host
`localhost` (gh takes no port in a host name), with a CA of its own made at
start. Prints `ca PATH` (for SSL_CERT_FILE) once it listens. Each request's
method and path go to stderr.

usage: gh_api.py DIR [LOGIN]
"""
import http.server
import json
import os
import ssl
import subprocess
import sys

directory = sys.argv[1]
login = sys.argv[2] if len(sys.argv) > 2 else "monalisa"
os.makedirs(directory, exist_ok=True)
ca_key, ca, key, csr, cert = (os.path.join(directory, n) for n in ("ca.key", "ca.pem", "key.pem", "csr.pem", "cert.pem"))
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=gh_api test CA"], **quiet)
subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", csr, "-subj", "/CN=localhost"], **quiet)
ext = os.path.join(directory, "ext.cnf")
with open(ext, "w") as f:
    f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                "-out", cert, "-days", "2", "-extfile", ext], **quiet)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        print(self.command, self.path, file=sys.stderr, flush=True)
        self.answer({}, [("X-OAuth-Scopes", "repo, read:org, gist")])

    def do_POST(self):
        print(self.command, self.path, file=sys.stderr, flush=True)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.answer({"data": {"viewer": {"login": login}}})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print("ca", ca, flush=True)
server.serve_forever()
