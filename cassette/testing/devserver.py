"""A local OpenAI- and Anthropic-compatible HTTP server for tests and demos.

The real ``openai`` and ``anthropic`` SDKs talk to it over real HTTP on loopback,
so everything between the SDK and the socket (our transport, the SDK's own
parsing, SSE framing, error classes) runs for real. Standard library only.

    with DevServer(seed=7) as srv:
        client = OpenAI(base_url=srv.openai_base_url, api_key="sk-test")
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])
        assert len(srv.requests) == 1

From a shell (serves until killed, prints one line when ready)::

    python -m cassette.devserver --port 8765 --seed 1

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/responses``,
``POST /v1/embeddings``, ``POST /v1/audio/transcriptions`` (multipart upload),
``GET /v1/models``, ``POST /v1/messages``,
``POST /v1/messages/count_tokens``; Gemini's ``…/models/{m}:generateContent`` and its
other methods (`cassette.testing.gemini`); Amazon Bedrock's ``POST /model/{id}/converse`` and
``/converse-stream`` (``cassette.testing.bedrock``).

How answers are chosen (deterministic given the seed):

* The last user message is matched against ``RULES``, a small keyword table;
  each rule has several rewordings of one canned answer. If nothing matches,
  the whole conversation is tried, then a generic answer echoes the key words
  of the last user message.
* Tool calls: only when tools are offered, ``tool_choice`` is not "none" and the
  last message is a *user* message (never right after a tool result). A tool is
  called when the user text names it, or when a word of its name (split on
  ``_``, ``-`` and camelCase, generic verbs such as get/search/lookup dropped)
  shares a 5-letter stem with a word of the user text or with the tool hints of
  the matched rule (e.g. "charged twice" -> billing -> ``issue_refund``). Every
  matching tool is called (one unless parallel calls are allowed); "required"
  / "any" calls the first tool when none matches; a named ``tool_choice``
  forces that tool. Arguments are built from the tool's JSON schema, with
  values taken from the user text where a property name suggests it.
* After a tool result the answer quotes the tool's output and, if the original
  question matched a rule, adds that rule's answer.
* ``response_format`` / ``text.format`` / ``output_config.format`` json_schema:
  the content is JSON filling every required property with a plausible value.

Variation: each server instance draws a random seed unless given ``seed=``;
ids, ``created``, ``system_fingerprint`` and the rewording chosen depend on it.
With ``n>1`` the choices use distinct rewordings where the rule has enough.

Errors on demand: model ``error-429`` (any 4xx/5xx) or header
``x-devserver-error: 429`` returns the provider's real error body with
``x-should-retry: false`` (and ``retry-after: 0`` for 429). Model ``flaky-N``
fails the first N identical requests with 500 and ``x-should-retry: true`` so
SDK retries succeed; ``DevServer.fail_next(n, status)`` does the same for the
next n requests of any kind.
"""

from __future__ import annotations

import argparse
import base64
import email.parser
import email.policy
import hashlib
import json
import random
import re
import socket
import string
import struct
import sys
import threading
import time
import traceback
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NamedTuple

from cassette.testing import bedrock, gemini
from cassette.testing.answers import (
    JSON,
    RULES,
    Rule,
    _ApiError,
    _chunks,
    _compose,
    _Conversation,
    _count_tokens,
    _embed,
    _Reply,
    _reply_tokens,
    _Tool,
)

__all__ = ["RULES", "DevServer", "RecordedRequest", "Rule", "main"]


# --------------------------------------------------------------------------- rule table


# --------------------------------------------------------------------------- the request, provider-neutral


def _text_of(content: Any) -> str:
    """The text of a message content: a string or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif "content" in part:
                    parts.append(_text_of(part["content"]))
        return "\n".join(p for p in parts if p)
    return str(content)


def _chat_conversation(body: JSON) -> _Conversation:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _ApiError(400, "Missing required parameter: 'messages'.", param="messages")
    conv = _Conversation()
    call_names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            call_names[call.get("id", "")] = call.get("function", {}).get("name", "tool")
        if message.get("role") == "user":
            conv.last_user_text = _text_of(message.get("content"))
    conv.all_text = "\n".join(_text_of(m.get("content")) for m in messages)
    last = messages[-1]
    if last.get("role") == "tool":
        name = call_names.get(last.get("tool_call_id", ""), "the tool")
        conv.tool_result = (name, _text_of(last.get("content")))
    elif last.get("role") != "user":
        conv.tool_mode = "none"
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if tool.get("type") == "function" and function.get("name"):
            conv.tools.append(_Tool(function["name"], function.get("parameters") or {}))
    choice = body.get("tool_choice")
    if choice in ("none", "required") and conv.tool_mode != "none":
        conv.tool_mode = choice
    elif isinstance(choice, dict) and conv.tool_mode != "none":
        conv.forced_tool = (choice.get("function") or {}).get("name")
    conv.parallel = body.get("parallel_tool_calls", True) is not False
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        conv.schema = (response_format.get("json_schema") or {}).get("schema") or {}
    conv.json_object = response_format.get("type") == "json_object"
    return conv


def _responses_conversation(body: JSON) -> _Conversation:
    items = body.get("input")
    if items is None:
        raise _ApiError(400, "Missing required parameter: 'input'.", param="input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    conv = _Conversation()
    call_names: dict[str, str] = {}
    texts = [str(body.get("instructions") or "")]
    for item in items:
        if item.get("type") == "function_call":
            call_names[item.get("call_id", "")] = item.get("name", "tool")
        elif item.get("type") == "function_call_output":
            texts.append(_text_of(item.get("output")))
        else:
            texts.append(_text_of(item.get("content")))
            if item.get("role") == "user":
                conv.last_user_text = _text_of(item.get("content"))
    conv.all_text = "\n".join(texts)
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output":
        name = call_names.get(last.get("call_id", ""), "the tool")
        conv.tool_result = (name, _text_of(last.get("output")))
    elif last.get("role") != "user":
        conv.tool_mode = "none"
    for tool in body.get("tools") or []:
        if tool.get("type") == "function" and tool.get("name"):
            conv.tools.append(_Tool(tool["name"], tool.get("parameters") or {}))
    choice = body.get("tool_choice")
    if choice in ("none", "required") and conv.tool_mode != "none":
        conv.tool_mode = choice
    elif isinstance(choice, dict) and conv.tool_mode != "none":
        conv.forced_tool = choice.get("name")
    conv.parallel = body.get("parallel_tool_calls", True) is not False
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema":
        conv.schema = text_format.get("schema") or {}
    conv.json_object = text_format.get("type") == "json_object"
    return conv


def _anthropic_conversation(body: JSON) -> _Conversation:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _ApiError(400, "messages: Field required", param="messages")
    if "max_tokens" not in body:
        raise _ApiError(400, "max_tokens: Field required", param="max_tokens")
    conv = _Conversation()
    call_names: dict[str, str] = {}
    texts = [_text_of(body.get("system"))]
    for message in messages:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                call_names[block.get("id", "")] = block.get("name", "tool")
        texts.append(_text_of(content))
        user_text = _text_of([b for b in blocks if b.get("type") == "text"]) if blocks else _text_of(content)
        if message.get("role") == "user" and user_text:
            conv.last_user_text = user_text
    conv.all_text = "\n".join(texts)
    last = messages[-1]
    last_blocks = last.get("content") if isinstance(last.get("content"), list) else []
    results = [b for b in last_blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    if last.get("role") == "user" and results:
        name = call_names.get(results[-1].get("tool_use_id", ""), "the tool")
        conv.tool_result = (name, "; ".join(_text_of(r.get("content")) for r in results))
    elif last.get("role") != "user":
        conv.tool_mode = "none"
    for tool in body.get("tools") or []:
        if tool.get("name") and "input_schema" in tool:
            conv.tools.append(_Tool(tool["name"], tool.get("input_schema") or {}))
    choice = body.get("tool_choice") or {}
    if conv.tool_mode != "none":
        if choice.get("type") == "none":
            conv.tool_mode = "none"
        elif choice.get("type") == "any":
            conv.tool_mode = "required"
        elif choice.get("type") == "tool":
            conv.forced_tool = choice.get("name")
    conv.parallel = not choice.get("disable_parallel_tool_use", False)
    output_format = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
    if output_format.get("type") == "json_schema":
        conv.schema = output_format.get("schema") or {}
    return conv


# --------------------------------------------------------------------------- composing the answer


# --------------------------------------------------------------------------- per-request randomness


class _Dice:
    """The randomness of one request: ids, timestamps and rewordings."""

    def __init__(self, rng: random.Random, seeded: bool) -> None:
        self.rng = rng
        self.salt = rng.getrandbits(64).to_bytes(8, "big").hex()
        self.created = 1_767_225_600 + rng.randrange(86_400 * 300) if seeded else int(time.time())

    def token(self, length: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(length))

    def hex(self, length: int) -> str:
        return self.token(length, "0123456789abcdef")


def _prompt_tokens(body: JSON, conv: _Conversation) -> int:
    tools = json.dumps(body.get("tools") or [])
    return _count_tokens(conv.all_text) + 3 * len(body.get("messages") or [1]) + _count_tokens(tools) // 2 + 1


# --------------------------------------------------------------------------- OpenAI chat completions


def _chat(body: JSON, dice: _Dice, fingerprint: str) -> tuple[JSON, list[bytes] | None]:
    conv = _chat_conversation(body)
    n = int(body.get("n") or 1)
    if not 1 <= n <= 128:
        raise _ApiError(400, f"{n} is greater than the maximum of 128 - 'n'", param="n")
    model = body.get("model", "gpt-4o-mini")
    replies = [_compose(conv, dice.salt, i) for i in range(n)]
    call_ids = [[f"call_{dice.token(24)}" for _ in r.tool_calls] for r in replies]
    prompt = _prompt_tokens(body, conv)
    completion = sum(_reply_tokens(r) for r in replies)
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    head = {
        "id": f"chatcmpl-{dice.token(29)}",
        "created": dice.created,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": fingerprint,
    }
    if not body.get("stream"):
        choices = []
        for index, (reply, ids) in enumerate(zip(replies, call_ids)):
            message: JSON = {"role": "assistant", "content": reply.text, "refusal": None, "annotations": []}
            if reply.tool_calls:
                message["tool_calls"] = [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                    for cid, (name, args) in zip(ids, reply.tool_calls)
                ]
            finish = "tool_calls" if reply.tool_calls else "stop"
            choices.append({"index": index, "message": message, "logprobs": None, "finish_reason": finish})
        return {**head, "object": "chat.completion", "choices": choices, "usage": usage}, None

    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(choices: list[JSON], **extra: Any) -> bytes:
        data = {**head, "object": "chat.completion.chunk", "choices": choices, **extra}
        if include_usage and "usage" not in extra:
            data["usage"] = None
        return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"

    def choice(index: int, delta: JSON, finish: str | None = None) -> list[JSON]:
        return [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]

    events = []
    for index, (reply, ids) in enumerate(zip(replies, call_ids)):
        if reply.tool_calls:
            events.append(chunk(choice(index, {"role": "assistant", "content": None, "refusal": None})))
            for position, (cid, (name, args)) in enumerate(zip(ids, reply.tool_calls)):
                opening = {"index": position, "id": cid, "type": "function"}
                opening["function"] = {"name": name, "arguments": ""}
                events.append(chunk(choice(index, {"tool_calls": [opening]})))
                for piece in _chunks(json.dumps(args), 12):
                    delta = {"tool_calls": [{"index": position, "function": {"arguments": piece}}]}
                    events.append(chunk(choice(index, delta)))
            events.append(chunk(choice(index, {}, "tool_calls")))
        else:
            events.append(chunk(choice(index, {"role": "assistant", "content": "", "refusal": None})))
            for piece in _chunks(reply.text or ""):
                events.append(chunk(choice(index, {"content": piece})))
            events.append(chunk(choice(index, {}, "stop")))
    if include_usage:
        events.append(chunk([], usage=usage))
    events.append(b"data: [DONE]\n\n")
    return {}, events


# --------------------------------------------------------------------------- OpenAI responses


def _responses(body: JSON, dice: _Dice) -> tuple[JSON, list[bytes] | None]:
    conv = _responses_conversation(body)
    reply = _compose(conv, dice.salt, 0)
    prompt = _count_tokens(conv.all_text) + 3
    completion = _reply_tokens(reply)
    output = _responses_output(reply, dice)
    response = _response_object(body, conv, dice, output, prompt, completion)
    if not body.get("stream"):
        return response, None
    return {}, _responses_events(response, output)


def _responses_output(reply: _Reply, dice: _Dice) -> list[JSON]:
    """The ``output`` items of a response: one ``function_call`` per tool call, then the message."""
    output: list[JSON] = []
    for name, args in reply.tool_calls:
        output.append(
            {
                "id": f"fc_{dice.hex(48)}",
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{dice.token(24)}",
                "name": name,
                "arguments": json.dumps(args),
            }
        )
    if reply.text is not None:
        content = [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}]
        output.append(
            {
                "id": f"msg_{dice.hex(48)}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
        )
    return output


def _response_object(
    body: JSON, conv: _Conversation, dice: _Dice, output: list[JSON], prompt: int, completion: int
) -> JSON:
    """The completed ``response`` object around ``output``, echoing the request's settings."""
    tools = [{"description": None, "strict": True, **t} for t in body.get("tools") or []]
    return {
        "id": f"resp_{dice.hex(48)}",
        "object": "response",
        "created_at": dice.created,
        "status": "completed",
        "completed_at": dice.created + 1,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model", "gpt-4o-mini"),
        "output": output,
        "parallel_tool_calls": conv.parallel,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": tools,
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def _responses_events(response: JSON, output: list[JSON]) -> list[bytes]:
    """The SSE events streaming ``response``: created, each output item piece by piece, completed."""
    events: list[bytes] = []

    def emit(kind: str, **data: Any) -> None:
        payload = {"type": kind, "sequence_number": len(events), **data}
        events.append(f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode())

    pending = {**response, "status": "in_progress", "completed_at": None, "output": [], "usage": None}
    emit("response.created", response=pending)
    emit("response.in_progress", response=pending)
    for index, item in enumerate(output):
        if item["type"] == "function_call":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in _chunks(item["arguments"], 12):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        else:
            text = item["content"][0]["text"]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            emit("response.content_part.added", **where, part={**item["content"][0], "text": ""})
            for piece in _chunks(text):
                emit("response.output_text.delta", **where, delta=piece, logprobs=[])
            emit("response.output_text.done", **where, text=text, logprobs=[])
            emit("response.content_part.done", **where, part=item["content"][0])
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response)
    return events


# --------------------------------------------------------------------------- OpenAI embeddings and models


def _form(content_type: str, raw: bytes) -> JSON | None:
    """A multipart/form-data upload as ``{field: text}``, each file as ``{filename, size, sha256}``."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"content-type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw
    )
    if not message.is_multipart():
        return None
    out: JSON = {}
    for part in message.iter_parts():
        name = str(part.get_param("name", "", header="content-disposition"))
        payload = part.get_payload(decode=True)
        content = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        if filename is None:
            out[name] = content.decode("utf-8", "replace")
        else:
            digest = hashlib.sha256(content).hexdigest()
            out[name] = {"filename": filename, "size": len(content), "sha256": digest}
    return out


def _transcription(body: JSON, dice: _Dice) -> JSON:
    """``/v1/audio/transcriptions``: a sentence that depends on the uploaded file's bytes."""
    upload = body.get("file")
    if not isinstance(upload, dict):
        raise _ApiError(400, "You must provide a file to transcribe.", param="file")
    if not body.get("model"):
        raise _ApiError(400, "you must provide a model parameter", param="model")
    order = int(upload["sha256"][:6], 16) % 900000 + 100000
    opening = dice.rng.choice(["Hi,", "Hello,", "Hi there,"])
    return {"text": f"{opening} this is about order {order}: I was charged twice, please refund one charge."}


def _embeddings(body: JSON) -> JSON:
    raw = body.get("input")
    if raw is None or raw == "" or raw == []:
        raise _ApiError(400, "'$.input' is invalid. Please check the API reference.", param="input")
    model = str(body.get("model", "text-embedding-3-small"))
    inputs: list[Any] = [raw] if isinstance(raw, str) or (raw and isinstance(raw[0], int)) else list(raw)
    dimensions = int(body.get("dimensions") or (3072 if "large" in model else 1536))
    data = []
    tokens = 0
    for index, item in enumerate(inputs):
        text = item if isinstance(item, str) else json.dumps(item)
        tokens += len(item) if isinstance(item, list) else _count_tokens(text)
        vector = _embed(text, dimensions)
        encoded: Any = vector
        if body.get("encoding_format") == "base64":
            encoded = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


_OPENAI_MODELS = (
    "gpt-4o-mini",
    "gpt-4o",
    "gpt-4.1-mini",
    "o4-mini",
    "text-embedding-3-small",
    "text-embedding-3-large",
)
_ANTHROPIC_MODELS = ("claude-sonnet-4-6", "claude-opus-4-7", "claude-haiku-4-5")


def _models(anthropic: bool) -> JSON:
    data: list[JSON]
    if anthropic:
        data = [
            {
                "type": "model",
                "id": m,
                "display_name": m.replace("-", " ").title(),
                "created_at": "2025-09-29T00:00:00Z",
            }
            for m in _ANTHROPIC_MODELS
        ]
        return {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
    data = [
        {"id": m, "object": "model", "created": 1_715_367_049, "owned_by": "system"} for m in _OPENAI_MODELS
    ]
    return {"object": "list", "data": data}


# --------------------------------------------------------------------------- Anthropic messages


def _messages(body: JSON, dice: _Dice) -> tuple[JSON, list[bytes] | None]:
    conv = _anthropic_conversation(body)
    reply = _compose(conv, dice.salt, 0)
    content: list[JSON] = []
    if reply.tool_calls:
        content.append({"type": "text", "text": reply.preamble})
        for name, args in reply.tool_calls:
            content.append(
                {"type": "tool_use", "id": f"toolu_01{dice.token(22)}", "name": name, "input": args}
            )
    else:
        content.append({"type": "text", "text": reply.text or ""})
    prompt = _count_tokens(conv.all_text) + _count_tokens(json.dumps(body.get("tools") or [])) // 2 + 4
    completion = _reply_tokens(reply)
    stop_reason = "tool_use" if reply.tool_calls else "end_turn"
    message: JSON = {
        "id": f"msg_01{dice.token(22)}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-sonnet-4-6"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": completion,
            "service_tier": "standard",
        },
    }
    if not body.get("stream"):
        return message, None

    events: list[bytes] = []

    def emit(kind: str, **data: Any) -> None:
        payload = json.dumps({"type": kind, **data}, ensure_ascii=False)
        events.append(f"event: {kind}\ndata: {payload}\n\n".encode())

    start_usage = {**message["usage"], "output_tokens": 1}
    emit("message_start", message={**message, "content": [], "stop_reason": None, "usage": start_usage})
    for index, block in enumerate(content):
        if block["type"] == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            if index == 0:
                emit("ping")
            for piece in _chunks(block["text"]):
                emit("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        else:
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            for piece in ["", *_chunks(json.dumps(block["input"]), 12)]:
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
        emit("content_block_stop", index=index)
    emit(
        "message_delta",
        delta={"stop_reason": stop_reason, "stop_sequence": None},
        usage={"output_tokens": completion},
    )
    emit("message_stop")
    return {}, events


def _count_message_tokens(body: JSON) -> JSON:
    conv = _anthropic_conversation({"max_tokens": 1, **body})
    return {"input_tokens": _count_tokens(conv.all_text) + 4}


# --------------------------------------------------------------------------- errors


_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: (
        "invalid_request_error",
        None,
        "Invalid request: this error was requested from the cassette devserver.",
    ),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test."),
    403: (
        "invalid_request_error",
        "unsupported_country_region_territory",
        "Country, region, or territory not supported",
    ),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    429: (
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. "
        "Please try again in 0s.",
    ),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
_ANTHROPIC_ERRORS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _error_body(error: _ApiError, anthropic: bool, request_id: str) -> JSON:
    if anthropic:
        kind = _ANTHROPIC_ERRORS.get(
            error.status, "api_error" if error.status >= 500 else "invalid_request_error"
        )
        return {"type": "error", "error": {"type": kind, "message": error.message}, "request_id": request_id}
    kind, code, _ = _OPENAI_ERRORS.get(
        error.status, ("server_error" if error.status >= 500 else "invalid_request_error", None, "")
    )
    return {
        "error": {"message": error.message, "type": kind, "param": error.param, "code": error.code or code}
    }


def _requested_error(status: int, anthropic: bool) -> _ApiError:
    if anthropic:
        message = {429: "Number of requests has exceeded your rate limit.", 500: "Internal server error"}.get(
            status, f"Error {status} requested from the cassette devserver."
        )
    else:
        message = _OPENAI_ERRORS.get(
            status, ("", None, f"Error {status} requested from the cassette devserver.")
        )[2]
    return _ApiError(status, message)


# --------------------------------------------------------------------------- the HTTP server


class RecordedRequest(NamedTuple):
    """One request the server received: ``method, path, body = srv.requests[0]``."""

    method: str
    path: str
    body: Any


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], devserver: DevServer) -> None:
        self.devserver = devserver
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.add(request)
        try:
            super().finish_request(request, client_address)
        finally:
            with self.sockets_lock:
                self.open_sockets.discard(request)

    def close_connections(self) -> None:
        with self.sockets_lock:
            sockets = list(self.open_sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up mid-stream is normal for SDK tests (and stop() cuts connections); stay quiet.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, delayed ACKs add ~40 ms per call.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        if path.startswith("/model/"):  # Amazon Bedrock Runtime (boto3), in cassette.testing.bedrock
            self._send_bedrock(*self.server.devserver._bedrock(method, path, raw))
            return
        body: Any
        if headers.get("content-type", "").startswith("multipart/form-data"):
            body = _form(headers["content-type"], raw)
        else:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
        status, payload, events, extra = self.server.devserver._respond(method, path, body, headers, raw)
        try:
            if events is None:
                if path.startswith("/v1/messages") or "anthropic-version" in headers:
                    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
                else:  # OpenAI writes its JSON indented by two, with a final newline
                    data = (json.dumps(payload, ensure_ascii=False, indent=2) + "\n").encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(status)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            for event in events:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_bedrock(self, status: int, headers: JSON, body: bytes | list[bytes]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if isinstance(body, bytes):
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for message in body:  # one event-stream message per HTTP chunk
                self.wfile.write(b"%x\r\n%s\r\n" % (len(message), message))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class DevServer:
    """A local OpenAI- and Anthropic-compatible server on 127.0.0.1, in a background thread.

    Example::

        with DevServer(seed=1) as srv:
            OpenAI(base_url=srv.openai_base_url, api_key="sk-test").models.list()
    """

    def __init__(self, seed: int | None = None, port: int = 0) -> None:
        self.seeded = seed is not None
        self.seed: int = seed if seed is not None else random.SystemRandom().getrandbits(63)
        self.requests: list[RecordedRequest] = []
        self.system_fingerprint = (
            "fp_" + random.Random(f"fp:{self.seed}").getrandbits(40).to_bytes(5, "big").hex()
        )
        self._port = port
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self._fail_next: list[tuple[int, str | None]] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> DevServer:
        """Bind 127.0.0.1 (a free port unless one was given) and serve in a daemon thread."""
        if self._httpd is None:
            httpd = self._bind()
            # A short poll keeps stop() quick; serve_forever only checks for shutdown between polls.
            self._thread = threading.Thread(
                target=httpd.serve_forever, args=(0.02,), name="cassette-devserver", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every socket, open keep-alive ones too; later connections are refused."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if self._thread is not None:
            self._thread.join()

    def _bind(self) -> _HTTPServer:
        self._httpd = _HTTPServer(("127.0.0.1", self._port), self)
        self._port = self._httpd.server_address[1]
        return self._httpd

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- addresses

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` for ``openai.OpenAI``: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The ``base_url`` for ``anthropic.Anthropic`` (the SDK adds ``/v1`` itself)."""
        return self.url

    # -- failure injection

    def fail_next(self, count: int, status: int = 500, *, retry_after: str | None = None) -> None:
        """Answer the next ``count`` requests with ``status`` (retryable, no delay), then behave normally.

        ``retry_after`` sends that ``retry-after`` header (seconds, or an HTTP date) instead of
        ``retry-after-ms: 1``, as a real API or proxy may; the SDK then waits, or gives up, as it says.

        Example: ``srv.fail_next(2, 503)`` then a client with ``max_retries=2`` succeeds on its third try.
        """
        with self._lock:
            self._fail_next.extend([(status, retry_after)] * count)

    # -- answering

    def _respond(
        self, method: str, path: str, body: Any, headers: dict[str, str], raw: bytes
    ) -> tuple[int, JSON, list[bytes] | None, dict[str, str]]:
        digest = hashlib.sha256(f"{method} {path}\n".encode() + raw).hexdigest()
        with self._lock:
            self.requests.append(RecordedRequest(method, path, body))
            occurrence = self._seen[digest]
            self._seen[digest] += 1
            injected = self._fail_next.pop(0) if self._fail_next else None
        dice = _Dice(random.Random(f"{self.seed}:{digest}:{occurrence}"), self.seeded)
        gemini_call = gemini.route(method, path)
        if gemini_call is not None:  # Gemini's API, answered in its own shapes (cassette.testing.gemini)
            if injected is not None:
                return injected[0], gemini.error_body(injected[0]), None, {}
            return (*gemini.respond(*gemini_call, body, headers, dice, occurrence), {})
        anthropic = path.startswith("/v1/messages") or "anthropic-version" in headers
        request_id = f"req_{dice.hex(24)}" if not anthropic else f"req_01{dice.token(22)}"
        extra = {"x-request-id": request_id, "request-id": request_id}
        if not anthropic:
            extra["openai-processing-ms"] = str(dice.rng.randrange(150, 900))
        try:
            if injected is not None:
                status, retry_after = injected
                error = _ApiError(status, _requested_error(status, anthropic).message, retry=True)
                error.retry_after = retry_after
                raise error
            payload = body if isinstance(body, dict) else {}
            if method == "POST" and not isinstance(body, dict):
                raise _ApiError(400, "We could not parse the JSON body of your request.")
            self._raise_requested_error(payload, headers, anthropic, occurrence)
            payload_out, events = self._route(method, path, payload, dice, anthropic)
            return 200, payload_out, events, extra
        except _ApiError as error:
            if error.retry:
                extra.update({"x-should-retry": "true", "retry-after-ms": "1"})
            else:
                extra["x-should-retry"] = "false"
            if error.status == 429:
                extra["retry-after"] = "0"
            if error.retry_after is not None:  # fail_next(..., retry_after=...): that wait, and only it
                extra.pop("retry-after-ms", None)
                extra["retry-after"] = error.retry_after
            return error.status, _error_body(error, anthropic, request_id), None, extra
        except Exception as exc:
            # A bug here must not look like a dropped connection, which SDKs would retry.
            traceback.print_exc(file=sys.stderr)
            extra["x-should-retry"] = "false"
            failure = _ApiError(500, f"cassette devserver could not answer this request: {exc!r}")
            return 500, _error_body(failure, anthropic, request_id), None, extra

    def _bedrock(self, method: str, path: str, raw: bytes) -> tuple[int, JSON, bytes | list[bytes]]:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        digest = hashlib.sha256(f"{method} {path}\n".encode() + raw).hexdigest()
        with self._lock:
            self.requests.append(RecordedRequest(method, path, body))
            occurrence = self._seen[digest]
            self._seen[digest] += 1
        dice = _Dice(random.Random(f"{self.seed}:{digest}:{occurrence}"), self.seeded)
        return bedrock.respond(path, raw, lambda anthropic: _messages(anthropic, dice)[0], dice.hex(8))

    def _raise_requested_error(
        self, body: JSON, headers: dict[str, str], anthropic: bool, occurrence: int
    ) -> None:
        model = str(body.get("model", ""))
        wanted = headers.get("x-devserver-error", "")
        requested = re.fullmatch(r"error-(\d{3})", model)
        if requested:
            wanted = requested.group(1)
        if wanted.isdigit() and 400 <= int(wanted) <= 599:
            raise _requested_error(int(wanted), anthropic)
        flaky = re.fullmatch(r"flaky-(\d+)", model)
        if flaky and occurrence < int(flaky.group(1)):
            raise _ApiError(500, _requested_error(500, anthropic).message, retry=True)

    def _route(
        self, method: str, path: str, body: JSON, dice: _Dice, anthropic: bool
    ) -> tuple[JSON, list[bytes] | None]:
        if method == "GET" and path == "/v1/models":
            return _models(anthropic), None
        if method == "GET" and path.startswith("/v1/models/"):
            name = path.rsplit("/", 1)[1]
            listing = _models(anthropic)["data"]
            found = next((m for m in listing if m["id"] == name), None)
            if found is None:
                raise _ApiError(
                    404, f"The model '{name}' does not exist", param="model", code="model_not_found"
                )
            return found, None
        routes = {
            "/v1/chat/completions": lambda: _chat(body, dice, self.system_fingerprint),
            "/v1/responses": lambda: _responses(body, dice),
            "/v1/embeddings": lambda: (_embeddings(body), None),
            "/v1/audio/transcriptions": lambda: (_transcription(body, dice), None),
            "/v1/messages": lambda: _messages(body, dice),
            "/v1/messages/count_tokens": lambda: (_count_message_tokens(body), None),
        }
        # OpenAI-compatible base paths: Azure's deployments, Groq's /openai/v1, OpenRouter's /api/v1
        path = re.sub(r"^/(?:openai/deployments/[^/]+|openai/v1|api/v1)/", "/v1/", path)
        if method == "POST" and path in routes:
            return routes[path]()
        raise _ApiError(404, f"Invalid URL ({method} {path})")


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``python -m cassette.devserver --port 8765 [--seed N]``: serve until killed."""
    parser = argparse.ArgumentParser(prog="python -m cassette.devserver", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--seed", type=int, default=None, help="make every answer and id deterministic")
    args = parser.parse_args(argv)
    server = DevServer(seed=args.seed, port=args.port)
    httpd = server._bind()
    print(f"cassette devserver listening on {server.url}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        httpd.close_connections()
    return 0


if __name__ == "__main__":
    sys.exit(main())
