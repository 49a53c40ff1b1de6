"""Large cassettes, written through each tool's own API from the same logical calls.

Recording 10,000 calls live would take minutes per tool (and vcrpy's recording
is quadratic when it matches on the body), so the load workload builds its
cassettes directly: the request bytes are what the OpenAI SDK sends, the
responses what the devserver answers, and each tool writes them its own way
(ours through the provider plugins, the key function and ``save_cassette``;
vcrpy through a cassette's ``append``; cassetter through ``Cassette.record``;
cendor-cassette through its public ``promote`` of a JSONL trace).
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._data import MODEL, chat_calls

URL = "http://127.0.0.1:8765/v1/chat/completions"

# What the OpenAI SDK 3.x sends with a chat call (vcrpy and cassetter keep request headers).
SDK_HEADERS = {
    "accept": "application/json",
    "accept-encoding": "gzip, deflate",
    "authorization": "Bearer sk-bench-not-a-real-key",
    "connection": "keep-alive",
    "content-type": "application/json",
    "host": "127.0.0.1:8765",
    "user-agent": "OpenAI/Python 3.57.0",
    "x-stainless-arch": "x64",
    "x-stainless-async": "false",
    "x-stainless-lang": "python",
    "x-stainless-os": "Linux",
    "x-stainless-package-version": "3.57.0",
    "x-stainless-read-timeout": "600",
    "x-stainless-retry-count": "0",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.7",
}

_ANSWERS = [
    "Thanks for letting us know you were charged twice. We'll refund the duplicate charge to your original "
    "payment method within 5-7 business days.",
    "I'm sorry the item arrived damaged. I can send a free replacement with express shipping, or refund the "
    "full amount including shipping - which would you prefer?",
    "Your order is on its way: the carrier shows it at the regional depot, with delivery expected on "
    "Thursday. Here's a 10% voucher for the delay.",
    "You can return it within 30 days: print the prepaid label from your account page and drop the parcel at "
    "any post office; the refund follows within three days.",
]


@dataclass(frozen=True)
class Call:
    """One logical call: the request the SDK sends and the response the server gives."""

    messages: list[dict[str, str]]
    body: bytes
    response: dict[str, Any]
    response_headers: dict[str, str]

    @property
    def response_bytes(self) -> bytes:
        return json.dumps(self.response).encode()


def _token(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def calls(n: int) -> Iterator[Call]:
    """``n`` chat calls with unique user turns and devserver-shaped answers."""
    rng = random.Random(n)
    for i, messages in enumerate(chat_calls(n)):
        body = json.dumps({"model": MODEL, "stream": False, "messages": messages}, separators=(",", ":"))
        answer = _ANSWERS[i % len(_ANSWERS)]
        prompt_tokens = 130 + i % 20
        response = {
            "id": "chatcmpl-" + _token(rng, 29),
            "created": 1781586771 + i,
            "model": MODEL,
            "service_tier": "default",
            "system_fingerprint": "fp_51f21b453a",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer, "refusal": None, "annotations": []},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": 29,
                "total_tokens": prompt_tokens + 29,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
        }
        request_id = "req_" + "".join(rng.choice("0123456789abcdef") for _ in range(24))
        headers = {
            "server": "BaseHTTP/0.6 Python/3.11.7",
            "content-type": "application/json",
            "x-request-id": request_id,
            "request-id": request_id,
            "openai-processing-ms": str(rng.randrange(150, 900)),
        }
        yield Call(messages, body.encode(), response, headers)


# Writing 10,000 interactions through the peers' own writers takes minutes (YAML representers,
# dataclass conversion, redaction regexes per string). Each writer below therefore writes the first
# TEMPLATE calls through the tool's own API and builds the rest from those in the tool's own format.
TEMPLATE = 100


def write_ours(path: Path, store: Path, items: list[Call]) -> None:
    """Our cassette: keys made by the provider plugins exactly as the transport makes them.

    The first TEMPLATE requests go through ``normalize_http``; the rest reuse a template's
    normalised form with their own user turn (normalising only drops noise fields, so this is
    what ``normalize_http`` returns for them) and get their own key.
    """
    from cassette.core.canonical import request_key
    from cassette.core.model import Cassette, HttpRequest, Interaction
    from cassette.plugins.manager import normalize_http
    from cassette.store.cassettes import save_cassette

    headers = tuple((k, v) for k, v in SDK_HEADERS.items())
    interactions = []
    templates: list[dict[str, Any]] = []
    for seq, call in enumerate(items):
        if seq < TEMPLATE:
            kind, normalized = normalize_http(HttpRequest("POST", URL, headers, call.body))
            templates.append(normalized)
        else:
            kind = "llm"
            template = templates[seq % TEMPLATE]
            messages = [*template["messages"][:-1], dict(template["messages"][-1])]
            messages[-1]["content"] = call.messages[-1]["content"]
            normalized = {**template, "messages": messages}
        response = {"status": 200, "headers": dict(call.response_headers), "json": call.response}
        interactions.append(Interaction(seq, kind, request_key(normalized), normalized, response))
    save_cassette(Cassette(path=path, interactions=interactions, store=store), path, 512)


def _repeat_yaml(path: Path, count: int) -> None:
    """Repeat the interaction blocks of a YAML cassette (``- request:`` items) up to ``count``."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("- request:")]
    if not starts or len(starts) >= count:
        return
    head = "".join(lines[: starts[0]])
    end = next((i for i in range(starts[-1] + 1, len(lines)) if lines[i][:1] not in (" ", "-")), len(lines))
    blocks = ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], end])]
    tail = "".join(lines[end:])
    body = "".join(blocks[i % len(blocks)] for i in range(count))
    path.write_text(head + body + tail, encoding="utf-8")


def write_vcrpy(path: Path, items: list[Call]) -> None:
    """A vcrpy YAML cassette as its httpx stub records one (``cassette.append`` inside ``use_cassette``).

    Beyond TEMPLATE calls the interactions repeat: vcrpy does not index by request, so repeated
    interactions cost it exactly what distinct ones do to load.
    """
    import vcr
    from vcr.request import Request

    with vcr.VCR(record_mode="all").use_cassette(str(path)) as cas:
        for call in items[:TEMPLATE]:
            response = {
                "status": {"code": 200, "message": "OK"},
                "headers": {k: [v] for k, v in call.response_headers.items()},
                "body": {"string": call.response_bytes},
            }
            cas.append(Request("POST", URL, call.body, dict(SDK_HEADERS)), response)
    _repeat_yaml(path, len(items))


def write_cassetter(path: Path, items: list[Call]) -> None:
    """A cassetter YAML cassette through ``Cassette.record`` (as its interceptors do), repeated as vcrpy's."""
    import cassetter

    with cassetter.use_cassette(path, record_mode="all") as cas:
        for call in items[:TEMPLATE]:
            cas.record(
                method="POST",
                uri=URL,
                request_headers={k: [v] for k, v in SDK_HEADERS.items()},
                request_body=call.body,
                status=200,
                response_headers={k: [v] for k, v in call.response_headers.items()},
                response_body=call.response_bytes,
            )
    _repeat_yaml(path, len(items))


def write_cendor(path: Path, items: list[Call]) -> None:
    """A cendor-cassette file: TEMPLATE entries through its public ``promote``, the rest in its format.

    Its recorder stores ``model_dump()`` of the SDK's ``ChatCompletion`` (every optional field, as
    ``null``) and redacts on write, as ``promote`` does by default. Entries past the templates take
    a template's stored response and their own request, hashed with cendor's own ``_hash``; the
    file is laid out as cendor writes it (``json.dumps(indent=2, ensure_ascii=False)``).
    """
    import copy

    import orjson
    from cendor import cassette as cendor_cassette
    from cendor.cassette import promote

    try:
        from openai.types.chat import ChatCompletion

        def dump(response: dict[str, Any]) -> Any:
            return ChatCompletion.model_validate(response).model_dump()
    except ImportError:  # pragma: no cover - openai is a dependency of ours

        def dump(response: dict[str, Any]) -> Any:
            return response

    def request(call: Call) -> dict[str, Any]:
        return {
            "kind": "llm",
            "provider": "openai",
            "model": MODEL,
            "messages": call.messages,
            "stream": False,
        }

    trace = path.with_suffix(".trace.jsonl")
    with open(trace, "w", encoding="utf-8") as fh:
        for call in items[:TEMPLATE]:
            fh.write(
                json.dumps({"kind": "llm", "request": request(call), "response": dump(call.response)}) + "\n"
            )
    promote(str(trace), str(path))
    trace.unlink()
    if len(items) <= TEMPLATE:
        return
    payload = json.loads(path.read_text(encoding="utf-8"))
    templates = payload["entries"]
    entries = list(templates)
    for seq in range(len(templates), len(items)):
        entry = copy.deepcopy(templates[seq % len(templates)])
        req = request(items[seq])
        entry["seq"] = seq
        entry["request"] = req
        entry["request_hash"] = cendor_cassette._hash(req)
        entries.append(entry)
    payload["entries"] = entries
    path.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
