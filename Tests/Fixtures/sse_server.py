#!/usr/bin/env python3
"""A small HTTP server for the streaming transport: Server-Sent Events that
arrive in parts, an endless event, a stream cut off mid-event, and headers.

GET /events   event 1, then waits (up to 10 s) for GET /release, then event 2
GET /release  lets /events go on
GET /huge     one event that never ends (2 MiB of data on one line)
GET /cut      one whole event, half of another, then the connection drops
GET /plain    a JSON body with an X-Test header
As a broken MCP server (POST a JSON-RPC request; the answer names its id):
POST /mcp/huge    an event of 5 MiB
POST /mcp/cut     a notification, half an event, then the connection drops
POST /mcp/resume  a notification with id e1, then the connection drops; a GET
                  with Last-Event-ID e1 gets the answer
POST /mcp/garbage an event that is not JSON, then the answer
POST /mcp/push    a JSON answer with session push-1 (202 for a notification);
                  the first GET /mcp/push with that session gets one
                  notification with id p1, a later one 405; DELETE ends it
GET /push-seen    the method, session and protocol version of every /mcp/push request
Prints "port N" once listening on 127.0.0.1.
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

released = threading.Event()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", "s-123")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, text):
        data = text.encode() if isinstance(text, str) else text
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_GET(self):
        if self.path == "/release":
            released.set()
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/events":
            released.clear()
            self.start_stream()
            self.chunk("id: 1\nevent: message\ndata: one\n\n")
            if released.wait(10):
                self.chunk(": ping\r\n\r\ndata: two\r\ndata: lines\r\n\r\n")
            else:
                self.chunk("data: late\n\n")
            self.end()
        elif self.path == "/huge":
            self.start_stream()
            block = b"x" * 65536
            self.chunk(b"data: ")
            try:
                for _ in range(32):
                    self.chunk(block)
                self.end()
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif self.path == "/cut":
            self.start_stream()
            self.chunk("data: whole\n\n")
            self.chunk("data: hal")
            self.close_connection = True
            self.connection.shutdown(2)
        elif self.path == "/mcp/resume" and self.headers.get("Last-Event-ID") == "e1":
            self.start_stream()
            self.chunk("id: e2\ndata: %s\n\n" % json.dumps({"jsonrpc": "2.0", "id": pending.get("id"),
                                                              "result": {"resumed": True}}))
            self.end()
        elif self.path == "/push-seen":
            self.reply(200, json.dumps(push_seen).encode(), [("Content-Type", "application/json")])
        elif self.path == "/mcp/push" and not any(s["method"] == "GET" for s in push_seen):
            self.seen()
            self.start_stream()
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "pushed"}})
            self.chunk("id: p1\ndata: %s\n\n" % note)
            self.end()
        elif self.path.startswith("/mcp/"):
            if self.path == "/mcp/push":
                self.seen()
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/plain":
            body = b'{"ok":true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Test", "yes")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


    def seen(self):
        push_seen.append({"method": self.command, "session": self.headers.get("Mcp-Session-Id"),
                          "version": self.headers.get("MCP-Protocol-Version"),
                          "last_event": self.headers.get("Last-Event-ID")})

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        self.seen()
        self.reply(200 if self.path == "/mcp/push" else 405)

    def push(self, request_id):
        if request_id is None:
            return self.reply(202)
        answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "push", "version": "1"}}})
        self.reply(200, answer.encode(), [("Content-Type", "application/json"), ("Mcp-Session-Id", "push-1")])

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/mcp/push":
            self.seen()
            try:
                return self.push(json.loads(body).get("id"))
            except ValueError:
                return self.reply(400)
        try:
            request_id = json.loads(body).get("id")
        except ValueError:
            request_id = None
        answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}})
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}})
        self.start_stream()
        try:
            if self.path == "/mcp/huge":
                self.chunk(b"data: ")
                for _ in range(80):
                    self.chunk(b"x" * 65536)
                self.end()
            elif self.path == "/mcp/cut":
                self.chunk("data: %s\n\n" % note)
                self.chunk("data: {\"jsonrpc\": \"2.0\", \"id\"")
                self.close_connection = True
                self.connection.shutdown(2)
            elif self.path == "/mcp/resume":
                pending["id"] = request_id
                self.chunk("id: e1\ndata: %s\n\n" % note)
                self.close_connection = True
                self.connection.shutdown(2)
            else:
                self.chunk("data: not json {\n\n")
                self.chunk("data: %s\n\n" % answer)
                self.end()
        except (BrokenPipeError, ConnectionResetError):
            pass


pending = {}
push_seen = []
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
