#!/usr/bin/env python3
"""Drives a stdio MCP server (tokenvault mcp URL) by the clock, as a client
that does not wait for one answer before sending the next message.

Usage: bridge_driver.py [--at SECONDS LINE]... [--until-ids 1,2] [--limit S] -- COMMAND ARGS...
  --at SECONDS LINE  write LINE to the server's stdin SECONDS after it started
  --until-ids IDS    stop once every one of these JSON-RPC ids has an answer
  --limit S          stop after S seconds at the latest (default 30)
  --answered FILE    append the id of each answer to FILE as it comes (a test waits on it)
Then stdin is closed, the server gets 3 s to end, and is killed.
Prints one JSON object per line the server wrote ({"t": seconds, "line": text}),
then {"exit": status, "stderr": text, "peak_kib": the server's peak memory}.
"""
import json
import subprocess
import sys
import threading
import time

args = sys.argv[1:]
sends, wanted, limit, answered_file = [], set(), 30.0, None
while args and args[0] != "--":
    if args[0] == "--at":
        sends.append((float(args[1]), args[2]))
        args = args[3:]
    elif args[0] == "--until-ids":
        wanted = {int(i) for i in args[1].split(",") if i}
        args = args[2:]
    elif args[0] == "--answered":
        answered_file = args[1]
        args = args[2:]
    elif args[0] == "--limit":
        limit = float(args[1])
        args = args[2:]
    else:
        sys.exit(f"unknown option {args[0]}")
command = args[1:]

started = time.monotonic()
p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
lines, answered, peak = [], set(), [0]
done = threading.Event()


def read_out():
    for raw in p.stdout:
        text = raw.decode(errors="replace").rstrip("\n")
        lines.append({"t": round(time.monotonic() - started, 3), "line": text[:2000]})
        try:
            message = json.loads(text)
        except ValueError:
            continue
        for m in message if isinstance(message, list) else [message]:
            if isinstance(m, dict) and isinstance(m.get("id"), int) and ("result" in m or "error" in m):
                answered.add(m["id"])
                if answered_file:
                    with open(answered_file, "a") as f:
                        f.write(f"{m['id']}\n")
        if wanted and wanted <= answered:
            done.set()
    done.set()


def sample():
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.1)


errors = []
threading.Thread(target=lambda: errors.append(p.stderr.read()), daemon=True).start()
threading.Thread(target=read_out, daemon=True).start()
threading.Thread(target=sample, daemon=True).start()
for at, line in sorted(sends, key=lambda s: s[0]):
    delay = at - (time.monotonic() - started)
    if delay > 0:
        time.sleep(delay)
    p.stdin.write(line.encode() + b"\n")
    p.stdin.flush()
done.wait(max(0.0, limit - (time.monotonic() - started)))
p.stdin.close()
try:
    p.wait(3)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
time.sleep(0.1)
for line in list(lines):
    print(json.dumps(line))
print(json.dumps({"exit": p.returncode, "stderr": (errors[0] if errors else b"").decode(errors="replace")[-4000:],
                  "peak_kib": peak[0]}))
