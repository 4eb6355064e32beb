#!/usr/bin/env python3
"""An MCP client built on the official MCP Python SDK's stdio client: it
launches a stdio MCP server (tokenvault mcp URL) and talks to it as an editor
would. Prints one JSON object per step on stdout.

Usage: mcp_client.py [--calls N] [--forget-access URL] [--raw FILE] -- COMMAND ARGS...
  --calls N            call the tool `echo` N times (default 1)
  --forget-access URL  POST to URL (the server forgets every access token)
                       after listing the tools, before the calls
  --raw FILE           skip the SDK: write FILE's lines to the server's stdin
                       and print each line it answers with, as sent
  --hold SECONDS       with --raw: keep stdin open that long after the lines
  --default-env        start the server with the SDK's default environment only
  --config JSON        start the server an MCP client entry names (command, args,
                       env on top of the SDK's default environment)
  --config-file FILE:NAME  the same, for entry NAME of a client's config file
  --mode MODE          use the SDK's high-level Client instead, connected in
                       MODE: "auto" (server/discover, else initialize),
                       "legacy", or a revision such as 2026-07-28; it lists
                       the tools, calls `echo`, and `locate` with --region
  --region TEXT        the region `locate` is called with (its argument is
                       mirrored in the Mcp-Param-Region header)
  --listen URL         with --mode 2026-07-28: open subscriptions/listen for
                       tool changes, POST to URL (the server says its tools
                       changed) after SECONDS of quiet (--quiet, default 0), and
                       print the event that comes
Runs with the SDK's venv (.build/mcp-venv, made by scripts/deps.sh); the
server's environment is this process's.
"""
import argparse
import asyncio

import anyio
import json
import os
import subprocess
import sys
import time
import urllib.request

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

parser = argparse.ArgumentParser()
parser.add_argument("--calls", type=int, default=1)
parser.add_argument("--forget-access")
parser.add_argument("--raw")
parser.add_argument("--hold", type=float, default=0)
parser.add_argument("--default-env", action="store_true",
                    help="start the server with the SDK's default environment (HOME, PATH, SHELL, TERM, ...)")
parser.add_argument("--config", help="a client entry as --print-config prints it: its command, args and env")
parser.add_argument("--config-file", help="FILE:NAME: the entry NAME of a client config file (mcpServers or servers)")
parser.add_argument("--mode")
parser.add_argument("--region", default="Zürich")
parser.add_argument("--listen")
parser.add_argument("--quiet", type=float, default=0)
parser.add_argument("command", nargs=argparse.REMAINDER)
args = parser.parse_args()
command = [a for a in args.command if a != "--"]


def say(**fields):
    print(json.dumps(fields), flush=True)


async def main():
    env = None if args.default_env else dict(os.environ)  # None: the SDK's get_default_environment()
    params = StdioServerParameters(command=command[0], args=command[1:], env=env) if command else None
    if args.config or args.config_file:
        # As a desktop client does: the entry's command on the PATH, its env over the defaults.
        if args.config_file:
            path, name = args.config_file.rsplit(":", 1)
            with open(path) as f:
                document = json.load(f)
            entry = (document.get("mcpServers") or document.get("servers"))[name]
        else:
            entry = json.loads(args.config)
        params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                       env={**get_default_environment(), **entry.get("env", {})})
    if args.mode:
        return await high_level(params)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            started = time.monotonic()
            init = await session.initialize()
            say(step="initialize", server=init.server_info.name, protocol=init.protocol_version)
            await list_and_call(session, started)


async def list_and_call(client, started):
    """Lists the tools, forgets the access tokens if asked, calls `echo`; the tools listed."""
    tools = await client.list_tools()
    say(step="list", tools=sorted(t.name for t in tools.tools), seconds=time.monotonic() - started)
    if args.forget_access:
        urllib.request.urlopen(urllib.request.Request(args.forget_access, data=b"", method="POST")).read()
    for i in range(args.calls):
        result = await client.call_tool("echo", {"text": f"hello {i}"})
        text = "".join(c.text for c in result.content if getattr(c, "text", None))
        say(step="call", text=text, error=bool(result.is_error))
    return tools


async def high_level(params):
    """The SDK's high-level Client over stdio, in the era --mode names."""
    from mcp import Client
    started = time.monotonic()
    async with Client(params, mode=args.mode) as client:
        say(step="initialize", server=getattr(client.server_info, "name", None), protocol=client.protocol_version)
        tools = await list_and_call(client, started)
        if args.listen:
            async with client.listen(tools_list_changed=True) as subscription:
                say(step="listening")
                await asyncio.sleep(args.quiet)
                await asyncio.to_thread(lambda: urllib.request.urlopen(
                    urllib.request.Request(args.listen, data=b"", method="POST")).read())
                with anyio.fail_after(20):
                    async for event in subscription:
                        say(step="event", kind=type(event).__name__)
                        break
            return
        if "locate" in [t.name for t in tools.tools]:
            result = await client.call_tool("locate", {"text": "hi", "region": args.region})
            text = "".join(c.text for c in result.content if getattr(c, "text", None))
            say(step="locate", text=text, error=bool(result.is_error))


def raw():
    with open(args.raw, "rb") as f:
        lines = f.read()
    p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(lines)
    p.stdin.flush()
    time.sleep(args.hold)
    closed = time.monotonic()
    out, err = p.communicate(timeout=60)
    for line in out.decode().splitlines():
        say(step="raw", line=line)
    say(step="exit", status=p.returncode, stderr=err.decode(), after_stdin=time.monotonic() - closed)


if args.raw:
    raw()
else:
    try:
        asyncio.run(main())
    except Exception as e:  # the step that failed is the last one printed
        say(step="failed", error=repr(e))
        sys.exit(1)
