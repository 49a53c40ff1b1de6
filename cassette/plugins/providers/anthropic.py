"""Anthropic Messages API: recognise the traffic and normalise it.

The key keeps model, system, messages, tools, tool_choice, max_tokens,
stop_sequences, stream, thinking, output_config, sampling parameters and any
other body field. It drops what cannot change the answer: ``metadata``,
``diagnostics`` (it names the previous message id, new on every run),
``workspace_id``, ``user_profile_id``, ``inference_geo`` and prompt-caching
markers (``cache_control``, top-level or on any block); a single plain text
block is keyed as the bare string it is equivalent to. Headers (``x-api-key``,
``anthropic-version``, ``anthropic-beta``, user-agent) never enter it.
"""

from __future__ import annotations

from typing import Any

from cassette.core.model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins.providers.wire import json_body, llm_request, sse_fields

NOISE = frozenset(
    {"metadata", "diagnostics", "workspace_id", "user_profile_id", "inference_geo", "cache_control"}
)

_ENDPOINTS = {
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "messages.count_tokens",
    "/v1/complete": "completions",
}
_SUFFIXES = tuple(_ENDPOINTS)


def _without_cache_markers(value: Any) -> Any:
    """Prompt-caching markers on system, message and tool blocks change the bill, not the answer."""
    if isinstance(value, list):
        return [_without_cache_markers(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_cache_markers(v) for k, v in value.items() if k != "cache_control"}
    return value


@hookimpl
def cassette_http_request(request: HttpRequest) -> dict[str, Any] | None:
    if request.method != "POST":
        return None
    path = request.path.rstrip("/")
    if not path.endswith(_SUFFIXES):  # most traffic is ruled out by one C call
        return None
    endpoint = next(name for suffix, name in _ENDPOINTS.items() if path.endswith(suffix))
    body = json_body(request)
    if not isinstance(body, dict):
        return None
    normalized = llm_request("anthropic", endpoint, body, NOISE)
    for field in ("system", "messages", "tools"):
        if isinstance(normalized.get(field), list):
            normalized[field] = _without_cache_markers(normalized[field])
    # one plain text block means the same as the bare string (adding cache_control forces the block form)
    if "system" in normalized:
        normalized["system"] = _plain_text(normalized["system"])
    for message in normalized.get("messages") or ():
        if isinstance(message, dict) and "content" in message:
            message["content"] = _plain_text(message["content"])
    return normalized


def _plain_text(content: Any) -> Any:
    if isinstance(content, list) and len(content) == 1:
        block = content[0]
        if isinstance(block, dict) and set(block) == {"type", "text"} and block["type"] == "text":
            return block["text"]
    return content


@hookimpl
def cassette_stream_complete(request: dict[str, Any], events: list[str]) -> bool | None:
    if request.get("provider") != "anthropic":
        return None
    name, _ = sse_fields(events[-1])
    return name in ("message_stop", "error")


@hookimpl
def cassette_placeholder_credentials() -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "cassette-replay-no-key"}  # Anthropic() refuses to build without one
