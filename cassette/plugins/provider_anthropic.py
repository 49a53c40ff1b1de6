"""Anthropic Messages API: recognise the traffic and normalise it.

The key keeps model, system, messages, tools, tool_choice, max_tokens,
temperature, top_p, top_k, stop_sequences, stream, thinking and any other body
field; it drops ``metadata``. Headers (``x-api-key``, ``anthropic-version``,
user-agent) never enter it.
"""

from __future__ import annotations

from typing import Any

from cassette._model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins._http import json_body, llm_request

NOISE = frozenset({"metadata"})

_ENDPOINTS = {
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "messages.count_tokens",
    "/v1/complete": "completions",
}


@hookimpl
def cassette_http_request(request: HttpRequest) -> dict[str, Any] | None:
    if request.method != "POST":
        return None
    path = request.path.rstrip("/")
    endpoint = next((name for suffix, name in _ENDPOINTS.items() if path.endswith(suffix)), None)
    if endpoint is None:
        return None
    body = json_body(request)
    if not isinstance(body, dict):
        return None
    return llm_request("anthropic", endpoint, body, NOISE)
