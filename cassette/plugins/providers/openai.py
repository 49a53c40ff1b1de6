"""OpenAI (and Azure OpenAI, and OpenAI-compatible servers): recognise the traffic and normalise it.

The key keeps every body field that can change the answer (model, messages,
input, instructions, tools, tool_choice, response_format, stream, sampling
parameters, …) and drops transport noise: ``user``, ``metadata``,
``prompt_cache_key``, ``safety_identifier``, ``store``. Headers (API keys,
user-agent, ``x-stainless-*``, idempotency keys) and the host never enter it.
"""

from __future__ import annotations

import re
import urllib.parse
from functools import lru_cache
from typing import Any

import orjson

from cassette.core.model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins.providers.wire import form_fields, llm_request, multipart_parts, sse_fields

NOISE = frozenset({"user", "metadata", "prompt_cache_key", "safety_identifier", "store"})

_ENDPOINTS = {
    "chat/completions": "chat.completions",
    "responses": "responses",
    "embeddings": "embeddings",
    "completions": "completions",
    "moderations": "moderations",
    "images/generations": "images.generate",
    "audio/speech": "audio.speech",
    # multipart uploads: the key holds their fields, and each file's name, size and SHA-256
    "audio/transcriptions": "audio.transcriptions",
    "audio/translations": "audio.translations",
    "images/edits": "images.edit",
    "images/variations": "images.create_variation",
}
# One search for every endpoint; the leftmost match is the longest suffix (chat/completions, not completions).
_ENDPOINT = re.compile("/(" + "|".join(re.escape(suffix) for suffix in _ENDPOINTS) + ")$")
# Azure names the model's deployment in the path, as did OpenAI's legacy /v1/engines/<model>/ routes:
# without it two deployments (or engines) given the same body would share a key.
_MODEL_IN_PATH = re.compile(r"/(?:openai/deployments|engines)/([^/]+)/")


@lru_cache(maxsize=256)
def _route(path: str) -> tuple[str, str | None] | None:
    """The endpoint a request path names, and the model its path names (Azure), or None."""
    path = path.rstrip("/")
    found = _ENDPOINT.search(path)
    if found is None:
        return None
    in_path = _MODEL_IN_PATH.search(path)
    return _ENDPOINTS[found.group(1)], urllib.parse.unquote(in_path.group(1)) if in_path else None


@hookimpl
def cassette_http_request(request: HttpRequest) -> dict[str, Any] | None:
    if request.method != "POST":
        return None
    route = _route(request.path)
    if route is None:
        return None
    endpoint, model_in_path = route
    if request.header("anthropic-version") is not None:
        return None
    try:  # `json_body`, one call less for every request
        body = orjson.loads(request.body) if request.body else None
    except orjson.JSONDecodeError:
        body = None
    if body is None:
        parts = multipart_parts(request)
        body = form_fields(parts) if parts is not None else None
    if not isinstance(body, dict):
        return None
    normalized = llm_request("openai", endpoint, body, NOISE)
    if model_in_path is not None:
        normalized.setdefault("model", model_in_path)
    return normalized


# The Responses API's last event; chat streams end with ``data: [DONE]``.
_FINAL_EVENTS = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})


@hookimpl
def cassette_stream_complete(request: dict[str, Any], events: list[str]) -> bool | None:
    if request.get("provider") != "openai":
        return None
    name, data = sse_fields(events[-1])
    return data == "[DONE]" or name in _FINAL_EVENTS


@hookimpl
def cassette_placeholder_credentials() -> dict[str, str]:
    # OpenAI() and AzureOpenAI() refuse to build without a key; replay sends none
    return {"OPENAI_API_KEY": "cassette-replay-no-key", "AZURE_OPENAI_API_KEY": "cassette-replay-no-key"}


@hookimpl
def cassette_network_hint(host: str, packages: list[str]) -> str | None:
    if "agents" in packages:
        return (
            "This is openai-agents' own trace exporter (it posts traces to api.openai.com on its own "
            "client, at exit too): turn it off for replay with agents.set_tracing_disabled(True) or "
            "OPENAI_AGENTS_DISABLE_TRACING=1."
        )
    return None
