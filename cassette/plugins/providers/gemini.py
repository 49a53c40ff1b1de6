"""Google Gemini (google-genai, and the REST API it speaks): recognise the traffic and normalise it.

Both APIs name the model and the method in the path, after the API version and, on
Vertex AI, the project and location::

    /v1beta/models/gemini-2.5-flash:generateContent                      (Developer API)
    /v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:streamGenerateContent

The key is ``provider``, ``endpoint`` (the method: ``generateContent``,
``streamGenerateContent``, ``countTokens``, ``computeTokens``, ``embedContent``,
``batchEmbedContents``, ``predict``), ``model`` (from the path: a publisher's model by its
id, ``tunedModels/x`` and ``endpoints/123`` as such) and every body field: ``contents``,
``systemInstruction``, ``tools``, ``toolConfig``, ``generationConfig`` (with its
``responseSchema`` / ``responseJsonSchema``), ``safetySettings``, ``cachedContent``, ….
Not in it: the host and port, the API version, the Vertex project and location (the
client's base URL and account, not the question), the ``key`` and ``alt`` query
parameters, Vertex's billing ``labels``, and every header (``x-goog-api-key``,
``authorization``, ``x-goog-api-client``, user-agent).

google-genai's other calls (``models.get``, ``models.list``, caches, batches, operations,
file metadata; each sends ``x-goog-api-client: google-genai-sdk/…``) are HTTP calls keyed
by their path from the resource on (``/models/gemini-2.5-flash``: not the host, the base
URL's path, the API version or the Vertex project), query (less ``key``) and JSON body;
an upload's bytes go to the generic provider as any other body.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from functools import lru_cache
from typing import Any

import orjson

from cassette.core import retry, sse
from cassette.core.model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins.providers.wire import llm_request, query

NOISE = frozenset({"labels"})

_METHODS = frozenset(
    {
        "generateContent",
        "streamGenerateContent",
        "countTokens",
        "computeTokens",
        "embedContent",
        "batchEmbedContents",
        "predict",
    }
)
# [/v1beta][/projects/p/locations/l][/publishers/google](/models/m | /tunedModels/m | /endpoints/e):method
_PATH = re.compile(
    r"(?:/v\d[\w.]*)?"
    r"(?:/projects/[^/]+/locations/[^/]+)?"
    r"(?:/publishers/([^/]+))?"
    r"/(models|tunedModels|endpoints)/([^/:]+):(\w+)$"
)
# query parameters that never change the answer: the API key, and `alt=sse` (the method says it streams)
_NOT_KEYED = frozenset({"key", "alt", "$alt"})


@lru_cache(maxsize=256)
def _route(path: str) -> tuple[str, str] | None:
    """The method and the model a request path names, or None when it is not a Gemini call."""
    if ":" not in path:  # most traffic is ruled out by one C call
        return None
    found = _PATH.search(path)
    if found is None or found.group(4) not in _METHODS:
        return None
    publisher, collection, name, method = found.groups()
    name = urllib.parse.unquote(name)
    model = name if collection == "models" else f"{collection}/{name}"
    if publisher not in (None, "google"):  # Vertex's Model Garden: publishers/anthropic/models/claude-…
        model = f"{publisher}/{model}"
    return method, model


@hookimpl
def cassette_http_request(request: HttpRequest) -> dict[str, Any] | None:
    route = _route(request.path) if request.method == "POST" else None
    if route is None:
        return _other_sdk_call(request)
    endpoint, model = route
    try:
        body = orjson.loads(request.body) if request.body else {}
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    normalized = llm_request("gemini", endpoint, body, NOISE)
    normalized["model"] = model
    if "?" in request.url:
        rest = [pair for pair in query(request) if pair[0] not in _NOT_KEYED]
        if rest:
            normalized["query"] = rest
    return normalized


_RESOURCE = re.compile(r"/v\d[\w.]*/(?:projects/[^/]+/locations/[^/]+/)?(.*)$")


def _other_sdk_call(request: HttpRequest) -> dict[str, Any] | None:
    """A google-genai call that is no model call, keyed by its path, not the client's base URL."""
    if "google-genai-sdk/" not in (request.header("x-goog-api-client") or ""):
        return None
    body: Any = None
    if request.body:
        try:
            body = orjson.loads(request.body)
        except orjson.JSONDecodeError:
            return None  # an upload's bytes: the generic provider keys them
    # from the resource on: not the base URL's path, the API version, nor the Vertex project and location
    resource = _RESOURCE.search(request.path)
    url = "/" + resource.group(1) if resource else request.path or "/"
    out: dict[str, Any] = {"kind": "http", "method": request.method, "url": url}
    out["sdk"] = "google-genai"
    rest = [pair for pair in query(request) if pair[0] not in _NOT_KEYED] if "?" in request.url else []
    if rest:
        out["query"] = rest
    if body is not None:
        out["json"] = body
    return out


# --- a recorded call made again (a promoted test's skeleton) --------------------------------------

_API = "https://generativelanguage.googleapis.com/v1beta"
_VERTEX = "https://aiplatform.googleapis.com/v1/projects/reissued/locations/global"
_KEY_FIELDS = frozenset({"kind", "provider", "endpoint", "model", "query"})


def reissue_path(endpoint: str, model: str) -> str:
    """The URL `_route` reads back as ``(endpoint, model)``: the Developer API's for its models,
    Vertex's for an endpoint or another publisher's model."""
    collection, _, name = model.rpartition("/")
    if collection in ("tunedModels", "endpoints"):
        base = _API if collection == "tunedModels" else _VERTEX
        return f"{base}/{collection}/{urllib.parse.quote(name, safe='')}:{endpoint}"
    if collection:  # another publisher's model on Vertex: anthropic/claude-…
        return f"{_VERTEX}/publishers/{collection}/models/{urllib.parse.quote(name, safe='')}:{endpoint}"
    return f"{_API}/models/{urllib.parse.quote(name, safe='')}:{endpoint}"


@hookimpl
def cassette_reissue_request(request: dict[str, Any]) -> dict[str, Any] | None:
    if request.get("kind") == "http" and request.get("sdk") == "google-genai":
        url = request.get("url")
        if not isinstance(url, str) or not url.startswith("/"):
            return None
        out: dict[str, Any] = {"method": request.get("method", "GET"), "url": _API + url}
        out["headers"] = {"x-goog-api-client": "google-genai-sdk/reissued"}
        if "json" in request:
            out["json"] = request["json"]
    elif request.get("provider") == "gemini":
        endpoint, model = request.get("endpoint"), request.get("model")
        if (
            not isinstance(endpoint, str)
            or endpoint not in _METHODS
            or not isinstance(model, str)
            or not model
        ):
            return None
        out = {"method": "POST", "url": reissue_path(str(endpoint), model)}
        out["json"] = {k: v for k, v in request.items() if k not in _KEY_FIELDS}
    else:
        return None
    if request.get("query"):
        out["params"] = request["query"]
    return out


# --- what a response means: usage, stream ends, answers ------------------------------------------


def _is_count(value: Any) -> bool:
    # a recorded file may say anything: only a plausible token count is added to the run's total
    return type(value) is int and 0 <= value < 2**40


def _usage_tokens(usage: Any) -> int:
    """``totalTokenCount``, else prompt + candidates + thoughts + tool-use prompt tokens."""
    if not isinstance(usage, dict):
        return 0
    total: Any = usage.get("totalTokenCount")
    if _is_count(total):
        return int(total)
    parts = ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "toolUsePromptTokenCount")
    return sum(usage[k] for k in parts if _is_count(usage.get(k)))


@hookimpl
def cassette_response_tokens(response: dict[str, Any], request: dict[str, Any] | None) -> int | None:
    if request is None or request.get("provider") != "gemini":
        return None
    if request.get("endpoint") in ("countTokens", "computeTokens"):
        return 0  # counting tokens spends none
    body = response.get("json")
    if isinstance(body, dict):
        return _usage_tokens(body.get("usageMetadata"))
    best = 0  # a stream states its usage so far in each event: the largest is the whole call's
    for _, data in sse.parsed(response.get("events") or []):
        if isinstance(data, dict):
            best = max(best, _usage_tokens(data.get("usageMetadata")))
    return best


@hookimpl
def cassette_stream_complete(request: dict[str, Any], events: list[str]) -> bool | None:
    if request.get("provider") != "gemini":
        return None
    _, data = sse.fields(events[-1])
    try:
        last = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(last, dict):
        return False
    if "error" in last or (last.get("promptFeedback") or {}).get("blockReason"):
        return True
    candidates = last.get("candidates") or []
    return bool(candidates) and all(isinstance(c, dict) and c.get("finishReason") for c in candidates)


# Volatile in every Gemini answer: its id, when it was made, and its mean log-probability.
_VOLATILE = ["responseId", "createTime", "avgLogprobs"]


@hookimpl
def cassette_volatile_fields(kind: str) -> list[str]:
    return _VOLATILE if kind != "tool" else []


# google-genai's "NextGen" APIs (`client.interactions`, `agents`, `webhooks`, …: its generated
# `_gaos` client) retry 429s and 5xx by default, after the response's `retry-after-ms`, else its
# `Retry-After` (seconds or a date), taken as given however long; without one, after a backoff.
_NEXTGEN = frozenset(
    {"interactions", "agents", "webhooks", "triggers", "environments", "credentials", "voices", "decisions"}
)


def _nextgen(request: HttpRequest) -> bool:
    if "google-genai-sdk/" not in (request.header("x-goog-api-client") or ""):
        return False
    resource = _RESOURCE.search(request.path)
    return resource is not None and resource.group(1).partition("/")[0] in _NEXTGEN


@hookimpl
def cassette_retry_headers(
    request: HttpRequest | None, status: int, headers: list[tuple[str, str]], date: str | None
) -> list[tuple[str, str]] | None:
    if request is None:
        return None
    if _route(request.path) is not None:
        # the model calls (and google-genai's other calls) retry, when given HttpRetryOptions, after
        # the SDK's own exponential backoff (tenacity) and read no retry header: nothing to rewrite,
        # the recorded headers are handed back as they were, for the caller's code
        return headers
    if _nextgen(request):  # no wait it gives up on: every one made none, as the recorded retry followed
        return retry.immediate(headers, limit=None, sent=date)
    return None


@hookimpl
def cassette_placeholder_credentials() -> dict[str, str]:
    # genai.Client() refuses to build without a key; it reads GOOGLE_API_KEY or GEMINI_API_KEY
    if os.environ.get("GEMINI_API_KEY"):
        return {}
    return {"GOOGLE_API_KEY": "cassette-replay-no-key"}


# google-genai re-raises any exception from its HTTP client untouched (its retry loop retries only
# its own APIError with a retryable `code`, and httpx's timeouts and connect errors): a replay miss
# reaches the caller as it is, so this plugin names no SDK class for `cassette_sdk_errors`. Making
# the miss an `APIError` would be wrong: it has no `code` for that loop to read, and code catching
# `APIError` would take a miss for an API failure.


@hookimpl
def cassette_response_output(
    kind: str, response: dict[str, Any], request: dict[str, Any] | None
) -> dict[str, Any] | None:
    if request is None or request.get("provider") != "gemini":
        return None
    body, events = response.get("json"), response.get("events")
    if isinstance(body, dict):
        if "candidates" in body or "promptFeedback" in body:
            return _answer([body])
        return None
    if isinstance(events, list):
        chunks = [d for _, d in sse.parsed(events) if isinstance(d, dict)]
        out = _answer(chunks)
        ended = bool(chunks) and cassette_stream_complete(request, events) is True
        out["truncated"] = out["truncated"] or not ended
        return out
    return None


def _answer(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The text, function calls, finish reason and error of one response or of a stream's chunks."""
    texts: dict[int, list[str]] = {}
    calls: list[dict[str, Any]] = []
    finish: str | None = None
    error: str | None = None
    for chunk in chunks:
        if isinstance(chunk.get("error"), dict):
            err = chunk["error"]
            error = f"{err.get('status') or err.get('code', 'error')}: {err.get('message', '')}"
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            error = f"blocked: {blocked}"
        for position, candidate in enumerate(chunk.get("candidates") or []):
            if not isinstance(candidate, dict):
                continue
            index = candidate.get("index", position)
            index = index if type(index) is int else position
            for part in (candidate.get("content") or {}).get("parts") or []:
                if not isinstance(part, dict) or part.get("thought") is True:
                    continue  # a thought summary is not the answer
                if isinstance(part.get("text"), str):
                    texts.setdefault(index, []).append(part["text"])
                call = part.get("functionCall")
                if isinstance(call, dict):
                    calls.append({"name": str(call.get("name", "")), "arguments": call.get("args") or {}})
            finish = candidate.get("finishReason") or finish
    text = "\n".join("".join(texts[i]) for i in sorted(texts))
    out: dict[str, Any] = {"text": text, "tool_calls": calls, "finish": finish}
    out["truncated"] = finish == "MAX_TOKENS"
    if error is None and finish in ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"):
        error = f"blocked: {finish}"
    out["error"] = error
    return out
