"""MCP tool servers through the mcp SDK's own transports: a real server written with the SDK
(tests/mcp_server.py) is called over stdio and over streamable HTTP, recorded as tool calls, then
replayed with the server gone (no subprocess started, no connection made) and the network guard on.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import cassette
from cassette.cli.show import timeline
from cassette.maintenance.verify import verify_paths
from cassette.seam.mcp import tool_request

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def stdio(command: str = sys.executable, **env: str) -> Any:
    return stdio_client(StdioServerParameters(command=command, args=[SERVER, "stdio"], env=env or None))


async def agent(transport: Any, **session: Any) -> dict[str, Any]:
    """What an agent does with an MCP server: start, list the tools, call two, one of them failing."""
    async with cassette.mcp_transport(transport, server="orders") as (read, write):
        async with ClientSession(read, write, **session) as mcp:
            started = await mcp.initialize()
            tools = await mcp.list_tools()
            found = await mcp.call_tool("lookup_order", {"order_id": "A1001"})
            missing = await mcp.call_tool("lookup_order", {"order_id": "Z9"})
            total = await mcp.call_tool("add", {"a": 2, "b": 40})
    return {
        "server": started.server_info.name,
        "tools": [t.name for t in tools.tools],
        "found": found.structured_content,
        "missing": (missing.is_error, [c.text for c in missing.content]),
        "total": total.structured_content,
    }


def names(path: str) -> list[str]:
    return [i.request["name"] for i in cassette.load_cassette(Path(path)).interactions]


@pytest.mark.asyncio
async def test_stdio_records_tool_calls_and_replays_without_starting_the_server() -> None:
    with cassette.using("mcp.json", mode="record"):
        live = await agent(stdio())
    assert live["found"] == {"order_id": "A1001", "status": "shipped", "total": 42.5, "served": 1}
    assert live["missing"][0] is True and live["total"] == {"result": 42}
    assert names("mcp.json") == [
        "mcp:orders",  # initialize
        "mcp:orders",  # notifications/initialized
        "mcp:orders",  # tools/list
        "mcp:orders/lookup_order",
        "mcp:orders/lookup_order",
        "mcp:orders/add",
    ]
    # a command that does not exist: replay would fail if it tried to start the server
    with cassette.using("mcp.json", mode="replay", network_guard=True) as session:
        replayed = await agent(stdio("/nonexistent/mcp-server"))
    assert replayed == live
    assert session.stats()["served"] == {"tool": 6}
    assert verify_paths(["mcp.json"]).ok


@pytest.fixture
def http_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while True:  # the server is up when its port takes a connection
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"the MCP test server did not start on port {port}")
            time.sleep(0.05)  # polling the port: the server process gives no other signal
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.asyncio
async def test_streamable_http_records_and_replays_with_the_server_stopped(http_server: str) -> None:
    with cassette.using("http.json", mode="record"):
        live = await agent(streamable_http_client(http_server))
    assert live["server"] == "orders" and live["tools"] == ["lookup_order", "add"]
    recorded = cassette.load_cassette(Path("http.json")).interactions
    assert all(i.kind == "tool" for i in recorded)  # tool calls, not HTTP exchanges
    text = Path("http.json").read_text()
    assert "mcp-session-id" not in text.lower()
    # another port: the server is gone, and the URL is not part of any key
    with cassette.using("http.json", mode="replay", network_guard=True):
        replayed = await agent(streamable_http_client("http://127.0.0.1:9/mcp"))
    assert replayed == live


@pytest.mark.asyncio
async def test_the_key_holds_method_and_params_not_the_jsonrpc_id_or_client_version() -> None:
    with cassette.using("keys.json", mode="record"):
        await agent(stdio())
    initialize = cassette.load_cassette(Path("keys.json")).interactions[0].request
    assert initialize["arguments"]["method"] == "initialize"
    assert "version" not in initialize["arguments"]["params"]["clientInfo"]
    assert "id" not in json.dumps(initialize)
    # another client version, and JSON-RPC ids that start elsewhere: the same calls
    from mcp_types import Implementation

    async def later_sdk() -> dict[str, Any]:
        async with cassette.mcp_transport(stdio("/nonexistent"), server="orders") as (read, write):
            async with ClientSession(
                read, write, client_info=Implementation(name="mcp", version="9.9.9")
            ) as mcp:
                await mcp.initialize()
                tools = await mcp.list_tools()
                return {"tools": [t.name for t in tools.tools]}

    with cassette.using("keys.json", mode="replay", unused="off"):
        assert (await later_sdk())["tools"] == ["lookup_order", "add"]
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1}}}
    first = tool_request("orders", {**call, "id": 1})
    assert first == tool_request("orders", {**call, "id": "req-77"})
    assert first == {"kind": "tool", "name": "mcp:orders/add", "arguments": {"a": 1}}
    meta = {**call, "id": 3, "params": {**call["params"], "_meta": {"progressToken": 5}}}
    normalized = cassette.plugins.manager.normalize(tool_request("orders", meta), "tool")
    assert normalized == first


@pytest.mark.asyncio
async def test_show_and_drift_present_mcp_calls_as_tool_calls() -> None:
    with cassette.using("show.json", mode="record"):
        await agent(stdio())
    rows = timeline(Path("show.json"))
    assert rows[3]["what"] == "mcp:orders/lookup_order"
    assert rows[3]["request"] == '{"order_id":"A1001"}'
    assert '"served":1' in rows[3]["response"]
    # the server's answer changes: drift names that tool call, and only it
    with cassette.using("show.json", mode="rerecord"):
        await agent(stdio(MCP_ORDER_STATUS="delayed"))
    changed = cassette.drift()
    assert [item.seq for item in changed] == [3]
    assert "mcp:orders/lookup_order" in str(changed[0]) and "shipped → delayed" in changed[0].excerpt


@pytest.mark.asyncio
async def test_a_call_the_cassette_does_not_hold_is_a_miss_naming_the_mcp_tool() -> None:
    with cassette.using("miss.json", mode="record"):
        await agent(stdio())
    with pytest.raises(cassette.CassetteMiss, match="mcp:orders/lookup_order"):
        with cassette.using("miss.json", mode="replay"):
            async with cassette.mcp_transport(stdio("/nonexistent"), server="orders") as (read, write):
                async with ClientSession(read, write) as mcp:
                    await mcp.initialize()
                    await mcp.call_tool("lookup_order", {"order_id": "B2002"})
