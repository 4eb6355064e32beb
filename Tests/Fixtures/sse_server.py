#!/usr/bin/env python3
"""A small HTTP server for the streaming transport: Server-Sent Events that
arrive in parts, an endless event, a stream cut off mid-event, and headers.

GET /events   event 1, then waits (up to 10 s) for GET /release, then event 2
GET /release  lets /events go on
GET /huge     one event that never ends (2 MiB of data on one line)
GET /cut      one whole event, half of another, then the connection drops
GET /plain    a JSON body with an X-Test header
Prints "port N" once listening on 127.0.0.1.
"""
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


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
