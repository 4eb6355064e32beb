#!/usr/bin/env python3
"""`make bench`'s MCP rows: the same tool call made by the official MCP
Python SDK's client two ways, in interleaved rounds, against one server:
straight over Streamable HTTP with a fixed token (the SDK's own transport),
and over stdio through `tokenvault mcp URL`; at the handshake era
(ClientSession and initialize) and at 2026-07-28 (the high-level Client
pinned to it: one POST per request with routing headers). Prints one JSON
object: the median milliseconds per call and from start to the first
answer, each way, each era (keys modern_* for 2026-07-28).

Usage: MCP_BENCH_TOKEN=... mcp_bench.py URL TOKENVAULT [ROUNDS] [CALLS]
(the token comes from the environment, never from argv)
"""
import asyncio
import json
import os
import statistics
import sys
import time

from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

url, tokenvault = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
calls = int(sys.argv[4]) if len(sys.argv) > 4 else 40
token = os.environ.pop("MCP_BENCH_TOKEN")
times = {f"{era}{way}_{what}": [] for era in ("", "modern_") for way in ("direct", "bridge")
         for what in ("call", "first")}


async def client_run(client, kind, started):
    """The calls, timed: a ClientSession after its initialize, or a Client."""
    await client.call_tool("echo", {"text": "first"})
    times[kind + "_first"].append(time.monotonic() - started)
    for i in range(calls):
        t = time.monotonic()
        result = await client.call_tool("echo", {"text": f"call {i}"})
        times[kind + "_call"].append(time.monotonic() - t)
        assert result.content[0].text == f"call {i}"


async def session_run(session, kind, started):
    await session.initialize()
    await client_run(session, kind, started)


async def direct():
    started = time.monotonic()
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session_run(session, "direct", started)


async def bridge():
    started = time.monotonic()
    params = StdioServerParameters(command=tokenvault, args=["mcp", url], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session_run(session, "bridge", started)


async def modern_direct():
    started = time.monotonic()
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:
            await client_run(client, "modern_direct", started)


async def modern_bridge():
    started = time.monotonic()
    params = StdioServerParameters(command=tokenvault, args=["mcp", url], env=dict(os.environ))
    async with Client(params, mode="2026-07-28") as client:
        await client_run(client, "modern_bridge", started)


async def main():
    for _ in range(rounds):
        await direct()
        await bridge()
        await modern_direct()
        await modern_bridge()


asyncio.run(main())
print(json.dumps({k: round(1000 * statistics.median(v), 2) for k, v in times.items()}))
