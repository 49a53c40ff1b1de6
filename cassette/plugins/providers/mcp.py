"""MCP tool servers: what keys a call recorded by the MCP seam (``cassette.mcp_transport``).

The seam records each request as a tool interaction named ``mcp:<server>/<tool>`` (a
``tools/call``) or ``mcp:<server>`` (any other method or notification). This plugin keeps out
of its key what changes with no change in the call: ``_meta`` (progress tokens, trace context)
and, in ``initialize``, the client's ``version`` (an SDK upgrade is the same client asking the
same thing). The JSON-RPC ``id`` and the session id header never reach the request at all.
"""

from __future__ import annotations

from typing import Any

from cassette.hookspecs import hookimpl


@hookimpl
def cassette_normalize(request: dict[str, Any], kind: str) -> None:
    if kind != "tool" or not str(request.get("name", "")).startswith("mcp:"):
        return
    for holder in (request.get("params"), (request.get("arguments") or {}).get("params")):
        if isinstance(holder, dict):
            holder.pop("_meta", None)
    if request.get("params") == {}:  # a tools/call whose only other parameter was its _meta
        del request["params"]
    arguments = request.get("arguments")
    if isinstance(arguments, dict) and arguments.get("method") == "initialize":
        client = (arguments.get("params") or {}).get("clientInfo")
        if isinstance(client, dict):
            client.pop("version", None)
