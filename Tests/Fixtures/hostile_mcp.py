#!/usr/bin/env python3
"""A hostile MCP server with a hostile authorization server, for the
hardening tests: a small stub (the SDK's server cannot be made to misbehave
this way), each misbehaviour at its own path.

Resources, each at /MODE/mcp with its metadata at
/.well-known/oauth-protected-resource/MODE/mcp, naming the authorization
server BASE/as-MODE (or BASE/as-ok):
  ok        answers every request at once (JSON)
  space     its server registers clients with the client_id "bad id"
  scope403  every request with a token: 403 insufficient_scope, naming a new
            scope each time
  reject    every request: 401 invalid_token, even with a token it issued
  slow      tools/call answered after 20 s; ping at once;
            notifications/cancelled recorded (GET /seen)
  silent    tools/call taken and never answered; ping at once
  keepopen  initialize answered over SSE, then the stream kept open with a
            comment every second (for 60 s)
  flood     initialize answered over SSE, then 1 MiB events without end
  retry0    initialize answered with session r-1; each GET: "retry: 0" and closed
  junk      answers by id: 2 JSON with a trailing comma, 3 an object that is
            no JSON-RPC message, 4 an array of numbers, 5 a JSON string, 6 a
            message whose text ends in an unpaired surrogate escape (valid JSON)
  nested    tools/list answered with JSON nested 400 deep (2 KB), tools/call
            over SSE with an event nested as deep; its authorization server
            (as-nested) answers a refresh with a body nested as deep
  pages     tools/list answered after a second with no tool and a next cursor,
            page after page (counted in /stats as "pages")
  denied    its authorization server (as-denied) refuses every login at once:
            /authorize redirects with error=access_denied
  routing   GET /last-headers: the headers of the last request; tools/list
            lists "echo", whose argument "region" is mirrored in
            Mcp-Param-Region (both eras answered alike)
A token is any the server issued, or one starting with "t0k3n".
Authorization servers at /as-MODE: RFC 8414 metadata, /register, /authorize
(approves at once), /token (authorization_code, refresh_token; any other grant
is answered too, so a client of the user's own fetches tokens with client
credentials), each request counted by its grant ("token_grant:G") and the
scope it asked for ("token_scope:S", "-" for none).
Registrations can be read and deleted at their registration_client_uri
with their registration access token (RFC 7592); POST /forget-clients
forgets every one (a server restarted).
GET /stats: counters; GET /seen: what the slow resource was sent, with times.
Prints "port N" once listening on 127.0.0.1.
"""
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
stats = {"registrations": 0, "authorizations": 0, "gets": 0, "scope_refusals": 0, "client_checks": 0,
         "client_deletes": 0}
clients = {}  # client_id -> its registration access token (RFC 7592)
seen = []
issued = set()
last_headers = {}
DEEP = "[" * 400 + "]" * 400
base = ""


def count(key, n=1):
    with lock:
        stats[key] = stats.get(key, 0) + n


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

    def start_stream(self, session=None):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        data = data.encode() if isinstance(data, str) else data
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    # --- routing

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        if path == "/stats":
            with lock:
                return self.send(200, dict(stats))
        if path == "/seen":
            with lock:
                return self.send(200, list(seen))
        if path == "/last-headers":
            with lock:
                return self.send(200, dict(last_headers))
        if path.startswith("/.well-known/oauth-protected-resource/"):
            mode = path.split("/")[3]
            server = base + ("/as-" + mode if mode in ("space", "nested", "denied") else "/as-ok")
            return self.send(200, {"resource": f"{base}/{mode}/mcp", "authorization_servers": [server]})
        if path.startswith("/.well-known/oauth-authorization-server/as-"):
            issuer = base + "/" + path.split("/")[3]
            return self.send(200, {
                "issuer": issuer, "authorization_endpoint": issuer + "/authorize",
                "token_endpoint": issuer + "/token", "registration_endpoint": issuer + "/register",
                "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code", "refresh_token"]})
        if "/register/" in path:
            return self.manage(path, "GET")
        if path.endswith("/authorize"):
            q = urllib.parse.parse_qs(url.query)
            count("authorizations")
            if "/as-denied/" in path:
                target = q["redirect_uri"][0] + "?" + urllib.parse.urlencode(
                    {"error": "access_denied", "state": q.get("state", [""])[0]})
                return self.send(302, b"", [("Location", target)])
            code = "code-" + secrets.token_hex(8)
            target = q["redirect_uri"][0] + "?" + urllib.parse.urlencode(
                {"code": code, "state": q.get("state", [""])[0]})
            return self.send(302, b"", [("Location", target)])
        if path.endswith("/mcp"):
            mode = path.split("/")[1]
            if not self.authorized(mode):
                return
            count("gets")
            if mode == "retry0":
                self.start_stream()
                self.chunk("retry: 0\n\n")
                self.chunk(b"")
                return
            return self.send(405, b"")
        self.send(404, {"error": "not_found"})

    def do_DELETE(self):
        path = urllib.parse.urlsplit(self.path).path
        if "/register/" in path:
            return self.manage(path, "DELETE")
        self.send(204, b"", content_type="text/plain")

    def manage(self, path, method):
        """RFC 7592: a registration read or deleted with its access token."""
        client_id = urllib.parse.unquote(path.rsplit("/", 1)[1])
        with lock:
            known = clients.get(client_id)
            stats["client_checks" if method == "GET" else "client_deletes"] += 1
        if known is None or self.headers.get("Authorization") != "Bearer " + known:
            return self.send(401 if known is not None else 404, {"error": "invalid_client"})
        if method == "DELETE":
            with lock:
                clients.pop(client_id, None)
            return self.send(204, b"", content_type="text/plain")
        return self.send(200, {"client_id": client_id})

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        data = self.body()
        if path == "/forget-clients":
            with lock:
                clients.clear()
            return self.send(204, b"", content_type="text/plain")
        if path.endswith("/register"):
            count("registrations")
            asked = json.loads(data or b"{}")
            client_id = "bad id" if "/as-space/" in path else "client-" + secrets.token_hex(4)
            token = "rat-" + secrets.token_hex(8)
            with lock:
                clients[client_id] = token
            issuer = base + "/" + path.split("/")[1]
            return self.send(201, dict(asked, client_id=client_id, registration_access_token=token,
                                       registration_client_uri=issuer + "/register/" + client_id))
        if path.endswith("/token"):
            form = urllib.parse.parse_qs(data.decode())
            count("token_grant:" + form.get("grant_type", ["-"])[0])
            count("token_scope:" + form.get("scope", ["-"])[0])
            if "/as-nested/" in path and form.get("grant_type") == ["refresh_token"]:
                count("nested_refreshes")
                return self.send(200, ('{"access_token":"at-deep","expires_in":3600,"deep":' + DEEP + "}").encode())
            access, refresh = "at-" + secrets.token_hex(8), "rt-" + secrets.token_hex(8)
            with lock:
                issued.add(access)
            return self.send(200, {"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
                                   "expires_in": 3600, "scope": form.get("scope", [""])[0]})
        if path.endswith("/mcp"):
            mode = path.split("/")[1]
            if mode == "routing":
                with lock:
                    last_headers.clear()
                    last_headers.update({k.lower(): v for k, v in self.headers.items()})
            if not self.authorized(mode):
                return
            return self.mcp(mode, json.loads(data or b"null"))
        self.send(404, {"error": "not_found"})

    def authorized(self, mode):
        header = self.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        with lock:
            known = token in issued or token.startswith("t0k3n")
        if not known or mode == "reject":
            meta = f"{base}/.well-known/oauth-protected-resource/{mode}/mcp"
            self.send(401, {"error": "invalid_token"}, [("WWW-Authenticate", f'Bearer resource_metadata="{meta}"')])
            return False
        if mode == "scope403":
            count("scope_refusals")
            with lock:
                n = stats["scope_refusals"]
            self.send(403, {"error": "insufficient_scope"}, [
                ("WWW-Authenticate", f'Bearer error="insufficient_scope", scope="extra{n}"')])
            return False
        return True

    # --- the MCP endpoint

    def mcp(self, mode, message):
        method = message.get("method") if isinstance(message, dict) else None
        rid = message.get("id") if isinstance(message, dict) else None
        if mode == "slow" and rid is None:
            with lock:
                seen.append({"method": method, "at": time.time(), "params": message.get("params")})
        if rid is None:
            return self.send(202, b"", content_type="text/plain")

        def answer(result=None):
            return {"jsonrpc": "2.0", "id": rid, "result": result or {}}

        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "hostile",
                                                                                       "version": "1"}}
            if mode == "keepopen":
                self.start_stream("k-1")
                self.chunk("event: message\ndata: " + json.dumps(answer(result)) + "\n\n")
                for _ in range(60):
                    time.sleep(1)
                    self.chunk(": ping\n\n")
                self.chunk(b"")
                return
            if mode == "flood":
                self.start_stream("f-1")
                self.chunk("event: message\ndata: " + json.dumps(answer(result)) + "\n\n")
                note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                   "params": {"level": "info", "data": "x" * (1 << 20)}})
                deadline = time.time() + 60
                while time.time() < deadline:
                    self.chunk("event: message\ndata: " + note + "\n\n")
                self.chunk(b"")
                return
            session = "r-1" if mode == "retry0" else None
            return self.send(200, answer(result), [("Mcp-Session-Id", session)] if session else [])
        if method == "ping":
            return self.send(200, answer())
        if mode == "slow" and method == "tools/call":
            with lock:
                seen.append({"method": method, "at": time.time(), "id": rid})
            time.sleep(20)
            return self.send(200, answer({"content": [{"type": "text", "text": "late"}]}))
        if mode == "silent" and method == "tools/call":
            time.sleep(600)
            return
        if mode == "nested" and method == "tools/list":
            count("nested_answers")
            return self.send(200, ('{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}' % (json.dumps(rid), DEEP)).encode())
        if mode == "nested" and method == "tools/call":
            count("nested_answers")
            self.start_stream()
            self.chunk('event: message\ndata: {"jsonrpc":"2.0","id":%s,"result":%s}\n\n' % (json.dumps(rid), DEEP))
            self.chunk(b"")
            return
        if mode == "pages" and method == "tools/list":
            count("pages")
            time.sleep(1)
            return self.send(200, answer({"tools": [], "nextCursor": "c-" + secrets.token_hex(4)}))
        if mode == "routing" and method == "tools/list":
            return self.send(200, answer({"tools": [{"name": "echo", "inputSchema": {
                "type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}]}))
        if mode == "junk":
            bodies = {2: b'{"jsonrpc":"2.0","id":2,"result":{"a":1},}', 3: b'{"hello":"world"}',
                      4: b"[1,2,3]", 5: b'"just a string"',
                      # valid JSON, a string cut inside an emoji as JSON.stringify writes it: passed on
                      6: b'{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"cut \\ud83d"}]}}'}
            if rid in bodies:
                return self.send(200, bodies[rid])
        return self.send(200, answer({"echo": method}))


def main():
    global base
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    base = f"http://127.0.0.1:{server.server_address[1]}"
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
