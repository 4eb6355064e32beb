#!/usr/bin/env python3
"""A stand-in for a session bus that only notes who connects: one line per
connection in LOG, then the connection is closed (no D-Bus is spoken).
Usage: bus_listener.py SOCKET LOG; prints "port 0" once listening."""
import socket
import sys

path, log = sys.argv[1], sys.argv[2]
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(16)
print("port 0", flush=True)
while True:
    conn, _ = server.accept()
    with open(log, "a") as f:
        f.write("connect\n")
    conn.close()
