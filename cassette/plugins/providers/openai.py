"""OpenAI (and Azure OpenAI, and OpenAI-compatible servers): recognise the traffic and normalise it.

The key keeps every body field that can change the answer (model, messages,
input, instructions, tools, tool_choice, response_format, stream, sampling
parameters, …) and drops transport noise: ``user``, ``metadata``,
``prompt_cache_key``, ``safety_identifier``, ``store``. Headers (API keys,
user-agent, ``x-stainless-*``, idempotency keys) and the host never enter it, so a local
or proxy base URL (Ollama, vLLM, LM Studio, Groq's ``/openai/v1``, OpenRouter's ``/api/v1``)
replays. Azure OpenAI adds its ``deployment`` (from ``/openai/deployments/{d}/``) and its
``api_version`` (the ``api-version`` query parameter): both choose what answers.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import orjson

from cassette.core import retry, sse
from cassette.core.canonical import json_or_text
from cassette.core.model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins.providers.wire import (
    form_fields,
    llm_request,
    multipart_parts,
    response_tokens,
    sdk_retries,
)
from cassette.secrets.formats import ASSIGN, KEY_END, KEY_START, key_rule, mixed_case
from cassette.secrets.registry import placeholder_value
from cassette.secrets.rules import SecretRule

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
_MODEL_IN_PATH = re.compile(r"/(openai/deployments|engines)/([^/]+)/")
_API_VERSION = re.compile(r"[?&]api-version=([^&#]*)")


@lru_cache(maxsize=256)
def _route(path: str) -> tuple[str, str | None, bool] | None:
    """The endpoint a request path names, the model its path names, and whether that is an Azure
    deployment; or None."""
    path = path.rstrip("/")
    found = _ENDPOINT.search(path)
    if found is None:
        return None
    in_path = _MODEL_IN_PATH.search(path)
    if in_path is None:
        return _ENDPOINTS[found.group(1)], None, False
    return _ENDPOINTS[found.group(1)], urllib.parse.unquote(in_path.group(2)), in_path.group(1) != "engines"


@hookimpl
def cassette_http_request(request: HttpRequest) -> dict[str, Any] | None:
    if request.method != "POST":
        return None
    route = _route(request.path)
    if route is None:
        return None
    endpoint, model_in_path, deployment = route
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
        if deployment:  # the body's model may name another: the deployment is what answers
            normalized["deployment"] = model_in_path
    if "api-version=" in request.url:  # Azure: the API version chooses the answer's shape
        version = _API_VERSION.search(request.url)
        if version is not None:
            normalized["api_version"] = urllib.parse.unquote_plus(version.group(1))
    return normalized


_AZURE_FIELDS = ("deployment", "api_version")


@hookimpl
def cassette_fallback_match(kind: str, request: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """An Azure call answered by the recording an earlier release made of it, whose key held
    neither the deployment (when the body named a model) nor the API version."""
    if kind != "llm" or request.get("provider") != "openai" or not any(f in request for f in _AZURE_FIELDS):
        return None
    rest = {k: v for k, v in request.items() if k not in _AZURE_FIELDS}

    def earlier(recorded: dict[str, Any]) -> bool:
        return not any(f in recorded for f in _AZURE_FIELDS) and recorded == rest

    return earlier


# The Responses API's last event; chat streams end with ``data: [DONE]``.
_FINAL_EVENTS = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})


@hookimpl
def cassette_stream_complete(request: dict[str, Any], events: list[str]) -> bool | None:
    if request.get("provider") != "openai":
        return None
    name, data = sse.fields(events[-1])
    return data == "[DONE]" or name in _FINAL_EVENTS


@hookimpl
def cassette_response_tokens(response: dict[str, Any], request: dict[str, Any] | None) -> int | None:
    if request is None or request.get("provider") != "openai":
        return None
    return response_tokens(response, ("response",))  # a Responses stream's usage is its final response's


# Volatile in every OpenAI answer: its processing time, the backend's fingerprint, the tier that
# served it, token log-probabilities, a Responses stream's event numbers, and call ids.
_VOLATILE = [
    "openai-processing-ms",
    "system_fingerprint",
    "service_tier",
    "logprobs",
    "sequence_number",
    "call_id",
    "tool_call_id",
]


@hookimpl
def cassette_volatile_fields(kind: str) -> list[str]:
    return _VOLATILE if kind != "tool" else []


# seconds: the SDK retries after at most this, and gives up on a longer wait (MAX_RETRY_AFTER_DELAY)
_MAX_WAIT = 120.0


def _sent_by_sdk(request: HttpRequest) -> bool:
    """A request this SDK sent (``OpenAI/Python 3.1``, ``AsyncAzureOpenAI/…``), or one to an OpenAI route."""
    if request.header("anthropic-version") is not None:
        return False
    agent = (request.header("user-agent") or "").partition("/")[0].removeprefix("Async")
    return agent in ("OpenAI", "AzureOpenAI") or _route(request.path) is not None


@hookimpl
def cassette_retry_headers(
    request: HttpRequest | None, status: int, headers: list[tuple[str, str]], date: str | None
) -> list[tuple[str, str]] | None:
    if request is None or not _sent_by_sdk(request):
        return None
    return retry.immediate(headers, limit=_MAX_WAIT, sent=date) if sdk_retries(status) else headers


# the JSON endpoints a recorded call can be POSTed to again (a promoted test's skeleton)
_PUBLIC_URLS = {
    "chat.completions": "https://api.openai.com/v1/chat/completions",
    "responses": "https://api.openai.com/v1/responses",
    "embeddings": "https://api.openai.com/v1/embeddings",
    "completions": "https://api.openai.com/v1/completions",
    "moderations": "https://api.openai.com/v1/moderations",
    "images.generate": "https://api.openai.com/v1/images/generations",
    "audio.speech": "https://api.openai.com/v1/audio/speech",
}


@hookimpl
def cassette_endpoint_url(request: dict[str, Any]) -> str | None:
    if request.get("provider") != "openai":
        return None
    return _PUBLIC_URLS.get(str(request.get("endpoint")))


@hookimpl
def cassette_client_packages() -> list[str]:
    return ["openai", "langchain_openai"]


@hookimpl
def cassette_sdk_errors() -> list[type[BaseException]]:
    sdk = sys.modules.get("openai")  # only an SDK the caller imported: it is what raises
    error = getattr(sdk, "OpenAIError", None)
    return [error] if isinstance(error, type) else []


# --- what a response answered, for drift review -------------------------------------------------


@hookimpl
def cassette_response_output(
    kind: str, response: dict[str, Any], request: dict[str, Any] | None
) -> dict[str, Any] | None:
    if request is not None and request.get("provider") not in (None, "openai"):
        return None
    body, events = response.get("json"), response.get("events")
    if isinstance(body, dict):
        if isinstance(body.get("choices"), list):
            return _chat_json(body)
        if body.get("object") == "response" or (isinstance(body.get("output"), list) and "status" in body):
            return _responses_json(body)
    elif isinstance(events, list):
        parsed = sse.parsed(events)
        first = next((d for _, d in parsed if isinstance(d, dict)), {})
        if first.get("object") == "chat.completion.chunk" or "choices" in first:
            return _chat_events(parsed)
        if str(first.get("type", "")).startswith("response."):
            return _responses_events(parsed)
    return None


def _chat_json(body: dict[str, Any]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    finish: str | None = None
    for choice in body.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message") or {}
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict))
        if isinstance(message.get("refusal"), str):
            texts.append(message["refusal"])
        if not message and isinstance(choice.get("text"), str):  # the legacy completions endpoint
            texts.append(choice["text"])
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            calls.append(
                {"name": str(fn.get("name", "")), "arguments": json_or_text(fn.get("arguments", ""))}
            )
        finish = finish or choice.get("finish_reason")
    text = "\n".join(t for t in texts if t)
    return {"text": text, "tool_calls": calls, "finish": finish, "truncated": finish == "length"}


def _chat_events(events: list[tuple[str | None, Any]]) -> dict[str, Any]:
    texts: dict[int, list[str]] = {}
    calls: dict[tuple[int, int], dict[str, Any]] = {}
    finish: str | None = None
    for _, chunk in events:
        if not isinstance(chunk, dict):
            continue
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            index = int(choice.get("index") or 0)
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):  # a hand-edited or foreign event: read what is readable
                continue
            for key in ("content", "refusal"):
                if isinstance(delta.get(key), str):
                    texts.setdefault(index, []).append(delta[key])
            for call in delta.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict):
                    continue
                slot = calls.setdefault((index, int(call.get("index") or 0)), {"name": "", "arguments": ""})
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    text = "\n".join("".join(texts[i]) for i in sorted(texts))
    tool_calls = [
        {"name": c["name"], "arguments": json_or_text(c["arguments"])} for _, c in sorted(calls.items())
    ]
    return {"text": text, "tool_calls": tool_calls, "finish": finish, "truncated": finish == "length"}


def _responses_json(body: dict[str, Any]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in body.get("output") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                value = part.get("text") or part.get("refusal") if isinstance(part, dict) else None
                if isinstance(value, str):
                    texts.append(value)
        elif kind in ("function_call", "custom_tool_call"):
            arguments = json_or_text(item.get("arguments", item.get("input")))
            calls.append({"name": str(item.get("name", "")), "arguments": arguments})
        elif isinstance(kind, str) and kind.endswith("_call"):  # built-in tools: web_search_call, …
            calls.append({"name": kind, "arguments": json_or_text(item.get("action") or {})})
    status = body.get("status")
    details = body.get("incomplete_details") or {}
    reason = details.get("reason") if isinstance(details, dict) else None
    out = {"text": "".join(texts), "tool_calls": calls, "finish": reason or status}
    out["truncated"] = status == "incomplete"
    if status == "failed" and isinstance(body.get("error"), dict):
        out["error"] = f"{body['error'].get('code', 'failed')}: {body['error'].get('message', '')}"
    return out


def _responses_events(events: list[tuple[str | None, Any]]) -> dict[str, Any]:
    final: dict[str, Any] | None = None
    items: list[Any] = []
    texts: list[str] = []
    for name, data in events:
        if not isinstance(data, dict):
            continue
        kind = data.get("type", name)
        if kind in ("response.completed", "response.incomplete", "response.failed") and isinstance(
            data.get("response"), dict
        ):
            final = data["response"]
        elif kind == "response.output_item.done":
            items.append(data.get("item"))
        elif kind == "response.output_text.delta" and isinstance(data.get("delta"), str):
            texts.append(data["delta"])
    if final is not None and final.get("output"):
        return _responses_json(final)
    out = _responses_json({"output": items, "status": (final or {}).get("status")})
    if not out["text"] and texts:
        out["text"] = "".join(texts)
    if final is None:
        out["truncated"] = True  # the stream ended before its last event
    return out


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


# --- its keys, for the scanner and the recorder's pattern redaction -------------------------------


def _key(s: str) -> bool:
    return "T3BlbkFJ" in s or (mixed_case(s) and not placeholder_value(s))


RULES = [
    key_rule(
        "openai-api-key",
        "OpenAI API key (sk-proj-, sk-svcacct-, sk-admin-, sk-None-, legacy sk-…T3BlbkFJ…)",
        KEY_START
        + r"(sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,250}"
        + r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48}"
        # any other `sk-<kind>-` key carrying OpenAI's marker (base64 of "OpenAI")
        + r"|[A-Za-z0-9]{2,16}-[A-Za-z0-9_-]{8,250}T3BlbkFJ[A-Za-z0-9_-]{8,250}))"
        + KEY_END,
        prefixes=("sk-", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
        entropy=3.5,
        validate=_key,
    ),
    key_rule(
        "azure-openai-key",
        "Azure OpenAI / Azure AI services key (32 hex under an api-key or AZURE_*_KEY name)",
        r"(?i:azure[\w.-]{0,40}?key|api-key|ocp-apim-subscription-key)[\w.-]{0,10}"
        + ASSIGN
        + r"([a-fA-F0-9]{32})(?![A-Za-z0-9])",
        keywords=("azure", "api-key", "ocp-apim-subscription-key"),
        entropy=3.0,
    ),
]


@hookimpl
def cassette_secret_rules() -> list[SecretRule]:
    """Its key formats; asked before the generic formats (which run last), so a ``Bearer sk-proj-…``
    header is reported as this key, not as a bearer token."""
    return list(RULES)


@hookimpl
def cassette_secret_headers() -> list[str]:
    return ["openai-organization", "openai-project"]
