"""A real MCP server, written with the mcp SDK, for tests/test_mcp.py.

    python tests/mcp_server.py stdio
    python tests/mcp_server.py http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp

Its answers carry a counter of the calls it served, so a replay that reached it would show.
"""

from __future__ import annotations

import os
import sys
from itertools import count

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("orders")
served = count(1)
# MCP_ORDER_STATUS changes what the server answers (a re-recording that drifts)
ORDERS = {
    "A1001": {"status": os.environ.get("MCP_ORDER_STATUS", "shipped"), "total": 42.5},
    "B2002": {"status": "refunded", "total": 9.99},
}


@server.tool()
def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order by its id."""
    if order_id not in ORDERS:
        raise ToolError(f"no order {order_id}")
    return {"order_id": order_id, **ORDERS[order_id], "served": next(served)}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
