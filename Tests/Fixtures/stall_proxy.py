#!/usr/bin/env python3
"""A TCP proxy to a loopback port that holds its first N connections without
forwarding a byte (a request that never reaches the provider: the host died
while its packets were stuck), and forwards every later one.
With --delay-first S the first connection is forwarded only after S seconds
(a provider that answers slowly, while the test breaks something else).
With --log FILE a line is added to FILE as each connection is accepted (a
test waits for it instead of sleeping).
Usage: stall_proxy.py TARGET_PORT [--stall-first N] [--delay-first S] [--log FILE]; prints `port N`."""
import socket
import sys
import threading
import time

target = int(sys.argv[1])
stall = int(sys.argv[sys.argv.index("--stall-first") + 1]) if "--stall-first" in sys.argv else 0
delay = float(sys.argv[sys.argv.index("--delay-first") + 1]) if "--delay-first" in sys.argv else 0
log = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
lock = threading.Lock()


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def handle(client):
    global stall, delay
    with lock:
        held = stall > 0
        stall -= held
        wait, delay = delay, 0
    time.sleep(wait)
    if held:
        try:
            while client.recv(65536):
                pass
        except OSError:
            pass
        client.close()
        return
    upstream = socket.create_connection(("127.0.0.1", target))
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
    pipe(client, upstream)


server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(64)
print("port", server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    if log:
        with open(log, "a") as f:
            f.write("accepted\n")
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
