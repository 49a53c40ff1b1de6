"""Amazon Bedrock Runtime (``boto3.client("bedrock-runtime")``): recognise the calls and key them.

Calls reach this plugin through the botocore seam (``cassette.instrument(client)``) as any
HTTP request does. Recognised by their REST path, whatever the host (a region, a VPC
endpoint or a local server all key alike):

- ``/model/{modelId}/converse`` and ``/converse-stream``: keyed by operation, model id and
  the body (``messages``, ``system``, ``toolConfig``, ``inferenceConfig``,
  ``additionalModelRequestFields``, ``guardrailConfig``, ...), without ``requestMetadata``
  (tags for the invocation logs);
- ``/model/{modelId}/invoke`` and ``/invoke-with-response-stream``: by operation, model id,
  the model's own body, and the headers that change the answer (``accept``,
  ``content-type``, the guardrail, trace, latency and service-tier headers);
- ``/model/{modelId}/count-tokens`` and ``/guardrail/{id}/version/{v}/apply`` likewise.

Never in the key (nor stored): the SigV4 ``Authorization``, ``X-Amz-Date``,
``X-Amz-Security-Token``, a bearer token, the user agent, or the request metadata header.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import re
from typing import Any
from urllib.parse import quote, unquote

import orjson

from cassette.core.canonical import json_or_text
from cassette.core.model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins.providers.wire import json_body, llm_request

_MODEL_PATH = re.compile(
    r"/model/([^/]+)/(converse-stream|converse|invoke-with-response-stream|invoke|count-tokens)$"
)
_GUARDRAIL_PATH = re.compile(r"/guardrail/([^/]+)/version/([^/]+)/apply$")
_ENDPOINTS = {
    "converse": "converse",
    "converse-stream": "converse_stream",
    "invoke": "invoke_model",
    "invoke-with-response-stream": "invoke_model_stream",
    "count-tokens": "count_tokens",
}
NOISE = frozenset({"requestMetadata"})
# request headers of InvokeModel that change the answer (its body is the model's own JSON)
_INVOKE_HEADERS = (
    "accept",
    "content-type",
    "x-amzn-bedrock-guardrailidentifier",
    "x-amzn-bedrock-guardrailversion",
    "x-amzn-bedrock-trace",
    "x-amzn-bedrock-performanceconfig-latency",
    "x-amzn-bedrock-service-tier",
)


@hookimpl
def cassette_http_request(request: HttpRequest) -> dict[str, Any] | None:
    if request.method != "POST":
        return None
    path = request.path.rstrip("/")
    if "/model/" not in path and "/guardrail/" not in path:  # most traffic is ruled out by one C call
        return None
    found = _MODEL_PATH.search(path)
    if found is not None:
        model, operation = unquote(found.group(1)), found.group(2)
        endpoint = _ENDPOINTS[operation]
        body = json_body(request)
        if operation.startswith("invoke"):
            out: dict[str, Any] = {"kind": "llm", "provider": "bedrock", "endpoint": endpoint}
            out["body"] = body if body is not None else _opaque(request.body)
            headers = {name: request.header(name) for name in _INVOKE_HEADERS}
            out["headers"] = {k: v for k, v in headers.items() if v is not None}
        elif isinstance(body, dict):
            if operation == "count-tokens":  # {"input": {"converse": {...}}}: keyed as it is
                out = llm_request("bedrock", endpoint, body, frozenset())
            else:
                out = llm_request("bedrock", endpoint, body, NOISE)
        else:
            return None
        out["model"] = model
        return out
    guardrail = _GUARDRAIL_PATH.search(path)
    if guardrail is not None:
        body = json_body(request)
        if not isinstance(body, dict):
            return None
        out = llm_request("bedrock", "apply_guardrail", body, frozenset())
        out["guardrail"] = [unquote(guardrail.group(1)), unquote(guardrail.group(2))]
        return out
    return None


# --- a recorded call made again (a promoted test's skeleton) --------------------------------------

_RUNTIME = "https://bedrock-runtime.us-east-1.amazonaws.com"
_OPERATIONS = {endpoint: operation for operation, endpoint in _ENDPOINTS.items()}


@hookimpl
def cassette_reissue_request(request: dict[str, Any]) -> dict[str, Any] | None:
    if not _ours(request):
        return None
    endpoint = request.get("endpoint")
    if not isinstance(endpoint, str):
        return None
    if endpoint == "apply_guardrail":
        guardrail = request.get("guardrail")
        if not isinstance(guardrail, list) or len(guardrail) != 2:
            return None
        path = "/guardrail/{}/version/{}/apply".format(*(quote(str(g), safe="") for g in guardrail))
        fields = ("kind", "provider", "endpoint", "guardrail")
    elif endpoint in _OPERATIONS and isinstance(request.get("model"), str):
        path = f"/model/{quote(request['model'], safe='')}/{_OPERATIONS[endpoint]}"
        fields = ("kind", "provider", "endpoint", "model")
    else:
        return None
    out: dict[str, Any] = {"method": "POST", "url": _RUNTIME + path}
    if not endpoint.startswith("invoke_model"):
        out["json"] = {k: v for k, v in request.items() if k not in fields}
        return out
    body, headers = request.get("body"), request.get("headers")
    out["headers"] = dict(headers) if isinstance(headers, dict) else {}
    if isinstance(body, dict) and set(body) == {"base64"}:
        return None  # a binary body: sent as bytes, which this answer cannot carry
    # as text, so that no content-type is added to the headers the key holds
    out["text"] = (
        body["text"] if isinstance(body, dict) and set(body) == {"text"} else orjson.dumps(body).decode()
    )
    return out


def _opaque(body: bytes) -> Any:
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}


def _ours(request: dict[str, Any] | None) -> bool:
    return request is not None and request.get("provider") == "bedrock"


# --- what a response states ----------------------------------------------------------------------


def _count(value: Any) -> int:
    return value if type(value) is int and 0 <= value < 2**40 else 0


def _usage(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    total = _count(usage.get("totalTokens"))
    return total or _count(usage.get("inputTokens")) + _count(usage.get("outputTokens"))


def _events(response: dict[str, Any]) -> list[tuple[str, Any]]:
    """A recorded event stream's ``(event type, payload)`` pairs (an exception's type for one)."""
    out = []
    for event in response.get("event_stream") or ():
        if not isinstance(event, dict) or not isinstance(event.get("headers"), dict):
            continue
        headers = event["headers"]
        name = headers.get(":event-type") or headers.get(":exception-type") or ""
        out.append((str(name), event.get("json")))
    return out


def _chunk_body(payload: Any) -> Any:
    """The model's own JSON inside an InvokeModelWithResponseStream ``chunk`` (base64 ``bytes``)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("bytes"), str):
        return None
    try:
        return orjson.loads(base64.b64decode(payload["bytes"]))
    except (ValueError, orjson.JSONDecodeError):
        return None


@hookimpl
def cassette_response_tokens(response: dict[str, Any], request: dict[str, Any] | None) -> int | None:
    if not _ours(request):
        return None
    body = response.get("json")
    if isinstance(body, dict) and "usage" in body:
        return _usage(body["usage"])
    headers = response.get("headers") or {}
    if isinstance(headers, dict) and "x-amzn-bedrock-input-token-count" in headers:  # InvokeModel's
        counts = [headers.get(f"x-amzn-bedrock-{k}-token-count") for k in ("input", "output")]
        return sum(int(c) for c in counts if isinstance(c, str) and c.isdigit())
    best = 0
    for name, payload in _events(response):
        if name == "metadata" and isinstance(payload, dict):
            best = max(best, _usage(payload.get("usage")))
        elif name == "chunk":  # InvokeModelWithResponseStream: the last chunk states the metrics
            inner = _chunk_body(payload)
            metrics = inner.get("amazon-bedrock-invocationMetrics") if isinstance(inner, dict) else None
            if isinstance(metrics, dict):
                best = max(
                    best, _count(metrics.get("inputTokenCount")) + _count(metrics.get("outputTokenCount"))
                )
    return best


@hookimpl
def cassette_volatile_fields(kind: str) -> list[str]:
    # the header naming each answer, and how long it took
    return ["x-amzn-requestid", "latencyMs"] if kind == "llm" else []


@hookimpl
def cassette_response_output(
    kind: str, response: dict[str, Any], request: dict[str, Any] | None
) -> dict[str, Any] | None:
    if not _ours(request):
        return None
    body = response.get("json")
    if isinstance(body, dict) and isinstance(body.get("output"), dict):
        message = body["output"].get("message") or {}
        return _converse_output(message.get("content") or [], body.get("stopReason"))
    if "event_stream" in response:
        return _stream_output(_events(response))
    return None


def _converse_output(content: list[Any], stop: Any) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            calls.append({"name": str(use.get("name", "")), "arguments": use.get("input")})
    return {"text": "".join(texts), "tool_calls": calls, "finish": stop, "truncated": stop == "max_tokens"}


def _stream_output(events: list[tuple[str, Any]]) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    stop: Any = None
    error: str | None = None
    ended = False
    for name, data in events:
        data = data if isinstance(data, dict) else {}
        at = data.get("contentBlockIndex")
        index = at if type(at) is int else 0
        if name == "contentBlockStart":
            use = (data.get("start") or {}).get("toolUse") or {}
            blocks[index] = {"toolUse": {"name": use.get("name", ""), "input": ""}}
        elif name == "contentBlockDelta":
            delta = data.get("delta") or {}
            block = blocks.setdefault(index, {"text": ""})
            if isinstance(delta.get("text"), str):
                block["text"] = block.get("text", "") + delta["text"]
            elif isinstance(delta.get("toolUse"), dict) and "toolUse" in block:
                block["toolUse"]["input"] += str(delta["toolUse"].get("input", ""))
        elif name == "messageStop":
            stop = data.get("stopReason")
        elif name == "metadata":
            ended = True
        elif name.endswith("Exception"):
            error = f"{name}: {data.get('message', '')}"
    content = []
    for _, block in sorted(blocks.items()):
        if "toolUse" in block:
            block["toolUse"]["input"] = json_or_text(block["toolUse"]["input"])
        content.append(block)
    out = _converse_output(content, stop)
    out["error"] = error
    out["truncated"] = out["truncated"] or not ended
    return out


# --- replay with no AWS account ------------------------------------------------------------------

_NO_KEY = "cassette-replay-no-key"
_PLACEHOLDER_KEYS = {"AWS_ACCESS_KEY_ID": _NO_KEY, "AWS_SECRET_ACCESS_KEY": _NO_KEY}


@hookimpl
def cassette_placeholder_credentials() -> dict[str, str]:
    if importlib.util.find_spec("botocore") is None:  # no boto3 here: nothing to build
        return {}
    # Replaying, the botocore seam signs nothing (botocore.UNSIGNED). Still, boto3.client() needs a
    # region, and with no credentials found it asks the instance metadata service as the client is
    # built (a connection the network guard blocks): keys stop that search, and so does
    # AWS_EC2_METADATA_DISABLED for a profile with none. A profile the user named is left to find its own.
    out = {"AWS_EC2_METADATA_DISABLED": "true"}
    # botocore reads AWS_DEFAULT_REGION only; AWS_REGION is what other AWS SDKs read
    out["AWS_DEFAULT_REGION"] = os.environ.get("AWS_REGION") or "us-east-1"
    if not os.environ.get("AWS_PROFILE") and not os.environ.get("AWS_ACCESS_KEY_ID"):
        out.update(_PLACEHOLDER_KEYS)
    return out
