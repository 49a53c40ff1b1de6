"""The devserver's Amazon Bedrock Runtime endpoints: Converse and ConverseStream.

The real ``boto3`` client talks to them over HTTP (``endpoint_url=srv.url``); any credentials
are accepted and the signature is not checked. The answer is the devserver's own (the same
rule table as its OpenAI and Anthropic endpoints), in Bedrock's shapes; ConverseStream is AWS's
binary event stream, each message with its prelude and message CRC32s, one HTTP chunk each.
Standard library only, like the devserver.

    with DevServer(seed=1) as srv:
        client = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=srv.url,
                              aws_access_key_id="test", aws_secret_access_key="test")
        client.converse(modelId="amazon.nova-lite-v1:0",
                        messages=[{"role": "user", "content": [{"text": "Hi"}]}])

Errors on demand, as AWS answers them (``x-amzn-errortype`` and ``{"message"}``): model id
``error-429`` is a ``ThrottlingException``, ``error-400`` a ``ValidationException``, and so on
for ``error-403``, ``error-404``, ``error-500``, ``error-503``. Model id ``stream-throttled``
streams a few events, then a ``throttlingException`` message in the stream.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

JSON = dict[str, Any]
# an Anthropic Messages request body -> the devserver's Anthropic answer (a `message` object)
Compose = Callable[[JSON], JSON]

PATH = re.compile(r"/model/([^/]+)/(converse|converse-stream)")
_ERRORS = {
    400: ("ValidationException", "The provided model identifier is invalid."),
    403: ("AccessDeniedException", "You don't have access to the model with the specified model ID."),
    404: ("ResourceNotFoundException", "Could not resolve the foundation model from the model identifier."),
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: ("InternalServerException", "The server encountered an error processing your request."),
    503: ("ServiceUnavailableException", "The service is temporarily unavailable."),
}


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude (lengths, CRC32), string headers, payload, message CRC32."""
    block = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        block += bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    prelude = struct.pack(">II", 16 + len(block) + len(payload), len(block))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + block + payload
    return head + struct.pack(">I", zlib.crc32(head))


def _event(kind: str, data: JSON) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(data, separators=(",", ":")).encode())


def _exception(kind: str, message: str) -> bytes:
    headers = {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"}
    return frame(headers, json.dumps({"message": message}).encode())


def _text(content: Any) -> str:
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block, dict) and "json" in block:
            parts.append(json.dumps(block["json"]))
    return "\n".join(parts)


def _anthropic_body(body: JSON) -> JSON:
    """A Converse request as the Anthropic Messages request the devserver answers."""
    messages = []
    for message in body.get("messages") or []:
        blocks: list[JSON] = []
        for block in message.get("content") or []:
            if "text" in block:
                blocks.append({"type": "text", "text": block["text"]})
            elif "toolUse" in block:
                use = block["toolUse"]
                blocks.append(
                    {"type": "tool_use", "id": use["toolUseId"], "name": use["name"], "input": use["input"]}
                )
            elif "toolResult" in block:
                result = block["toolResult"]
                blocks.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": result["toolUseId"],
                        "content": _text(result["content"]),
                    }
                )
        messages.append({"role": message.get("role", "user"), "content": blocks})
    out: JSON = {
        "model": "bedrock",
        "messages": messages,
        "max_tokens": (body.get("inferenceConfig") or {}).get("maxTokens", 512),
        "system": _text(body.get("system")),
    }
    tool_config = body.get("toolConfig") or {}
    tools = [t["toolSpec"] for t in tool_config.get("tools") or [] if "toolSpec" in t]
    if tools:
        out["tools"] = [
            {
                "name": t["name"],
                "description": t.get("description", ""),
                "input_schema": t["inputSchema"]["json"],
            }
            for t in tools
        ]
    choice = tool_config.get("toolChoice") or {}
    if "any" in choice:
        out["tool_choice"] = {"type": "any"}
    elif "tool" in choice:
        out["tool_choice"] = {"type": "tool", "name": choice["tool"]["name"]}
    return out


def _content(message: JSON) -> list[JSON]:
    content: list[JSON] = []
    for block in message["content"]:
        if block["type"] == "text":
            content.append({"text": block["text"]})
        else:
            use = {
                "toolUseId": "tooluse_" + block["id"][-22:],
                "name": block["name"],
                "input": block["input"],
            }
            content.append({"toolUse": use})
    return content


def _stop(message: JSON) -> str:
    return {"tool_use": "tool_use", "max_tokens": "max_tokens"}.get(message["stop_reason"], "end_turn")


def _usage(message: JSON) -> JSON:
    used = message["usage"]
    return {
        "inputTokens": used["input_tokens"],
        "outputTokens": used["output_tokens"],
        "totalTokens": used["input_tokens"] + used["output_tokens"],
    }


def converse(body: JSON, compose: Compose) -> JSON:
    message = compose(_anthropic_body(body))
    return {
        "output": {"message": {"role": "assistant", "content": _content(message)}},
        "stopReason": _stop(message),
        "usage": _usage(message),
        "metrics": {"latencyMs": 120 + len(json.dumps(message)) % 300},
    }


def converse_stream(body: JSON, compose: Compose, *, throttled: bool = False) -> list[bytes]:
    message = compose(_anthropic_body(body))
    frames = [_event("messageStart", {"role": "assistant"})]
    for index, block in enumerate(_content(message)):
        if "text" in block:
            for piece in re.findall(r"\s*\S+\s*?", block["text"]) or [block["text"]]:
                frames.append(
                    _event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}})
                )
                if throttled and len(frames) == 3:
                    return [*frames, _exception("throttlingException", _ERRORS[429][1])]
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            frames.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            arguments = json.dumps(use["input"])
            for at in range(0, len(arguments), 12):
                delta = {"toolUse": {"input": arguments[at : at + 12]}}
                frames.append(_event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        frames.append(_event("contentBlockStop", {"contentBlockIndex": index}))
    frames.append(_event("messageStop", {"stopReason": _stop(message)}))
    metrics = {"latencyMs": 80 + len(frames) * 7}
    frames.append(_event("metadata", {"usage": _usage(message), "metrics": metrics}))
    return frames


def respond(
    path: str, raw: bytes, compose: Compose, request_id: str
) -> tuple[int, JSON, bytes | list[bytes]]:
    """``(status, headers, body)`` for a Bedrock Runtime request; the body is the event-stream
    messages for a ConverseStream that succeeds."""
    found = PATH.fullmatch(path)
    headers = {"x-amzn-requestid": request_id}
    if found is None:
        return _error(404, "UnknownOperationException", f"No such operation: {path}", headers)
    model, operation = unquote(found.group(1)), found.group(2)
    requested = re.fullmatch(r"error-(\d{3})", model)
    if requested and int(requested.group(1)) in _ERRORS:
        return _error(int(requested.group(1)), *_ERRORS[int(requested.group(1))], headers)
    try:
        body = json.loads(raw)
    except ValueError:
        return _error(400, "SerializationException", "The request body is not JSON.", headers)
    if not isinstance(body, dict) or not body.get("messages"):
        return _error(400, "ValidationException", "A conversation must start with a user message.", headers)
    if operation == "converse":
        data = json.dumps(converse(body, compose), separators=(",", ":")).encode()
        return 200, {**headers, "content-type": "application/json"}, data
    frames = converse_stream(body, compose, throttled=model == "stream-throttled")
    return 200, {**headers, "content-type": "application/vnd.amazon.eventstream"}, frames


def _error(status: int, kind: str, message: str, headers: JSON) -> tuple[int, JSON, bytes]:
    error = {**headers, "content-type": "application/json"}
    error["x-amzn-errortype"] = f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    return status, error, json.dumps({"message": message}).encode()
