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

import re
import sys
from typing import Any

from cassette.core import retry, sse
from cassette.core.canonical import json_or_text
from cassette.core.model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins.providers.wire import json_body, llm_request, response_tokens, sdk_retries
from cassette.secrets.formats import KEY_END, KEY_START, key_rule, mixed_case
from cassette.secrets.registry import placeholder_value
from cassette.secrets.rules import SecretRule, shannon_entropy

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
    name, _ = sse.fields(events[-1])
    return name in ("message_stop", "error")


@hookimpl
def cassette_response_tokens(response: dict[str, Any], request: dict[str, Any] | None) -> int | None:
    if request is None or request.get("provider") != "anthropic":
        return None
    return response_tokens(response, ("message",))  # a stream states usage in message_start's message


@hookimpl
def cassette_volatile_fields(kind: str) -> list[str]:
    return ["request-id"] if kind != "tool" else []  # the header naming each answer


@hookimpl
def cassette_retry_headers(
    request: HttpRequest | None, status: int, headers: list[tuple[str, str]], date: str | None
) -> list[tuple[str, str]] | None:
    if request is None or request.header("anthropic-version") is None:  # every call of the SDK says it
        return None
    # the SDK retries after any wait it is told: every wait is made none
    return retry.immediate(headers, limit=None, sent=date) if sdk_retries(status) else headers


_PUBLIC_URLS = {
    "messages": "https://api.anthropic.com/v1/messages",
    "messages.count_tokens": "https://api.anthropic.com/v1/messages/count_tokens",
    "completions": "https://api.anthropic.com/v1/complete",
}


@hookimpl
def cassette_endpoint_url(request: dict[str, Any]) -> str | None:
    if request.get("provider") != "anthropic":
        return None
    return _PUBLIC_URLS.get(str(request.get("endpoint")))


@hookimpl
def cassette_client_packages() -> list[str]:
    return ["anthropic", "langchain_anthropic"]


@hookimpl
def cassette_sdk_errors() -> list[type[BaseException]]:
    # the SDK wraps any other exception from its HTTP client in a retried APIConnectionError
    # (a missing blob would be reported as a connection error, then as a miss on the retry)
    sdk = sys.modules.get("anthropic")  # only an SDK the caller imported: it is what raises
    error = getattr(sdk, "AnthropicError", None)
    return [error] if isinstance(error, type) else []


# --- what a response answered, for drift review -------------------------------------------------


@hookimpl
def cassette_response_output(
    kind: str, response: dict[str, Any], request: dict[str, Any] | None
) -> dict[str, Any] | None:
    if request is not None and request.get("provider") not in (None, "anthropic"):
        return None
    body, events = response.get("json"), response.get("events")
    if isinstance(body, dict):
        if body.get("type") == "message" and isinstance(body.get("content"), list):
            return _message_json(body)
    elif isinstance(events, list):
        parsed = sse.parsed(events)
        first = next((d for _, d in parsed if isinstance(d, dict)), {})
        if str(first.get("type", "")) in ("message_start", "content_block_start", "ping"):
            return _message_events(parsed)
    return None


_TOOL_BLOCKS = ("tool_use", "server_tool_use")


def _message_json(body: dict[str, Any]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in body.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") in _TOOL_BLOCKS:
            calls.append({"name": str(block.get("name", "")), "arguments": block.get("input")})
    stop = body.get("stop_reason")
    return {"text": "".join(texts), "tool_calls": calls, "finish": stop, "truncated": stop == "max_tokens"}


def _message_events(events: list[tuple[str | None, Any]]) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    stop: str | None = None
    error: str | None = None
    ended = False
    for name, data in events:
        if not isinstance(data, dict):
            continue
        kind = data.get("type", name)
        if kind == "content_block_start":
            block = dict(data.get("content_block") or {})
            block["_json"] = ""
            blocks[int(data.get("index") or 0)] = block
        elif kind == "content_block_delta":
            block = blocks.setdefault(int(data.get("index") or 0), {"type": "text", "text": "", "_json": ""})
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                block["_json"] += str(delta.get("partial_json", ""))
        elif kind == "message_delta":
            stop = (data.get("delta") or {}).get("stop_reason") or stop
        elif kind == "message_stop":
            ended = True
        elif kind == "error":
            err = data.get("error") or {}
            error = f"{err.get('type', 'error')}: {err.get('message', '')}"
    content = []
    for _, block in sorted(blocks.items()):
        if block.get("type") in _TOOL_BLOCKS and block["_json"]:
            block["input"] = json_or_text(block["_json"])
        content.append(block)
    out = _message_json({"content": content, "stop_reason": stop})
    out["error"] = error
    out["truncated"] = out["truncated"] or not ended
    return out


@hookimpl
def cassette_placeholder_credentials() -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "cassette-replay-no-key"}  # Anthropic() refuses to build without one


# --- its keys, for the scanner and the recorder's pattern redaction -------------------------------

# A key cut short (pasted into docs or a test, split by a line break) still leaks most of
# itself: 20 characters of its alphabet are ~120 random bits, more than any placeholder has.
_MIN_BODY = 20
_FULL = re.compile(r"sk-ant-api03-[A-Za-z0-9_-]{93}AA\Z")


def _api_key(s: str) -> bool:
    """The full-length key as is; a shorter one only if it looks random (mixed case and digits)."""
    if _FULL.match(s):
        return True
    body = s[len("sk-ant-api03-") :]
    return mixed_case(body) and not placeholder_value(body) and shannon_entropy(body) >= 3.5


RULES = [
    key_rule(
        "anthropic-api-key",
        "Anthropic API key (sk-ant-api03-…AA, or a shortened one of 20+ random characters)",
        KEY_START + rf"(sk-ant-api03-(?:[A-Za-z0-9_-]{{93}}AA|[A-Za-z0-9_-]{{{_MIN_BODY},}}))" + KEY_END,
        prefixes=("sk-ant-api03-",),
        validate=_api_key,
    ),
    key_rule(
        "anthropic-admin-key",
        "Anthropic Admin API key (sk-ant-admin01-…AA)",
        KEY_START + r"(sk-ant-admin01-[A-Za-z0-9_-]{93}AA)" + KEY_END,
        prefixes=("sk-ant-admin01-",),
    ),
    key_rule(
        "anthropic-oauth-token",
        "Anthropic OAuth access or refresh token (sk-ant-oat01-, sk-ant-ort01-)",
        KEY_START + r"(sk-ant-o[ar]t01-[A-Za-z0-9_-]{40,300})" + KEY_END,
        prefixes=("sk-ant-oat01-", "sk-ant-ort01-"),
        entropy=3.5,
    ),
]


@hookimpl
def cassette_secret_rules() -> list[SecretRule]:
    """Its key formats; asked before the generic formats (which run last)."""
    return list(RULES)
