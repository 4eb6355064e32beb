"""GitHub Enterprise's API as much as `gh auth login --with-token` asks of
it (gh validates a token before it keeps it: the scopes of GET /api/v3/),
over HTTPS for the host `ghe.test`, behind a proxy: gh takes no port in a
host name, and a test cannot listen on 443, so gh is given
HTTPS_PROXY=http://127.0.0.1:PORT and this server answers its CONNECT with
the API itself, under a certificate of a CA of its own made at start.
Prints `PORT CA_PATH` (CA_PATH for SSL_CERT_FILE) once it listens. Each
request's method and path go to stderr.

usage: gh_api.py DIR
"""
import http.server
import json
import os
import ssl
import subprocess
import sys

directory = sys.argv[1]
os.makedirs(directory, exist_ok=True)
ca_key, ca, key, csr, cert = (os.path.join(directory, n) for n in ("ca.key", "ca.pem", "key.pem", "csr.pem", "cert.pem"))
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=gh_api test CA"], **quiet)
subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", csr, "-subj", "/CN=ghe.test"], **quiet)
ext = os.path.join(directory, "ext.cnf")
with open(ext, "w") as f:
    f.write("subjectAltName=DNS:ghe.test\n")
subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                "-out", cert, "-days", "2", "-extfile", ext], **quiet)


class API(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

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


class Proxy(http.server.BaseHTTPRequestHandler):
    """CONNECT ghe.test:443, answered by the API over TLS on the same connection."""

    def log_message(self, *args):
        pass

    def do_CONNECT(self):
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        try:
            API(context.wrap_socket(self.connection, server_side=True), self.client_address, self.server)
        except (ssl.SSLError, OSError):
            pass


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
print(server.server_address[1], ca, flush=True)
server.serve_forever()
