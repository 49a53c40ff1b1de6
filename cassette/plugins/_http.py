"""Shared parsing for provider plugins: the JSON body and the URL of a request."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from cassette._model import HttpRequest


def json_body(request: HttpRequest) -> Any:
    """The request body parsed as JSON, or ``None`` when it is empty or not JSON."""
    if not request.body:
        return None
    try:
        return orjson.loads(request.body)
    except orjson.JSONDecodeError:
        return None


def query(request: HttpRequest) -> list[list[str]]:
    return sorted([k, v] for k, v in parse_qsl(urlsplit(request.url).query, keep_blank_values=True))


def llm_request(provider: str, endpoint: str, body: dict[str, Any], noise: frozenset[str]) -> dict[str, Any]:
    """The normalised LLM request: every body field that can change the answer, and where it went."""
    out = {k: v for k, v in body.items() if k not in noise}
    out["kind"] = "llm"
    out["provider"] = provider
    out["endpoint"] = endpoint
    return out


def sse_fields(event: str) -> tuple[str | None, str]:
    """The ``event:`` name (or ``None``) and the joined ``data:`` lines of one SSE event.

    Example::

        sse_fields("event: message_stop\\ndata: {}") == ("message_stop", "{}")
    """
    name: str | None = None
    data: list[str] = []
    for line in event.splitlines():
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return name, "\n".join(data)
